/**
 * The open job's log in the sidebar: a toolbar (filter, level, jump to latest, jump to traceback,
 * download) over a virtualised list of the `LogFeed`'s rows.
 *
 * Rules:
 * - Only the rows in view (and `OVERSCAN` on each side) are in the DOM, at a fixed row height,
 *   inside a spacer as tall as every row held: a 200,000-line log costs a few dozen DOM rows.
 * - Each row is its task label then the spans of `ansi.ts`, built with `textContent` and
 *   `setAttribute` only: nothing a task wrote becomes markup. Links open in a new tab.
 * - Follow: while the list is scrolled to its bottom and holds the newest row it stays there as
 *   rows come; scrolled up, the rows in view stay in view (anchored by cursor) and "Jump to latest"
 *   shows. Scrolling near the top (or the bottom, when the newest rows were dropped) reads the next
 *   page, and so does every change that leaves the view near an edge: rows that do not fill the view
 *   (a tail page of tqdm redraws collapses into a dozen lines, so there is no scrollbar to scroll)
 *   are followed by the pages before them until the view is full or the log's first row is held.
 *   Rows beyond `MAX_ROWS` are dropped on the side away from the reader.
 * - The filter is sent to the controller (typing waits `FILTER_DELAY_MS`); "Jump to traceback"
 *   scrolls to the job's last traceback, marked through its exception line; "Download full log" is
 *   a link to the server's streamed download.
 */
import { logDownloadUrl } from './api';
import { button, el, spanNode } from './dom';
import type { ILogFilter, IMarked, LogFeed } from './logfeed';
import { indexOfSeq } from './logrows';
import type { IShownRow } from './logrows';
import { windowRange } from './vlist';

/** Row height in px (`--fj-log-row` in style/logs.css). */
export const ROW_PX = 18;
/** Rows rendered above and below the ones in view (`vlist.ts`'s `windowRange` picks them). */
export const OVERSCAN = 20;
/** Rows from the edge of what is held at which the next page is read. */
const PREFETCH = 200;
const FILTER_DELAY_MS = 400;
const LEVELS: [string, string][] = [
  ['', 'All levels'],
  ['debug', 'Debug+'],
  ['info', 'Info+'],
  ['warning', 'Warning+'],
  ['error', 'Error+'],
  ['critical', 'Critical']
];

/** The class a line's level adds to its row (style/logs.css colours the task label by it). */
const LEVEL_CLASS: ReadonlyMap<string, string> = new Map([
  ['warning', 'fj-LogLine-warning'],
  ['error', 'fj-LogLine-error'],
  ['critical', 'fj-LogLine-error']
]);

function rowNode(row: IShownRow): HTMLElement {
  const line = row.line;
  const classes = [
    'fj-LogLine',
    line.source === 'stderr' ? 'fj-LogLine-stderr' : '',
    LEVEL_CLASS.get(line.level) ?? ''
  ];
  const node = el('div', { className: classes.filter(Boolean).join(' '), attrs: { 'data-seq': String(line.seq) } });
  const task = line.task_id.split('/').pop();
  const label = line.attempt ? `${task}:${line.attempt}` : task;
  node.append(el('span', { className: 'fj-LogTask', text: `[${label}] ` }), ...row.spans.map(spanNode));
  return node;
}

