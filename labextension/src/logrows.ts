/**
 * Log rows as a researcher reads them, and the window of them the sidebar holds. The status
 * panel's `fray_jupyter/views/logtail.py` follows the same rules and both run the same vectors
 * (`tests/data/ansi_vectors.json`) and a randomised comparison (`tests/test_labextension.py`); see
 * that module for the rules in full.
 *
 * In short: the rows of each task attempt and stream are played on a terminal of their own
 * (`terminal.ts`); each row starts on a new line, except a redraw (a tqdm frame, or a row starting
 * by erasing its line, or by blanking it and moving up) onto a blank line or one a redraw wrote,
 * or always when it then moves up (rich going back over its frame); a blank row on a redraw's line
 * after a clear clears it; a blank row right after a frame waits for the next row (before a redraw
 * or blank row it was a newline, else the bar's clear). Lines are ordered by the row that last
 * wrote them, never above a line above them on their terminal (`order`). A traceback ends at the
 * first later line of its stream that is not indented.
 *
 * `LogWindow` holds the shown lines of at most `maxRows` rows of one log, in `order`, with whether
 * they reach the first row there is (`atStart`) and the newest (`atEnd`). It shows the rows it
 * holds as one play from the first of them, as the panel does: newer pages are played after the
 * rows held; an older page is played again with the rows held after it (at most a page of them:
 * the rest are dropped, to be read again when scrolled to), so a bar drawn across that boundary
 * is one line. Lines dropped from the start (past `maxRows`) are final ones. Pure: no DOM, no fetch.
 */
import { cellsSpans, lineSpans } from './ansi';
import type { ISpan } from './ansi';
import { LIVE_LINES, Terminal } from './terminal';
import type { ICell, Line } from './terminal';
import type { ILogLine } from './types';

