/**
 * A terminal with scrollback, as a log viewer needs one: the sidebar's. The status panel's
 * `fray_jupyter/views/terminal.py` follows the same rules (both run `tests/data/ansi_vectors.json`
 * and a randomised comparison, `tests/test_labextension.py`); see that module for the rules in full.
 *
 * In short: the screen is the `height` lines from `top`, every line above it final; text is written
 * at a cursor that CSI A-H/d/E/F, `\r`, `\b`, `\t`, ESC D/M and line feeds move; CSI K/J/X erase; CSI s/u
 * and ESC 7/8 save and restore the cursor; SGR sets colours and attributes, OSC 8 a link; every other
 * escape and control character is dropped. Lines never wrap and keep at most `MAX_LINE_CHARS`
 * columns. One code point is one column. Pure: no DOM.
 */

export const MAX_LINE_CHARS = 4000;
/** Screen lines of a stream's terminal (as `views/terminal.py` `LIVE_LINES`). */
export const LIVE_LINES = 50;
const TAB = 8;
/** The blanks that end a URL (a character-class body): every character Python's and JavaScript's
 * `\s` match, spelled out as the panel's `views/links.py` `SPACES` (the two `\s` differ). */
export const SPACES = String.raw`\t-\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff`;
/** A bare web address, as the panel's `views/links.py` `BARE_URL`, then its trailing punctuation cut. */
export const URL_PATTERN = String.raw`https?:\/\/[^${SPACES}<>"'()[\]]+`;
/** An OSC 8 link is kept only when its target is one whole such address. */
const URL_FULL = new RegExp(`^${URL_PATTERN}$`);
/** The 6 levels of each channel in the 256-colour cube (indices 16-231). */
const CUBE = [0, 95, 135, 175, 215, 255];

/** A palette index 0-15, a `#rrggbb` string, or null for the default. */
export type Colour = number | string | null;

