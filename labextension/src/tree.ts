/**
 * The job tree under the listed page: which parents are expanded, their children (fetched lazily,
 * per parent, `scope=children`), and the rows the list shows. No DOM; the fetch is passed in, so it
 * is unit-tested without a server.
 *
 * Rules:
 * - A parent's children are fetched when it is first expanded (oldest first, `CHILD_PAGE` at a
 *   time, "more" for the next page, none past `MAX_LIST_OFFSET`, the deepest offset Iris answers)
 *   and again on each `refresh` while it is expanded and shown
 *   (every loaded page, so a new child appears under its parent); a collapsed parent keeps what
 *   was fetched, shown at once when it is expanded again (and re-read then).
 * - `refresh(roots, dirty)` re-reads only the shown parents in `dirty` (null: all of them) and
 *   those never read, deeper levels as they come into view; an answer that arrives after a newer
 *   read of the same parent started is dropped.
 * - `rows(roots)` is the list in order: each job, then (when expanded) its children one level
 *   deeper, then a "loading", "error" or "more" row for that parent. Expanded ids that are not
 *   shown (a collapsed ancestor, another page) cost nothing and stay expanded.
 * - A failed read keeps the children shown before and says why on the parent's "error" row.
 */
import { fingerprint } from './changes';
import { errorText } from './format';
import { MAX_LIST_OFFSET } from './scope';
import type { IJob, IJobPage } from './types';

/** Children per request: Iris's `MAX_LIST_JOBS_LIMIT`. */
export const CHILD_PAGE = 500;
const MAX_DEPTH = 64;

/** One page of `parent`'s children from `offset`, oldest first. */
export type FetchChildren = (parent: string, offset: number, limit: number) => Promise<IJobPage>;

export type TreeRow =
  | { kind: 'job'; job: IJob; depth: number; expanded: boolean }
  | { kind: 'loading'; parent: string; depth: number }
  | { kind: 'error'; parent: string; depth: number; message: string }
  | { kind: 'more'; parent: string; depth: number; shown: number; total: number; capped: boolean };

interface IChildren {
  jobs: IJob[];
  total: number;
  hasMore: boolean;
  loaded: boolean;
  error: string;
  /** The newest read started; older answers are dropped. */
  read: number;
}

export class JobTree {
  constructor(private readonly fetch: FetchChildren) {}

  /** Expanded parents, least recently expanded first. */
  get expanded(): readonly string[] {
    return [...this._expanded];
  }

  /** Expand these parents (restored from a saved view); their children are read on the next refresh. */
  restore(ids: Iterable<string>): void {
    for (const id of ids) {
      this._expanded.add(id);
    }
  }

  /** Forget every child fetched (another controller); the expanded set stays as given. */
  reset(expanded: Iterable<string> = []): void {
    this._expanded = new Set(expanded);
    this._children.clear();
  }

  /** Collapse an expanded parent, or expand it and read its children; resolves once they are read. */
  async toggle(jobId: string): Promise<void> {
    if (this._expanded.delete(jobId)) {
      return;
    }
    this._expanded.add(jobId);
    await this._read(jobId, 1);
  }

  /** Read the next page of `parent`'s children. */
  async more(parent: string): Promise<void> {
    const children = this._children.get(parent);
    await this._read(parent, Math.ceil((children?.jobs.length ?? 0) / CHILD_PAGE) + 1);
  }

  /** Re-read the children of the shown expanded parents (those in `dirty`, null: all, and any
   * never read), level by level: a parent shown once its own parent's children arrive (a restored
   * view) is read in the same refresh. */
  async refresh(roots: readonly IJob[], dirty: ReadonlySet<string> | null = null): Promise<void> {
    const done = new Set<string>();
    for (;;) {
      const parents = this.shownParents(roots).filter(
        id => !done.has(id) && (dirty === null || dirty.has(id) || !this._children.get(id)?.loaded)
      );
      if (!parents.length) {
        return;
      }
      parents.forEach(id => done.add(id));
      await Promise.all(parents.map(id => this._read(id, this._pagesShown(id))));
    }
  }

  /** How many pages of `parent`'s children are shown (at least one). */
  private _pagesShown(parent: string): number {
    return Math.max(1, Math.ceil((this._children.get(parent)?.jobs.length ?? 0) / CHILD_PAGE));
  }

  /** The expanded parents whose children `rows(roots)` shows, in list order. */
  shownParents(roots: readonly IJob[]): string[] {
    return this.rows(roots).flatMap(row => (row.kind === 'job' && row.expanded ? [row.job.job_id] : []));
  }

  /** The list's rows under `roots` (see the module rules). */
  rows(roots: readonly IJob[]): TreeRow[] {
    const rows: TreeRow[] = [];
    const walk = (jobs: readonly IJob[], depth: number): void => {
      for (const job of jobs) {
        const expanded = this._expanded.has(job.job_id) && depth < MAX_DEPTH;
        rows.push({ kind: 'job', job, depth, expanded });
        if (expanded) {
          this._childRows(job.job_id, depth + 1, rows, walk);
        }
      }
    };
    walk(roots, 0);
    return rows;
  }

  /** A string that changes whenever what `rows(roots)` shows changes. */
  fingerprint(roots: readonly IJob[]): string {
    return this.shownParents(roots)
      .map(id => {
        const c = this._children.get(id);
        return c ? `${id}:${c.loaded}:${c.total}:${c.error}\n${fingerprint(c.jobs)}` : `${id}:-`;
      })
      .join('\n');
  }

  private _childRows(
    parent: string,
    depth: number,
    rows: TreeRow[],
    walk: (jobs: readonly IJob[], depth: number) => void
  ): void {
    const children = this._children.get(parent);
    if (!children || (!children.loaded && !children.error)) {
      rows.push({ kind: 'loading', parent, depth });
      return;
    }
    walk(children.jobs, depth);
    if (children.error) {
      rows.push({ kind: 'error', parent, depth, message: children.error });
    } else if (children.hasMore) {
      const capped = children.jobs.length > MAX_LIST_OFFSET;
      rows.push({ kind: 'more', parent, depth, shown: children.jobs.length, total: children.total, capped });
    }
  }

  /** Read the first `pages` pages of `parent`'s children (see the module rules). */
  private async _read(parent: string, pages: number): Promise<void> {
    const before = this._children.get(parent);
    const read = (before?.read ?? 0) + 1;
    const state: IChildren = before
      ? { ...before, read }
      : { jobs: [], total: 0, hasMore: false, loaded: false, error: '', read };
    this._children.set(parent, state);
    const jobs: IJob[] = [];
    let total = 0;
    let hasMore = false;
    try {
      for (let page = 0; page < pages && jobs.length <= MAX_LIST_OFFSET; page++) {
        const answer = await this.fetch(parent, jobs.length, CHILD_PAGE);
        jobs.push(...answer.jobs);
        total = answer.total;
        hasMore = answer.has_more && answer.jobs.length > 0;
        if (!hasMore) {
          break;
        }
      }
    } catch (error) {
      if (this._children.get(parent)?.read === read) {
        this._children.set(parent, { ...state, error: errorText(error) });
      }
      return;
    }
    if (this._children.get(parent)?.read === read) {
      this._children.set(parent, { jobs, total, hasMore, loaded: true, error: '', read });
    }
  }

  private _expanded = new Set<string>();
  private _children = new Map<string, IChildren>();
}
