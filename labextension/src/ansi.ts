/**
 * One captured log line as a terminal would show it, as styled spans: the sidebar's renderer.
 * The status panel's (`fray_jupyter/views/ansi.py`) follows the same rules, and both run the same
 * test vectors (`tests/data/ansi_vectors.json`); see that module for the rules in full.
 *
 * In short: the line is played on a one-line terminal by code point (`\r`, `\b`, CSI K/G/C/D
 * move and erase; SGR sets colours and attributes; OSC 8 sets a link); every other escape and
 * control character is dropped; `http(s)` URLs become links; at most `MAX_LINE_CHARS` columns are
 * kept. Pure: no DOM (`logview.ts` turns spans into nodes, text only through `textContent`).
 */

export const MAX_LINE_CHARS = 4000;
export const CUT_NOTE = ` … (cut at ${MAX_LINE_CHARS} characters)`;
/** A bare web address, as the panel's `views/links.py` `BARE_URL`, then its trailing punctuation cut. */
const URL_PATTERN = String.raw`https?:\/\/[^\s<>"'()[\]]+`;
const URL = new RegExp(URL_PATTERN, 'g');
/** An OSC 8 link is kept only when its target is one whole such address. */
const URL_FULL = new RegExp(`^${URL_PATTERN}$`);
const URL_TAIL = /[.,;:!?]+$/;
/** The 6 levels of each channel in the 256-colour cube (indices 16-231). */
const CUBE = [0, 95, 135, 175, 215, 255];

/** A palette index 0-15, a `#rrggbb` string, or null for the default. */
type Colour = number | string | null;

interface IStyle {
  fg: Colour;
  bg: Colour;
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
  inverse: boolean;
  strike: boolean;
  link: string;
}

/** A run of characters in one style: text, class names (without prefix), inline CSS, link. */
export interface ISpan {
  text: string;
  classes: string[];
  style: string;
  href: string;
}

const PLAIN: IStyle = Object.freeze({
  fg: null,
  bg: null,
  bold: false,
  dim: false,
  italic: false,
  underline: false,
  inverse: false,
  strike: false,
  link: ''
});

type Flag = 'bold' | 'dim' | 'italic' | 'underline' | 'inverse' | 'strike';
const FLAGS: Record<number, [Flag, boolean]> = {
  1: ['bold', true],
  2: ['dim', true],
  3: ['italic', true],
  4: ['underline', true],
  7: ['inverse', true],
  9: ['strike', true],
  21: ['underline', true],
  23: ['italic', false],
  24: ['underline', false],
  27: ['inverse', false],
  29: ['strike', false]
};

function sameStyle(a: IStyle, b: IStyle): boolean {
  return (
    a === b ||
    (a.fg === b.fg &&
      a.bg === b.bg &&
      a.bold === b.bold &&
      a.dim === b.dim &&
      a.italic === b.italic &&
      a.underline === b.underline &&
      a.inverse === b.inverse &&
      a.strike === b.strike &&
      a.link === b.link)
  );
}

function hex(value: number): string {
  return value.toString(16).padStart(2, '0');
}

function paletteOrHex(index: number): Colour {
  if (index < 16) {
    return index;
  }
  if (index < 232) {
    const i = index - 16;
    return '#' + [Math.floor(i / 36), Math.floor(i / 6) % 6, i % 6].map(level => hex(CUBE[level])).join('');
  }
  const gray = hex(8 + 10 * (index - 232));
  return `#${gray}${gray}${gray}`;
}

