/**
 * The open job's log as the sidebar reads it: a `LogWindow` of at most `MAX_ROWS` shown rows,
 * filled from `GET /fray/jobs/<id>/logs` page by page, by cursor — never the whole log.
 *
 * Rules: opening (and every filter change) reads the newest `PAGE` rows (`tail`); `poll` reads the
 * rows after the cursor while the window reaches the newest row; `older` reads the page before the
 * first row (`before`), `newer` the page after the last when the window no longer reaches the end.
 * The filter (`substring`, `min_level`) is sent with every read, so it runs on the controller.
 * `traceback` finds the job's last row containing `TRACEBACK` (filter cleared), loads the log from
 * there and marks the traceback through its exception line. One read at a time, in call order;
 * `changed` fires after each one that changed anything, `version` counts them. `latest`, `open`,
 * a filter and `traceback` start a new view of the log: an `older` or `newer` asked for before
 * them, still waiting its turn, is dropped (its page would move the view away from where it went).
 * An `older` or `newer` read is over before its `changed` fires, so a view that is still short of
 * rows after it (a page that collapsed into a few lines) asks for the next one from its handler.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { getLogs } from './api';
import { errorText } from './format';
import { indexOfSeq, LogWindow, TRACEBACK, tracebackRows } from './logrows';
import type { ILogPage } from './types';

/** Rows per read. */
export const PAGE = 1000;
/** Shown rows held in the browser (older or newer ones are read again when scrolled to). */
export const MAX_ROWS = 20_000;
/** Newer pages read in one `poll` when the log outruns the poll (then the next poll goes on). */
const MAX_PAGES_PER_POLL = 10;

export interface ILogFilter {
  /** Only rows containing this text; '' for all. */
  substring: string;
  /** Only rows of this level or above: '', `debug`, `info`, `warning`, `error`, `critical`. */
  minLevel: string;
}

/** A marked traceback: the seq of its first row and of each of its rows. */
export interface IMarked {
  first: number;
  seqs: ReadonlySet<number>;
}

export class LogFeed {
  constructor(readonly jobId: string) {}

  readonly window = new LogWindow(MAX_ROWS, PAGE);
  filter: ILogFilter = { substring: '', minLevel: '' };
  marked: IMarked | null = null;
  /** The last read's error ('' when it worked). */
  error = '';
  /** A note about the last action (e.g. no traceback found); '' when there is none. */
  note = '';
  version = 0;
  /** Whether the first read is done (before it, nothing is known about the log). */
  loaded = false;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Read the newest rows (what opening the job shows). */
  open(): Promise<boolean> {
    this._epoch += 1;
    return this._run(() => this._readTail());
  }

  /** Read the rows written since (while the window reaches the newest row); resolves to whether any came. */
  poll(): Promise<boolean> {
    return this._run(async () => {
      let came = false;
      for (let pages = 0; pages < MAX_PAGES_PER_POLL && this.window.atEnd && this.loaded; pages++) {
        const page = await this._read(this.window.cursor);
        if (!page.entries.length) {
          this.window.cursor = Math.max(this.window.cursor, page.cursor);
          break;
        }
        this.window.append(page.entries, page.cursor, true);
        came = true;
        if (page.entries.length < PAGE) {
          break;
        }
      }
      return came;
    });
  }

  /** Read the page before the first row (once at a time: asking again meanwhile waits for it). */
  older(): Promise<boolean> {
    const epoch = this._epoch;
    this._older ??= this._run(async () => {
      try {
        if (epoch !== this._epoch || this.window.atStart || !this.window.rows.length) {
          return false;
        }
        const page = await this._read(0, { tail: true, before: this.window.firstSeq });
        this.window.prepend(page.entries, page.entries.length < PAGE);
        return true;
      } finally {
        this._older = null; // before `changed` fires: a view still short of rows asks for the next page
      }
    });
    return this._older;
  }

  /** Read the page after the last row when the window no longer reaches the newest (once at a time). */
  newer(): Promise<boolean> {
    const epoch = this._epoch;
    this._newer ??= this._run(async () => {
      try {
        if (epoch !== this._epoch || this.window.atEnd) {
          return false;
        }
        const page = await this._read(this.window.lastSeq);
        this.window.append(page.entries, page.cursor, page.entries.length < PAGE);
        return true;
      } finally {
        this._newer = null; // before `changed` fires, as for `older`
      }
    });
    return this._newer;
  }

  /** Show the newest rows again (reading them if the window no longer holds them). */
  async latest(): Promise<void> {
    this.marked = null;
    this._epoch += 1;
    await this._run(async () => this.window.atEnd || this._readTail());
  }

  /** Filter on the controller: start again from the newest matching rows. */
  async setFilter(filter: ILogFilter): Promise<void> {
    this.filter = filter;
    this.marked = null;
    this.note = '';
    await this.open();
  }

  /** Load and mark the job's last traceback; resolves to whether there was one. */
  traceback(): Promise<boolean> {
    this._epoch += 1;
    return this._run(async () => {
      const found = await getLogs(this.jobId, 0, { tail: true, maxLines: 1, substring: TRACEBACK });
      if (!found.entries.length) {
        this.note = "No Python traceback in this job's log.";
        return true;
      }
      const first = found.entries[found.entries.length - 1].seq;
      this.filter = { substring: '', minLevel: '' };
      const page = await this._read(first - 1);
      this.window.reset(page.entries, page.cursor, false, page.entries.length < PAGE);
      const start = indexOfSeq(this.window.rows, first);
      const rows = this.window.rows;
      this.marked = { first, seqs: new Set(tracebackRows(rows, start).map(index => rows[index].line.seq)) };
      this.note = '';
      return true;
    });
  }

  /** The newest rows, the whole window (what opening shows). */
  private async _readTail(): Promise<boolean> {
    const page = await this._read(0, { tail: true });
    this.window.reset(page.entries, page.cursor, page.entries.length < PAGE, true);
    this.loaded = true;
    return true;
  }

  private _read(cursor: number, options: { tail?: boolean; before?: number } = {}): Promise<ILogPage> {
    return getLogs(this.jobId, cursor, { ...options, maxLines: PAGE, ...this.filter });
  }

  /** Run one read after the ones before it; a failure is kept in `error`, never thrown. */
  private _run(read: () => Promise<boolean>): Promise<boolean> {
    const next = this._queue.then(async () => {
      try {
        const changed = await read();
        const hadError = this.error !== '';
        this.error = '';
        if (changed || hadError) {
          this._bump();
        }
        return changed;
      } catch (error) {
        this.error = errorText(error);
        this._bump();
        return false;
      }
    });
    this._queue = next.then(() => undefined);
    return next;
  }

  private _bump(): void {
    this.version += 1;
    this._changed.emit();
  }

  private _queue: Promise<void> = Promise.resolve();
  private _epoch = 0;
  private _older: Promise<boolean> | null = null;
  private _newer: Promise<boolean> | null = null;
  private _changed = new Signal<this, void>(this);
}