export class LogView {
  constructor() {
    this._filter = el('input', {
      className: 'fj-LogFilter',
      attrs: { type: 'search', placeholder: 'Filter (on the controller)', 'aria-label': 'Filter log lines' }
    });
    this._level = el('select', {
      className: 'fj-LogLevel',
      attrs: { 'aria-label': 'Lowest level shown' },
      children: LEVELS.map(([value, label]) => el('option', { text: label, attrs: { value } }))
    });
    this._latest = button('Jump to latest', () => void this._jumpToLatest(), { className: 'fj-Link fj-LogLatest' });
    this._traceback = button('Jump to traceback', () => void this._jumpToTraceback(), {
      className: 'fj-Link fj-LogTraceback'
    });
    this._download = el('a', { className: 'fj-Link fj-LogDownload', text: 'Download full log' });
    this._note = el('p', { className: 'fj-Muted fj-LogNote' });
    this._rows = el('pre', { className: 'fj-LogRows' }); // JupyterLab's ANSI classes colour inside a `pre`
    this._spacer = el('div', { className: 'fj-LogSpacer jp-RenderedText', children: [this._rows] });
    this._scroller = el('div', {
      className: 'fj-Logs',
      attrs: { tabindex: '0', 'aria-label': 'Job log', role: 'log', 'aria-live': 'off' },
      children: [this._spacer]
    });
    this.node = el('div', {
      className: 'fj-LogView',
      children: [
        el('div', {
          className: 'fj-Filters fj-LogTools',
          children: [this._filter, this._level, this._latest, this._traceback, this._download]
        }),
        this._note,
        this._scroller
      ]
    });
    this._filter.addEventListener('input', () => this._filterSoon());
    this._filter.addEventListener('change', () => this._applyFilter());
    this._level.addEventListener('change', () => this._applyFilter());
    this._scroller.addEventListener('scroll', () => this._onScroll());
  }

  readonly node: HTMLElement;

  /** Show `feed` (the open job's log); `terminal`: the job has ended (for the empty-log note). */
  show(feed: LogFeed, terminal: boolean): void {
    this._terminal = terminal;
    if (feed === this._feed) {
      return;
    }
    this._feed?.changed.disconnect(this._onChanged, this);
    this._feed = feed;
    this._stick = true;
    this._nodes = new WeakMap();
    this._download.setAttribute('href', logDownloadUrl(feed.jobId));
    this._download.setAttribute('download', '');
    feed.changed.connect(this._onChanged, this);
    this._onChanged();
  }

  private _onChanged(): void {
    const feed = this._feed;
    if (!feed) {
      return;
    }
    this._syncControls(feed.filter);
    const rows = feed.window.rows;
    this._spacer.style.height = `${rows.length * ROW_PX}px`;
    if (feed.marked && feed.marked !== this._scrolledTo) {
      this._scrolledTo = feed.marked; // once: then the reader scrolls from there
      this._stick = false;
      this._scroller.scrollTop = Math.max(0, (indexOfSeq(rows, feed.marked.first) - 1) * ROW_PX);
      this._anchorFromScroll();
    } else if (this._stick && feed.window.atEnd) {
      this._scroller.scrollTop = this._scroller.scrollHeight;
    } else if (this._anchorSeq) {
      this._scroller.scrollTop = indexOfSeq(rows, this._anchorSeq) * ROW_PX + this._anchorOffset;
    }
    this._anchorFromScroll(); // the row at the top stays there when the next page comes (or newer ones go)
    this._render(true);
    this._prefetch(feed, this._scroller.scrollTop, this._scroller.clientHeight);
    this._latest.hidden = this._stick && feed.window.atEnd && !feed.marked;
    this._note.textContent = this._noteText(feed);
  }

  /** The line above the log: the last read's error, else the feed's note, else what an empty log means. */
  private _noteText(feed: LogFeed): string {
    if (feed.error || feed.note) {
      return feed.error || feed.note;
    }
    if (!feed.loaded) {
      return 'Loading…';
    }
    if (feed.window.rows.length) {
      return '';
    }
    if (feed.filter.substring !== '' || feed.filter.minLevel !== '') {
      return 'No matching lines.';
    }
    return this._terminal ? 'The job wrote no output.' : 'No output yet.';
  }

  /** Put the rows in view (and the overscan) in the DOM; `force`: even if the range is the same.
   * The view's scroll offset and height are passed in when known (reading them lays the page out). */
  private _render(force = false, top = this._scroller.scrollTop, height = this._scroller.clientHeight): void {
    const feed = this._feed;
    if (!feed) {
      return;
    }
    const rows = feed.window.rows;
    const [first, last] = windowRange(top, height, ROW_PX, rows.length, OVERSCAN);
    if (!force && first === this._first && last === this._last) {
      return;
    }
    this._first = first;
    this._last = last;
    this._rows.style.transform = `translateY(${first * ROW_PX}px)`;
    const marked = feed.marked;
    const nodes = rows.slice(first, last).map(row => {
      let node = this._nodes.get(row);
      if (!node) {
        node = rowNode(row);
        this._nodes.set(row, node);
      }
      node.classList.toggle('fj-LogLine-mark', !!marked && marked.seqs.has(row.line.seq));
      return node;
    });
    this._rows.replaceChildren(...nodes);
  }