export const TRACEBACK = 'Traceback (most recent call last)';
/** A redraw by erasing its line (rich) or by blanking it and moving up (tqdm clearing a nested bar). */
// eslint-disable-next-line no-control-regex -- escape sequences are what it matches
const ERASES_LINE = /^(?:\x1b\[[02]?K| +\x1b\[\d*A)/;
/** A redraw that then moves up: it always starts on the cursor's line. */
// eslint-disable-next-line no-control-regex -- escape sequences are what it matches
const REWINDS = /^(?:\x1b\[[02]?K| +)\x1b\[\d*A/;
const RANK_TAG = /^\[rank\d+\] /;
/** Iris's tqdm frame: `45%|####5     |`, or the bracketed clock and rate every frame carries. */
const PROGRESS_BAR = [/\d+%\|[^|]*\|/, /\[\d{1,2}:\d{2}(?::\d{2})?[^\]]*,\s*[\d.?]+[^\s\]]*\/[^\s\],]+/];

/** A line as a reader sees it. */
export interface IShownRow {
  /** The row that last wrote it. */
  readonly line: ILogLine;
  /** `<task id>:<attempt>|<source>`: rows of one stream of one attempt. */
  readonly stream: string;
  readonly spans: ISpan[];
  readonly text: string;
  /** Where it sits: the largest `seq` of the rows that wrote it or a line above it on its terminal. */
  readonly order: number;
}

/** A shown line whose spans are worked out when first read (a view reads only the rows in view). */
class ShownRow implements IShownRow {
  constructor(
    readonly line: ILogLine,
    readonly stream: string,
    readonly order: number,
    private readonly _cells: readonly ICell[],
    private readonly _cut: boolean
  ) {}

  get spans(): ISpan[] {
    this._spans ??= cellsSpans(this._cells, this._cut);
    return this._spans;
  }

  get text(): string {
    this._text ??= this.spans.map(span => span.text).join('');
    return this._text;
  }

  private _spans: ISpan[] | null = null;
  private _text: string | null = null;
}

/** Whether a line shows a tqdm frame anywhere in it (Iris's `is_progress_bar_line`). */
export function isProgressBarLine(text: string): boolean {
  return PROGRESS_BAR.some(pattern => pattern.test(text));
}

function shownText(data: string): string {
  return lineSpans(data)
    .map(span => span.text)
    .join('');
}

/** Whether a row redraws the cursor's line. */
export function redraws(data: string): boolean {
  // a frame shows '|' or ',' (Iris's two patterns), so a row without either is none: not played
  return ERASES_LINE.test(data) || ((data.includes('|') || data.includes(',')) && isProgressBarLine(shownText(data)));
}

class Write {
  constructor(
    readonly line: ILogLine,
    readonly redraw: boolean
  ) {}
}

/** One task attempt's stream: its terminal and the rank of its lines among the log's. */
class Stream {
  constructor(
    readonly name: string,
    readonly rank: number
  ) {}

  readonly terminal = new Terminal(LIVE_LINES);
  started = false;
  /** A blank row after a redraw, waiting for the next row to say what it was. */
  held: ILogLine | null = null;

  play(row: ILogLine): void {
    const redraw = redraws(row.data);
    const held = this.held;
    this.held = null;
    if (held) {
      if (row.data && !redraw) {
        this._clear(held);
        this._start(row, true, false);
        this.terminal.play(row.data);
        return;
      }
      this._start(held, false, false);
    }
    const mark = this.terminal.line(this.terminal.row).mark;
    const last = this.terminal.mark;
    if (!row.data && mark instanceof Write && mark.redraw && last instanceof Write) {
      if (last.redraw && !shownText(last.line.data)) {
        this._clear(row);
        return;
      }
      if (mark === last) {
        this.held = row;
        return;
      }
    }
    this._start(row, redraw && (REWINDS.test(row.data) || this._returns()), redraw);
    this.terminal.play(row.data);
  }

  private _returns(): boolean {
    const here = this.terminal.line(this.terminal.row);
    return !here.cells.length || (here.mark instanceof Write && here.mark.redraw);
  }

  private _clear(row: ILogLine): void {
    this._start(row, true, true);
    this.terminal.play('\x1b[2K');
  }

  private _start(row: ILogLine, sameLine: boolean, redraw: boolean): void {
    const terminal = this.terminal;
    terminal.mark = new Write(row, redraw);
    if (this.started) {
      terminal.carriageReturn();
      if (!sameLine) {
        terminal.lineFeed();
      }
    }
    this.started = true;
    const here = terminal.line(terminal.row);
    if (here.mark === null) {
      here.mark = terminal.mark;
    }
  }

  /** The terminal's lines as shown, each worked out once per write into it. */
  lines(): IShownRow[] {
    const shown: IShownRow[] = [];
    let floor = 0;
    for (const line of this.terminal.shown()) {
      const write = line.mark;
      if (!(write instanceof Write)) {
        continue;
      }
      floor = Math.max(floor, write.line.seq);
      shown.push(this._row(line, write, floor));
    }
    return shown;
  }

  private _row(line: Line, write: Write, order: number): IShownRow {
    const memo = line.memo as [Write, IShownRow] | null;
    if (memo && memo[0] === write && memo[1].order === order) {
      return memo[1];
    }
    // a line's cells change only with a write into it, which makes a new `Write`: these stay as read
    const row = new ShownRow(write.line, this.name, order, line.cells, line.cut);
    line.memo = [write, row];
    return row;
  }
}

/** The rows of a log played as a terminal shows them, per task attempt and stream. */
export class LogScreen {
  private _streams = new Map<string, Stream>();

  /** Play `rows` after those fed before. */
  feed(rows: Iterable<ILogLine>): void {
    for (const row of rows) {
      const name = `${row.task_id}:${row.attempt}|${row.source}`;
      let stream = this._streams.get(name);
      if (!stream) {
        stream = new Stream(name, this._streams.size);
        this._streams.set(name, stream);
      }
      stream.play(row);
    }
  }

  /** Every line, in the order a reader sees them. */
  shown(): IShownRow[] {
    const keyed: [IShownRow, number, number][] = [];
    for (const stream of this._streams.values()) {
      stream.lines().forEach((row, index) => keyed.push([row, stream.rank, index]));
    }
    keyed.sort((a, b) => a[0].order - b[0].order || a[1] - b[1] || a[2] - b[2]);
    return keyed.map(([row]) => row);
  }

  /** Forget the final lines older than the newest `keep` lines. */
  trim(keep: number): void {
    const shown = this.shown();
    const old = new Map<string, number>();
    for (const row of shown.slice(0, Math.max(0, shown.length - keep))) {
      old.set(row.stream, (old.get(row.stream) ?? 0) + 1);
    }
    for (const stream of this._streams.values()) {
      stream.terminal.drop(old.get(stream.name) ?? 0);
    }
  }
}

/** The lines a reader sees of `rows`, in order. */
export function collapse(rows: Iterable<ILogLine>): IShownRow[] {
  const screen = new LogScreen();
  screen.feed(rows);
  return screen.shown();
}

/** The index of the row ending the traceback that starts at `rows[start]`. */
export function tracebackEnd(rows: IShownRow[], start: number): number {
  const head = rows[start];
  let end = start;
  for (let index = start + 1; index < rows.length; index++) {
    if (rows[index].stream !== head.stream) {
      continue;
    }
    end = index;
    const text = rows[index].text.replace(RANK_TAG, '');
    if (text && !/^\s/.test(text)) {
      break;
    }
  }
  return end;
}

/** The indices of the rows of the traceback that starts at `rows[start]`: its stream's, through `tracebackEnd`. */
export function tracebackRows(rows: IShownRow[], start: number): number[] {
  const end = tracebackEnd(rows, start);
  const marked: number[] = [];
  for (let index = start; index <= end; index++) {
    if (rows[index].stream === rows[start].stream) {
      marked.push(index);
    }
  }
  return marked;
}

/** Lines of a page in cursor order (a page comes grouped per task from some controllers). */
export function bySeq(lines: ILogLine[]): ILogLine[] {
  return [...lines].sort((a, b) => a.seq - b.seq);
}

/** The index of the first row whose `order` is at least `seq` (rows are in `order`). */
export function indexOfSeq(rows: IShownRow[], seq: number): number {
  let low = 0;
  let high = rows.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (rows[middle].order < seq) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

export class LogWindow {
  /** `pageRows`: the rows of a page (an older page is played with at most that many held after it). */
  constructor(
    readonly maxRows: number,
    readonly pageRows = 1000
  ) {}

  /** The lines shown, in `order`. */
  rows: IShownRow[] = [];
  /** No row comes before `rows[0]`. */
  atStart = true;
  /** No row comes after the last one: new rows are read from `cursor`. */
  atEnd = true;
  /** The server's cursor after the newest row read (meaningful while `atEnd`). */
  cursor = 0;
  /** The cursor of the oldest row held: the next older page comes before it. */
  firstSeq = 0;
  /** The cursor of the newest row held: the next newer page comes after it. */
  lastSeq = 0;
  /** The rows held, in cursor order: `_screen` played them from the first. */
  private _held: ILogLine[] = [];
  private _screen = new LogScreen();
  /** `_screen`'s lines before this `order` are not shown (dropped from the window's start). */
  private _from = 0;

  /** Start again with `lines` (a page read from somewhere in the log). */
  reset(lines: ILogLine[], cursor: number, atStart: boolean, atEnd: boolean): void {
    this._play([]);
    this.firstSeq = this.lastSeq = 0;
    this.cursor = cursor;
    this.atStart = atStart;
    this.append(lines, cursor, atEnd);
  }

  /** Newer lines (after the last row read); `atEnd`: they reach the newest there is. */
  append(lines: ILogLine[], cursor: number, atEnd: boolean): void {
    const sorted = bySeq(lines);
    this._screen.feed(sorted);
    for (const row of sorted) {
      this._held.push(row);
    }
    if (sorted.length) {
      this.lastSeq = Math.max(this.lastSeq, sorted[sorted.length - 1].seq);
      this.firstSeq = this.firstSeq || sorted[0].seq;
    }
    this.cursor = Math.max(this.cursor, cursor);
    this.atEnd = atEnd;
    this._show();
    if (this.rows.length > this.maxRows) {
      this._screen.trim(this.maxRows);
      this._show();
      this.rows = this.rows.slice(-this.maxRows);
      this._from = this.rows[0].order; // lines the cursor can still reach above it stay held, not shown
      this.firstSeq = this.rows.reduce((first, row) => Math.min(first, row.line.seq), this.rows[0].line.seq);
      this._held = this._held.filter(row => row.seq >= this.firstSeq);
      this.atStart = false;
    }
  }

  /** Older lines (before the first row held); `atStart`: they reach the first there is. They are
   * played with the rows held after them, at most `pageRows` of those (the rest are dropped). */
  prepend(lines: ILogLine[], atStart: boolean): void {
    const sorted = bySeq(lines);
    const after = this._held.slice(0, this.pageRows);
    this.atEnd &&= after.length === this._held.length;
    this._play([...sorted, ...after]);
    this.firstSeq = sorted.length ? sorted[0].seq : this.firstSeq;
    this.atStart = atStart;
    if (this.rows.length > this.maxRows) {
      const before = this.rows[this.maxRows].order; // the rows before it show the first lines
      this._play(this._held.filter(row => row.seq < before));
      this.rows.length = Math.min(this.rows.length, this.maxRows);
      this.atEnd = false;
    }
    this.lastSeq = this._held.length ? this._held[this._held.length - 1].seq : this.lastSeq;
  }

  /** Hold `rows` (in cursor order), played from the first on a new screen. */
  private _play(rows: ILogLine[]): void {
    this._held = rows;
    this._screen = new LogScreen();
    this._screen.feed(rows);
    this._from = 0;
    this._show();
  }

  private _show(): void {
    const shown = this._screen.shown();
    this.rows = this._from ? shown.filter(row => row.order >= this._from) : shown;
  }
}