/** The colour a 38/48 at `params[at]` names (false: none valid), and how many parameters it took. */
function extended(params: (number | null)[][], at: number): [Colour | false, number] {
  const head = params[at];
  let kind: number | null;
  let rest: (number | null)[];
  let used: number;
  if (head.length > 1) {
    kind = head[1];
    rest = head.slice(2);
    used = 1;
    if (kind === 2 && rest.length === 4) {
      rest = rest.slice(1);
    }
  } else {
    kind = at + 1 < params.length ? params[at + 1][0] : null;
    const count = kind === 5 ? 1 : kind === 2 ? 3 : 0;
    rest = params.slice(at + 2, at + 2 + count).map(p => p[0]);
    used = 2 + rest.length;
  }
  const values = rest.filter((value): value is number => value !== null);
  if (kind === 5 && values.length === 1 && values[0] <= 255) {
    return [paletteOrHex(values[0]), used];
  }
  if (kind === 2 && values.length === 3 && rest.length === 3 && values.every(value => value <= 255)) {
    return ['#' + values.map(hex).join(''), used];
  }
  return [false, used];
}

function sgr(start: IStyle, text: string): IStyle {
  const params = text.split(';').map(field => field.split(':').map(part => (/^\d+$/.test(part) ? Number(part) : null)));
  let style = start;
  let at = 0;
  while (at < params.length) {
    const code = params[at][0];
    let used = 1;
    if (code === null || code === 0) {
      style = { ...PLAIN, link: style.link };
    } else if (code in FLAGS) {
      const [name, flagOn] = FLAGS[code];
      const on = code === 4 && params[at].length > 1 ? params[at][1] !== 0 : flagOn;
      style = { ...style, [name]: on };
    } else if (code === 22) {
      style = { ...style, bold: false, dim: false };
    } else if ((code >= 30 && code <= 37) || (code >= 90 && code <= 97)) {
      style = { ...style, fg: code < 90 ? code - 30 : code - 82 };
    } else if ((code >= 40 && code <= 47) || (code >= 100 && code <= 107)) {
      style = { ...style, bg: code < 100 ? code - 40 : code - 92 };
    } else if (code === 39) {
      style = { ...style, fg: null };
    } else if (code === 49) {
      style = { ...style, bg: null };
    } else if (code === 38 || code === 48) {
      const [colour, took] = extended(params, at);
      used = took;
      if (colour !== false) {
        style = code === 38 ? { ...style, fg: colour } : { ...style, bg: colour };
      }
    }
    at += used;
  }
  return style;
}

/** The target of an OSC 8 body `8;<params>;<uri>` when it is an http(s) URL, else ''. */
function linkTarget(body: string): string {
  const parts = body.split(';');
  const uri = parts.length >= 3 ? parts.slice(2).join(';') : '';
  return URL_FULL.test(uri) ? uri : '';
}

interface ICell {
  char: string;
  style: IStyle;
}

/** A one-line terminal: cells of (character, style) and a cursor. */
class Line {
  cells: ICell[] = [];
  cursor = 0;
  cut = false;

  write(char: string, style: IStyle): void {
    if (this.cursor >= MAX_LINE_CHARS) {
      this.cut = true;
    } else {
      while (this.cells.length < this.cursor) {
        this.cells.push({ char: ' ', style: PLAIN });
      }
      this.cells[this.cursor] = { char, style };
    }
    this.cursor += 1;
  }

  erase(mode: number): void {
    if (mode === 0) {
      this.cells.length = Math.min(this.cells.length, this.cursor);
    } else if (mode === 1) {
      const blank = Math.min(this.cursor + 1, this.cells.length);
      for (let i = 0; i < blank; i++) {
        this.cells[i] = { char: ' ', style: PLAIN };
      }
    } else if (mode === 2) {
      this.cells = [];
    }
  }

  move(column: number): void {
    this.cursor = Math.max(0, Math.min(column, MAX_LINE_CHARS));
  }
}

function firstNumber(params: string, fallback: number): number {
  const first = params.split(';', 1)[0];
  return /^\d+$/.test(first) && Number(first) > 0 ? Number(first) : fallback;
}

const between = (char: string, low: number, high: number): boolean => {
  const code = char.codePointAt(0) ?? -1;
  return code >= low && code <= high;
};

