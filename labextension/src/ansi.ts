/**
 * One captured log line as a terminal would show it, as styled spans: the sidebar's renderer.
 * The status panel's (`fray_jupyter/views/ansi.py`) follows the same rules, and both run the same
 * test vectors (`tests/data/ansi_vectors.json`); see that module for the rules in full.
 *
 * In short: the line is played on a one-line terminal (`terminal.ts`); `http(s)` URLs become links;
 * at most `MAX_LINE_CHARS` columns are kept. Pure: no DOM (`logview.ts` turns spans into nodes, text
 * only through `textContent`).
 */
import { MAX_LINE_CHARS, PLAIN, sameLook, sameStyle, Terminal, URL_PATTERN } from './terminal';
import type { Colour, ICell, IStyle } from './terminal';

export { MAX_LINE_CHARS } from './terminal';
export const CUT_NOTE = ` … (cut at ${MAX_LINE_CHARS} characters)`;
const URL = new RegExp(URL_PATTERN, 'g');
const URL_TAIL = /[.,;:!?]+$/;

/** A run of characters in one style: text, class names (without prefix), inline CSS, link. */
export interface ISpan {
  text: string;
  classes: string[];
  style: string;
  href: string;
}

const LOOKS = new WeakMap<IStyle, [string[], string]>();

/** The class names and inline CSS of `style` (worked out once per style). */
function classesAndCss(style: IStyle): [string[], string] {
  const known = LOOKS.get(style);
  if (known) {
    return known;
  }
  const [fg, bg] = style.inverse ? [style.bg, style.fg] : [style.fg, style.bg];
  const classes: string[] = [];
  const css: string[] = [];
  const parts: [Colour, string, string, string][] = [
    [fg, 'fg', 'fg-reverse', 'color'],
    [bg, 'bg', 'bg-reverse', 'background-color']
  ];
  for (const [colour, part, reverse, prop] of parts) {
    if (typeof colour === 'number') {
      classes.push(`${part}-${colour}`);
    } else if (typeof colour === 'string') {
      css.push(`${prop}:${colour}`);
    } else if (style.inverse) {
      classes.push(reverse);
    }
  }
  for (const name of ['bold', 'dim', 'italic', 'underline', 'strike'] as const) {
    if (style[name]) {
      classes.push(name);
    }
  }
  const looks: [string[], string] = [classes, css.join(';')];
  LOOKS.set(style, looks);
  return looks;
}

/** The spans of one terminal line's cells: trailing unstyled blanks dropped, bare URLs linked, a
 * `more` span when characters were cut. */
export function cellsSpans(cells: readonly ICell[], cut: boolean): ISpan[] {
  let count = cells.length;
  while (count && cells[count - 1].char === ' ' && sameStyle(cells[count - 1].style, PLAIN)) {
    count--;
  }
  let plain = '';
  for (let index = 0; index < count; index++) {
    plain += cells[index].char;
  }
  const links: string[] = cells.slice(0, count).map(cell => cell.style.link);
  if (plain.includes('http')) {
    const cellAt: number[] = []; // UTF-16 offset in `plain` -> cell index
    for (let index = 0; index < count; index++) {
      for (let unit = 0; unit < cells[index].char.length; unit++) {
        cellAt.push(index);
      }
    }
    for (const found of plain.matchAll(URL)) {
      const url = found[0].replace(URL_TAIL, '');
      const first = cellAt[found.index ?? 0];
      const length = Array.from(url).length;
      for (let index = first; index < first + length; index++) {
        links[index] ||= url;
      }
    }
  }
  const spans: ISpan[] = [];
  let start = 0;
  let text = count ? cells[0].char : '';
  for (let index = 1; index <= count; index++) {
    const style = cells[start].style;
    if (index < count && links[index] === links[start] && sameLook(cells[index].style, style)) {
      text += cells[index].char;
      continue;
    }
    const [classes, css] = classesAndCss(style);
    spans.push({ text, classes, style: css, href: links[start] });
    start = index;
    text = index < count ? cells[index].char : '';
  }
  if (cut) {
    spans.push({ text: CUT_NOTE, classes: ['more'], style: '', href: '' });
  }
  return spans;
}

/** The spans a terminal shows for one log line, played on a one-line terminal. */
export function lineSpans(text: string): ISpan[] {
  const terminal = new Terminal(1);
  terminal.play(text);
  const line = terminal.line(terminal.row);
  return cellsSpans(line.cells, line.cut);
}