export interface IStyle {
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

export const PLAIN: IStyle = Object.freeze({
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

/** Whether two styles look the same, their links aside. */
export function sameLook(a: IStyle, b: IStyle): boolean {
  return (
    a === b ||
    (a.fg === b.fg &&
      a.bg === b.bg &&
      a.bold === b.bold &&
      a.dim === b.dim &&
      a.italic === b.italic &&
      a.underline === b.underline &&
      a.inverse === b.inverse &&
      a.strike === b.strike)
  );
}

export function sameStyle(a: IStyle, b: IStyle): boolean {
  return a === b || (a.link === b.link && sameLook(a, b));
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

function firstNumber(params: string, fallback: number): number {
  const first = params.split(';', 1)[0];
  return /^\d+$/.test(first) && Number(first) > 0 ? Number(first) : fallback;
}

const between = (char: string, low: number, high: number): boolean => {
  const code = char.codePointAt(0) ?? -1;
  return code >= low && code <= high;
};

/** Whether the UTF-16 unit `code` starts a character written as it is (no control character). */
const printable = (code: number): boolean => code >= 0x20 && code !== 0x7f && !(code >= 0x80 && code <= 0x9f);

/** The code point of `text` starting at UTF-16 index `at` (a lone surrogate is one). */
function charAt(text: string, at: number): string {
  const code = text.charCodeAt(at);
  return code >= 0xd800 && code <= 0xdbff && at + 1 < text.length && (text.charCodeAt(at + 1) & 0xfc00) === 0xdc00
    ? text.slice(at, at + 2)
    : text[at];
}

/** Where the control string starting at `at` ends: [end of its body, index after its terminator]. */
function stringEnd(text: string, at: number): [number, number] {
  for (let index = at; index < text.length; index++) {
    if (text[index] === '\x07') {
      return [index, index + 1];
    }
    if (text[index] === '\x1b' && text[index + 1] === '\\') {
      return [index, index + 2];
    }
  }
  return [text.length, text.length];
}

export interface ICell {
  char: string;
  style: IStyle;
}

export const BLANK: ICell = Object.freeze({ char: ' ', style: PLAIN });

/** The cells of one style, made once each: lines share them and never change one. */
class Cells {
  constructor(readonly style: IStyle) {}
  private _ascii: (ICell | undefined)[] = [];
  private _other = new Map<string, ICell>();

  of(char: string): ICell {
    const code = char.length === 1 ? char.charCodeAt(0) : 0x10000;
    let cell = code < 0x80 ? this._ascii[code] : this._other.get(char);
    if (!cell) {
      cell = Object.freeze({ char, style: this.style });
      if (code < 0x80) {
        this._ascii[code] = cell;
      } else {
        this._other.set(char, cell);
      }
    }
    return cell;
  }
}

const CELLS = new WeakMap<IStyle, Cells>();

function cellsOf(style: IStyle): Cells {
  let cells = CELLS.get(style);
  if (!cells) {
    cells = new Cells(style);
    CELLS.set(style, cells);
  }
  return cells;
}
cellsOf(PLAIN).of(' ');

/** One terminal line: its cells, whether a character was cut at its end, and what the caller
 * said about the last write into it (`Terminal.mark`). */
export class Line {
  constructor(public mark: unknown = null) {}
  cells: ICell[] = [];
  cut = false;
  /** The caller's, to keep what it worked out of the line (`logrows.ts`). */
  memo: unknown = null;
}

/** A terminal of `height` screen lines above scrollback. */
export class Terminal {
  constructor(readonly height: number = LIVE_LINES) {}

  /** Every line from `dropped` on. */
  lines: Line[] = [new Line()];
  dropped = 0;
  top = 0;
  row = 0;
  column = 0;
  style: IStyle = PLAIN;
  saved: [number, number, IStyle] = [0, 0, PLAIN];
  /** Set on every line written to (or erased) from now on. */
  mark: unknown = null;

  /** The line at absolute `row` (made, blank, when the screen had not reached it). */
  line(row: number): Line {
    while (this.lines.length + this.dropped <= row) {
      this.lines.push(new Line(this.mark));
    }
    return this.lines[row - this.dropped];
  }

  /** Every line held, oldest first, without the blank ones below the cursor. */
  shown(): Line[] {
    let end = this.lines.length;
    while (end > 0 && !this.lines[end - 1].cells.length && end - 1 + this.dropped > this.row) {
      end--;
    }
    return this.lines.slice(0, end);
  }

  /** Forget the oldest `count` lines, final ones only. */
  drop(count: number): void {
    const n = Math.max(0, Math.min(count, this.top - this.dropped));
    this.lines.splice(0, n);
    this.dropped += n;
  }

  carriageReturn(): void {
    this.column = 0;
  }

  /** Down one line, scrolling when the cursor is on the screen's last line. */
  lineFeed(): void {
    this.row += 1;
    this.top = Math.max(this.top, this.row - this.height + 1);
    this.line(this.row);
  }

  private _reverseIndex(): void {
    if (this.row > this.top) {
      this.row -= 1;
      return;
    }
    const bottom = this.top + this.height - 1;
    this.line(bottom);
    this.lines.splice(bottom - this.dropped, 1);
    this.lines.splice(this.top - this.dropped, 0, new Line(this.mark));
  }

  private _toRow(row: number): void {
    this.row = Math.max(this.top, Math.min(row, this.top + this.height - 1));
    this.line(this.row);
  }

  private _toColumn(column: number): void {
    this.column = Math.max(0, Math.min(column, MAX_LINE_CHARS));
  }

  /** Write the printable characters of `text` from `from` to `to` at the cursor. */
  private _write(text: string, from: number, to: number): void {
    const line = this.line(this.row);
    line.mark = this.mark;
    const cells = line.cells;
    const made = cellsOf(this.style);
    for (let at = from; at < to;) {
      if (this.column >= MAX_LINE_CHARS) {
        line.cut = true;
        return;
      }
      const char = charAt(text, at);
      at += char.length;
      while (cells.length < this.column) {
        cells.push(BLANK);
      }
      cells[this.column] = made.of(char);
      this.column += 1;
    }
  }

  private _eraseLine(row: number, mode: number, column: number): void {
    const line = this.line(row);
    line.mark = this.mark;
    if (mode === 0) {
      line.cells.length = Math.min(line.cells.length, column);
      line.cut = false;
    } else if (mode === 1) {
      const blank = Math.min(column + 1, line.cells.length);
      for (let i = 0; i < blank; i++) {
        line.cells[i] = BLANK;
      }
    } else {
      line.cells = [];
      line.cut = false;
    }
  }

  private _eraseScreen(mode: number): void {
    const bottom = Math.min(this.top + this.height - 1, this.lines.length + this.dropped - 1);
    let from: number;
    let to: number;
    if (mode === 0) {
      this._eraseLine(this.row, 0, this.column);
      [from, to] = [this.row + 1, bottom];
    } else if (mode === 1) {
      this._eraseLine(this.row, 1, this.column);
      [from, to] = [this.top, this.row - 1];
    } else {
      [from, to] = [this.top, bottom];
    }
    for (let row = from; row <= to; row++) {
      this._eraseLine(row, 2, 0);
    }
  }

  private _eraseChars(count: number): void {
    const line = this.line(this.row);
    line.mark = this.mark;
    const end = Math.min(this.column + count, line.cells.length);
    for (let i = this.column; i < end; i++) {
      line.cells[i] = BLANK;
    }
  }

  private _csi(params: string, final: string): void {
    const count = firstNumber(params, 1);
    if (final === 'm') {
      this.style = sgr(this.style, params);
    } else if (final === 'A') {
      this._toRow(this.row - count);
    } else if (final === 'B') {
      this._toRow(this.row + count);
    } else if (final === 'C') {
      this._toColumn(this.column + count);
    } else if (final === 'D') {
      this._toColumn(this.column - count);
    } else if (final === 'E' || final === 'F') {
      this._toRow(this.row + (final === 'E' ? count : -count));
      this.column = 0;
    } else if (final === 'G') {
      this._toColumn(count - 1);
    } else if (final === 'H' || final === 'f') {
      const parts = params.split(';');
      this._toRow(this.top + firstNumber(parts[0], 1) - 1);
      this._toColumn(firstNumber(parts.length > 1 ? parts[1] : '', 1) - 1);
    } else if (final === 'd') {
      this._toRow(this.top + count - 1);
    } else if (final === 'J' || final === 'K') {
      const mode = ['0', '1', '2', '3'].includes(params) ? Number(params) : 0;
      if (final === 'K') {
        this._eraseLine(this.row, Math.min(mode, 2), this.column);
      } else {
        this._eraseScreen(mode);
      }
    } else if (final === 'X') {
      this._eraseChars(count);
    } else if (final === 's') {
      this.saved = [this.row - this.top, this.column, this.style];
    } else if (final === 'u') {
      this._restore();
    }
  }

  private _restore(): void {
    const [row, column, style] = this.saved;
    this.style = style;
    this._toRow(this.top + row);
    this._toColumn(column);
  }

  /** Run `text` at the cursor (by code point, as Python indexes strings). */
  play(text: string): void {
    const end = text.length;
    let at = 0;
    while (at < end) {
      if (printable(text.charCodeAt(at))) {
        const from = at;
        while (at < end && printable(text.charCodeAt(at))) {
          at++;
        }
        this._write(text, from, at);
        continue;
      }
      const char = text[at++];
      if (char === '\x1b') {
        if (at >= end) {
          break;
        }
        const kind = charAt(text, at);
        at += kind.length;
        if (kind === '[') {
          const start = at;
          while (at < end && between(text[at], 0x30, 0x3f)) {
            at++;
          }
          const params = text.slice(start, at);
          const paramsEnd = at;
          while (at < end && between(text[at], 0x20, 0x2f)) {
            at++;
          }
          if (at >= end) {
            break;
          }
          const final = charAt(text, at);
          const plain = at === paramsEnd;
          at += final.length;
          if (!(params && '<=>?'.includes(params[0])) && plain) {
            this._csi(params, final);
          }
        } else if (']PX^_'.includes(kind)) {
          const [bodyEnd, after] = stringEnd(text, at);
          if (kind === ']' && text[at] === '8' && text[at + 1] === ';') {
            this.style = { ...this.style, link: linkTarget(text.slice(at, bodyEnd)) };
          }
          at = after;
        } else if (between(kind, 0x20, 0x2f)) {
          while (at < end && between(text[at], 0x20, 0x2f)) {
            at++;
          }
          if (at < end) {
            at += charAt(text, at).length;
          }
        } else if (kind === '7') {
          this.saved = [this.row - this.top, this.column, this.style];
        } else if (kind === '8') {
          this._restore();
        } else if (kind === 'D' || kind === 'E') {
          this.lineFeed();
          if (kind === 'E') {
            this.column = 0;
          }
        } else if (kind === 'M') {
          this._reverseIndex();
        }
      } else if (char === '\r') {
        this.column = 0;
      } else if (char === '\b') {
        this._toColumn(this.column - 1);
      } else if (char === '\t') {
        this._toColumn((Math.floor(this.column / TAB) + 1) * TAB);
      } else if (char === '\x0b' || char === '\x0c') {
        this.lineFeed();
      }
    }
  }
}
