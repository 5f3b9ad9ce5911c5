/**
 * A list that holds only the rows in view: every row is `rowPx` high, the scroller is as tall as
 * all of them, and the rows around the visible window (`OVERSCAN` either side) are the only ones in
 * the DOM. So a page with a 500-child parent expanded still holds a few dozen rows.
 *
 * Rules: `setItems` and a change of the scroller's size render at once (so a test or a benchmark sees
 * the change right after it); a scroll re-renders on the next animation frame, and only when it moved
 * the window of rows (as the log view does); keyboard focus stays on the same row (by its
 * `data-key`) across renders, and ArrowUp / ArrowDown move it row by row, scrolling as needed.
 * `windowRange` is pure (unit-tested).
 */
import { el } from './dom';

export const OVERSCAN = 8;
/** Rows rendered while the list has no height yet (hidden, or not laid out). */
const UNMEASURED_ROWS = 24;

/** `[start, end)` of the rows to render for a viewport `[scrollTop, scrollTop + height)`. */
export function windowRange(
  scrollTop: number,
  height: number,
  rowPx: number,
  count: number,
  overscan = OVERSCAN
): [number, number] {
  const visible = height > 0 ? height : UNMEASURED_ROWS * rowPx;
  const start = Math.max(0, Math.floor(Math.max(0, scrollTop) / rowPx) - overscan);
  const end = Math.min(count, Math.ceil((Math.max(0, scrollTop) + visible) / rowPx) + overscan);
  return [Math.min(start, end), end];
}

export interface IWindowedListOptions<T> {
  rowPx: number;
  /** One row's content (the list wraps it in an `<li>` of `rowPx`). */
  render: (item: T) => HTMLElement;
  /** A stable key per item (focus follows it). */
  key: (item: T) => string;
  label: string;
}

export class WindowedList<T> {
  constructor(private readonly options: IWindowedListOptions<T>) {
    this.list = el('ul', { className: 'fj-JobList', attrs: { 'aria-label': options.label } });
    this.node = el('div', { className: 'fj-JobScroll', children: [this.list] });
    this.node.addEventListener('scroll', () => {
      if (this._frame === 0) {
        this._frame = requestAnimationFrame(() => {
          this._frame = 0;
          this._render(false);
        });
      }
    });
    this.list.addEventListener('keydown', event => this._onKey(event));
    this._resize = new ResizeObserver(() => this._render()); // a window of the new height
    this._resize.observe(this.node);
  }

  readonly node: HTMLDivElement;
  readonly list: HTMLUListElement;

  /** Show `items` (rendered now). */
  setItems(items: readonly T[]): void {
    this._items = items;
    this._render();
  }

  /** Back to the first row (a new page or filter). */
  scrollToTop(): void {
    this.node.scrollTop = 0;
    this._render();
  }

  dispose(): void {
    cancelAnimationFrame(this._frame);
    this._resize.disconnect();
  }

  /** Put the window's rows in the DOM; `force` (all but a scroll): even when it is the window shown. */
  private _render(force = true): void {
    const { rowPx, render, key } = this.options;
    const [start, end] = windowRange(this.node.scrollTop, this.node.clientHeight, rowPx, this._items.length);
    if (!force && start === this._start && end === this._end) {
      return;
    }
    this._start = start;
    this._end = end;
    const focus = this._focused();
    this.list.style.height = `${this._items.length * rowPx}px`;
    this.list.style.paddingTop = `${start * rowPx}px`;
    const rows: HTMLLIElement[] = [];
    for (let index = start; index < end; index++) {
      const item = this._items[index];
      const li = el('li', {
        className: 'fj-TreeItem',
        attrs: {
          'data-key': key(item),
          'aria-posinset': String(index + 1),
          'aria-setsize': String(this._items.length)
        },
        children: [render(item)]
      });
      li.style.height = `${rowPx}px`;
      rows.push(li);
    }
    this.list.replaceChildren(...rows);
    if (focus) {
      this._focus(focus.key, focus.part);
    }
  }

  /** The row holding keyboard focus, and which of its controls (by its `data-part`). */
  private _focused(): { key: string; part: string } | null {
    const active = document.activeElement as HTMLElement | null;
    const item = active?.closest<HTMLElement>('.fj-TreeItem');
    if (!active || !item || !this.list.contains(item)) {
      return null;
    }
    return { key: item.dataset.key ?? '', part: active.dataset.part ?? '' };
  }

  private _focus(key: string, part: string): void {
    const item = this.list.querySelector<HTMLElement>(`.fj-TreeItem[data-key="${CSS.escape(key)}"]`);
    const target =
      (part && item?.querySelector<HTMLElement>(`[data-part="${CSS.escape(part)}"]`)) ||
      item?.querySelector<HTMLElement>('[data-part="main"]');
    target?.focus({ preventScroll: true });
  }

  private _onKey(event: KeyboardEvent): void {
    if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') {
      return;
    }
    const focus = this._focused();
    const index = focus ? this._items.findIndex(item => this.options.key(item) === focus.key) : -1;
    const next = index + (event.key === 'ArrowDown' ? 1 : -1);
    if (index < 0 || next < 0 || next >= this._items.length) {
      return;
    }
    event.preventDefault();
    const { rowPx } = this.options;
    const top = next * rowPx;
    if (top < this.node.scrollTop) {
      this.node.scrollTop = top;
    } else if (top + rowPx > this.node.scrollTop + this.node.clientHeight) {
      this.node.scrollTop = top + rowPx - this.node.clientHeight;
    }
    this._render();
    this._focus(this.options.key(this._items[next]), 'main');
  }

  private _resize: ResizeObserver;
  private _items: readonly T[] = [];
  private _frame = 0;
  private _start = -1;
  private _end = -1;
}
