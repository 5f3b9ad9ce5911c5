/**
 * The ANSI looks of `ansi.ts`'s spans as JupyterLab's own output classes (`@jupyterlab/rendermime`'s
 * `.jp-RenderedText pre .ansi-*`), so the sidebar's colours are JupyterLab's and follow its theme.
 * Pure, unit-tested. Rule: palette colour `fg-N`/`bg-N` is `ansi-<name>-fg`/`-bg` for N < 8 and
 * `ansi-<name>-intense-fg`/`-bg` for the bright forms (8–15); reverse video is
 * `ansi-default-inverse-*`; bold and underline are `ansi-bold` and `ansi-underline`; other looks
 * (dim, italic, strike, a cut line's note) have no JupyterLab class ('').
 * A span with these classes shows them only inside an element of class `jp-RenderedText` and a `pre`.
 */

/** JupyterLab's names of the eight palette colours, in ANSI order. */
const NAMES = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'];
const PALETTE_CLASS = /^(fg|bg)-(\d+)$/;
const OTHERS: Readonly<Record<string, string>> = {
  'fg-reverse': 'ansi-default-inverse-fg',
  'bg-reverse': 'ansi-default-inverse-bg',
  bold: 'ansi-bold',
  underline: 'ansi-underline'
};

/** JupyterLab's class for one of `ansi.ts`'s class names (without prefix); '' when it has none. */
export function jupyterLabClass(name: string): string {
  const palette = PALETTE_CLASS.exec(name);
  if (palette) {
    const index = Number(palette[2]);
    return index < 16 ? `ansi-${NAMES[index % 8]}${index >= 8 ? '-intense' : ''}-${palette[1]}` : '';
  }
  return OTHERS[name] ?? '';
}
