/**
 * Log rows as a researcher reads them, and the window of them the sidebar holds. The status
 * panel's `fray_jupyter/views/logtail.py` follows the same rules and both run the same vectors
 * (`tests/data/ansi_vectors.json`); see that module for the rules in full.
 *
 * In short: Iris stores one row per carriage-return redraw, so a row that *redraws* (shows a tqdm
 * frame, Iris's pattern, or starts by erasing the line, as rich does) replaces the previous shown
 * row of the same task attempt and stream when that row is blank or a redraw itself, looked for
 * among the last `REDRAW_LOOKBACK` shown rows; it is shown at its own place. A traceback ends at
 * the first later row of its key and stream that is not indented; its rows are those of its key
 * and stream up to there (other streams' rows in between are shown, not marked).
 *
 * `LogWindow` holds at most `maxRows` shown rows of one log, in cursor (`seq`) order, with whether
 * they reach the first row there is (`atStart`) and the newest (`atEnd`). Pure: no DOM, no fetch.
 */
import { lineSpans } from './ansi';
import type { ISpan } from './ansi';
import type { ILogLine } from './types';

export const REDRAW_LOOKBACK = 1000;
export const TRACEBACK = 'Traceback (most recent call last)';
const ERASES_LINE = /^\x1b\[[02]?K/;
const RANK_TAG = /^\[rank\d+\] /;
/** Iris's tqdm frame: `45%|####5     |`, or the bracketed clock and rate every frame carries. */
const PROGRESS_BAR = [/\d+%\|[^|]*\|/, /\[\d{1,2}:\d{2}(?::\d{2})?[^\]]*,\s*[\d.?]+[^\s\]]*\/[^\s\],]+/];

/** A fetched line with what the views need of it, worked out once. */
export interface IShownRow {
  line: ILogLine;
  /** `<task id>:<attempt>|<source>`: rows of one stream of one attempt. */
  stream: string;
  spans: ISpan[];
  text: string;
  redraws: boolean;
}

/** Whether a line shows a tqdm frame anywhere in it (Iris's `is_progress_bar_line`). */
export function isProgressBarLine(text: string): boolean {
  return PROGRESS_BAR.some(pattern => pattern.test(text));
}

/** A fetched line made ready to show. */
export function shownRow(line: ILogLine): IShownRow {
  const spans = lineSpans(line.data);
  const text = spans.map(span => span.text).join('');
  return {
    line,
    stream: `${line.task_id}:${line.attempt}|${line.source}`,
    spans,
    text,
    redraws: ERASES_LINE.test(line.data) || isProgressBarLine(text)
  };
}

function replaceable(row: IShownRow): boolean {
  return row.text.trim() === '' || row.redraws;
}

/** Append `rows` to the already collapsed `shown`, each redraw replacing the row it redraws. */
export function collapseInto(shown: IShownRow[], rows: Iterable<IShownRow>): void {
  for (const row of rows) {
    if (row.redraws) {
      for (let back = shown.length - 1; back >= Math.max(0, shown.length - REDRAW_LOOKBACK); back--) {
        if (shown[back].stream === row.stream) {
          if (replaceable(shown[back])) {
            shown.splice(back, 1);
          }
          break;
        }
      }
    }
    shown.push(row);
  }
}

/** The rows a reader sees, in order. */
export function collapse(rows: Iterable<IShownRow>): IShownRow[] {
  const shown: IShownRow[] = [];
  collapseInto(shown, rows);
  return shown;
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

/** The index of the first row whose `seq` is at least `seq` (rows are in `seq` order). */
export function indexOfSeq(rows: IShownRow[], seq: number): number {
  let low = 0;
  let high = rows.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (rows[middle].line.seq < seq) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

export class LogWindow {
  constructor(readonly maxRows: number) {}

  rows: IShownRow[] = [];
  /** No row comes before `rows[0]`. */
  atStart = true;
  /** No row comes after the last one: new rows are read from `cursor`. */
  atEnd = true;
  /** The server's cursor after the newest row read (meaningful while `atEnd`). */
  cursor = 0;
  /** The cursor of the oldest row read: the next older page comes before it (collapsed rows
   * are gone from `rows`, so it may be older than the first row shown). */
  firstSeq = 0;
  /** The cursor of the newest row read: the next newer page comes after it. */
  lastSeq = 0;

  /** Start again with `lines` (a page read from somewhere in the log). */
  reset(lines: ILogLine[], cursor: number, atStart: boolean, atEnd: boolean): void {
    const sorted = bySeq(lines);
    this.rows = collapse(sorted.map(shownRow));
    this.firstSeq = sorted.length ? sorted[0].seq : 0;
    this.lastSeq = sorted.length ? sorted[sorted.length - 1].seq : 0;
    this.cursor = cursor;
    this.atStart = atStart;
    this.atEnd = atEnd;
    this._trim('start');
  }

  /** Newer lines (after the last row read); `atEnd`: they reach the newest there is. */
  append(lines: ILogLine[], cursor: number, atEnd: boolean): void {
    const sorted = bySeq(lines);
    collapseInto(this.rows, sorted.map(shownRow));
    if (sorted.length) {
      this.lastSeq = Math.max(this.lastSeq, sorted[sorted.length - 1].seq);
      this.firstSeq = this.firstSeq || sorted[0].seq;
    }
    this.cursor = Math.max(this.cursor, cursor);
    this.atEnd = atEnd;
    this._trim('start');
  }

  /** Older lines (before the first row read); `atStart`: they reach the first there is. */
  prepend(lines: ILogLine[], atStart: boolean): void {
    const sorted = bySeq(lines);
    this.rows = collapse([...sorted.map(shownRow), ...this.rows]);
    if (sorted.length) {
      this.firstSeq = sorted[0].seq;
      this.lastSeq = this.lastSeq || sorted[sorted.length - 1].seq;
    }
    this.atStart = atStart;
    this._trim('end');
  }

  /** Keep `maxRows`, dropping from the `side` away from where rows were added. */
  private _trim(side: 'start' | 'end'): void {
    const over = this.rows.length - this.maxRows;
    if (over <= 0) {
      return;
    }
    if (side === 'start') {
      this.rows.splice(0, over);
      this.firstSeq = this.rows[0].line.seq;
      this.atStart = false;
    } else {
      this.rows.length = this.maxRows;
      this.lastSeq = this.rows[this.rows.length - 1].line.seq;
      this.atEnd = false;
    }
  }
}