/** Where the control string starting at `at` ends: [end of its body, index after its terminator]. */
function stringEnd(chars: string[], at: number): [number, number] {
  for (let index = at; index < chars.length; index++) {
    if (chars[index] === '\x07') {
      return [index, index + 1];
    }
    if (chars[index] === '\x1b' && chars[index + 1] === '\\') {
      return [index, index + 2];
    }
  }
  return [chars.length, chars.length];
}

/** Run `text` on a one-line terminal. */
function play(text: string): Line {
  const chars = Array.from(text); // by code point, as Python indexes strings
  const line = new Line();
  const end = chars.length;
  let style = PLAIN;
  let at = 0;
  while (at < end) {
    const char = chars[at++];
    if (char === '\x1b') {
      if (at >= end) {
        break;
      }
      const kind = chars[at++];
      if (kind === '[') {
        const start = at;
        while (at < end && between(chars[at], 0x30, 0x3f)) {
          at++;
        }
        const params = chars.slice(start, at).join('');
        while (at < end && between(chars[at], 0x20, 0x2f)) {
          at++;
        }
        if (at >= end) {
          break;
        }
        const final = chars[at++];
        if (params && '<=>?'.includes(params[0])) {
          continue;
        }
        if (final === 'm' && at - start === params.length + 1) {
          style = sgr(style, params);
        } else if (final === 'K') {
          line.erase(['0', '1', '2'].includes(params) ? Number(params) : 0);
        } else if (final === 'G') {
          line.move(firstNumber(params, 1) - 1);
        } else if (final === 'C') {
          line.move(line.cursor + firstNumber(params, 1));
        } else if (final === 'D') {
          line.move(line.cursor - firstNumber(params, 1));
        }
      } else if (']PX^_'.includes(kind)) {
        const [bodyEnd, after] = stringEnd(chars, at);
        if (kind === ']' && chars[at] === '8' && chars[at + 1] === ';') {
          style = { ...style, link: linkTarget(chars.slice(at, bodyEnd).join('')) };
        }
        at = after;
      } else if (between(kind, 0x20, 0x2f)) {
        while (at < end && between(chars[at], 0x20, 0x2f)) {
          at++;
        }
        at++;
      }
    } else if (char === '\r') {
      line.move(0);
    } else if (char === '\b') {
      line.move(line.cursor - 1);
    } else if (char === '\t' || !(between(char, 0, 0x1f) || between(char, 0x7f, 0x9f))) {
      line.write(char, style);
    }
  }
  return line;
}

function classesAndCss(style: IStyle): [string[], string] {
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
  return [classes, css.join(';')];
}

/** The spans a terminal shows for one log line. */
export function lineSpans(text: string): ISpan[] {
  const line = play(text);
  const cells = line.cells;
  while (cells.length && cells[cells.length - 1].char === ' ' && sameStyle(cells[cells.length - 1].style, PLAIN)) {
    cells.pop();
  }
  const plain = cells.map(cell => cell.char).join('');
  const cellAt: number[] = []; // UTF-16 offset in `plain` -> cell index
  cells.forEach((cell, index) => {
    for (let unit = 0; unit < cell.char.length; unit++) {
      cellAt.push(index);
    }
  });
  for (const found of plain.matchAll(URL)) {
    const url = found[0].replace(URL_TAIL, '');
    const first = cellAt[found.index ?? 0];
    const count = Array.from(url).length;
    for (let index = first; index < first + count; index++) {
      if (!cells[index].style.link) {
        cells[index] = { char: cells[index].char, style: { ...cells[index].style, link: url } };
      }
    }
  }
  const spans: ISpan[] = [];
  let start = 0;
  for (let index = 1; index <= cells.length; index++) {
    if (index === cells.length || !sameStyle(cells[index].style, cells[start].style)) {
      const style = cells[start].style;
      const [classes, css] = classesAndCss(style);
      spans.push({
        text: cells
          .slice(start, index)
          .map(cell => cell.char)
          .join(''),
        classes,
        style: css,
        href: style.link
      });
      start = index;
    }
  }
  if (line.cut) {
    spans.push({ text: CUT_NOTE, classes: ['more'], style: '', href: '' });
  }
  return spans;
}