  private _onScroll(): void {
    const feed = this._feed;
    if (!feed || this._jumping) {
      return;
    }
    const { scrollTop, clientHeight, scrollHeight } = this._scroller;
    this._stick = scrollTop + clientHeight >= scrollHeight - ROW_PX && feed.window.atEnd && !feed.marked;
    this._latest.hidden = this._stick;
    this._anchorFromScroll(scrollTop);
    this._render(false, scrollTop, clientHeight);
    this._prefetch(feed, scrollTop, clientHeight);
  }

  /** Read the next page when the view is within `PREFETCH` rows of an edge of what is held. */
  private _prefetch(feed: LogFeed, scrollTop: number, clientHeight: number): void {
    const top = Math.floor(scrollTop / ROW_PX);
    const bottom = Math.ceil((scrollTop + clientHeight) / ROW_PX);
    if (top < PREFETCH && !feed.window.atStart && feed.loaded && !feed.error) {
      void feed.older();
    } else if (feed.window.rows.length - bottom < PREFETCH && !feed.window.atEnd && !feed.error) {
      void feed.newer();
    }
  }

  /** Remember which row is at the top of the view, to keep it there when rows come or go. */
  private _anchorFromScroll(scrollTop = this._scroller.scrollTop): void {
    const rows = this._feed?.window.rows ?? [];
    const index = Math.min(rows.length - 1, Math.floor(scrollTop / ROW_PX));
    this._anchorSeq = index >= 0 ? rows[index].order : 0;
    this._anchorOffset = scrollTop - Math.max(0, index) * ROW_PX;
  }

  private async _jumpToLatest(): Promise<void> {
    this._stick = true;
    this._jumping = true; // a scroll event before the newest rows are here must not undo the jump
    try {
      await this._feed?.latest(); // its change scrolls to the end: the view still sticks
    } finally {
      this._jumping = false;
    }
  }

  private async _jumpToTraceback(): Promise<void> {
    await this._feed?.traceback();
  }

  private _filterSoon(): void {
    window.clearTimeout(this._filterTimer);
    this._filterTimer = window.setTimeout(() => this._applyFilter(), FILTER_DELAY_MS);
  }

  private _applyFilter(): void {
    window.clearTimeout(this._filterTimer);
    const feed = this._feed;
    const filter: ILogFilter = { substring: this._filter.value, minLevel: this._level.value };
    if (!feed || (filter.substring === feed.filter.substring && filter.minLevel === feed.filter.minLevel)) {
      return;
    }
    this._stick = true;
    void feed.setFilter(filter);
  }

  /** Show the feed's filter in the controls (it is cleared by a jump to a traceback). */
  private _syncControls(filter: ILogFilter): void {
    if (document.activeElement !== this._filter && this._filter.value !== filter.substring) {
      this._filter.value = filter.substring;
    }
    this._level.value = filter.minLevel;
  }

  private _feed: LogFeed | null = null;
  private _scrolledTo: IMarked | null = null;
  private _terminal = false;
  private _stick = true;
  private _first = -1;
  private _last = -1;
  private _anchorSeq = 0;
  private _anchorOffset = 0;
  private _filterTimer = 0;
  private _nodes = new WeakMap<IShownRow, HTMLElement>();
  private _filter: HTMLInputElement;
  private _level: HTMLSelectElement;
  private _latest: HTMLButtonElement;
  private _jumping = false;
  private _traceback: HTMLButtonElement;
  private _download: HTMLAnchorElement;
  private _note: HTMLParagraphElement;
  private _rows: HTMLPreElement;
  private _spacer: HTMLDivElement;
  private _scroller: HTMLDivElement;
}
