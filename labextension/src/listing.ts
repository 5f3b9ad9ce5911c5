/**
 * The listed jobs: whose and which (`scope.ts`'s view), the page the controller answered, the tree
 * under it (`tree.ts`), the users to pick from, and the view kept per cluster.
 *
 * Rules:
 * - Every filter runs on the controller: the page, its `total` and `has_more` are the server's.
 * - Each cluster (the named cluster the server is on; `''` for the embedded controller or a URL)
 *   has its own view and expanded parents; `useCluster` switches to the one saved for it, and
 *   `changedView` fires whenever something worth saving changed (the plugin writes it to
 *   JupyterLab's state DB, `restore` reads it back).
 * - `invalidate(ids)` names the jobs a push said changed (null: anything may have); the next
 *   `refresh` re-reads the page and the children of the shown expanded parents among them.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { listChildren, listJobs, listUsers } from './api';
import { fingerprint } from './changes';
import { DEFAULT_VIEW, IView, pageQuery, parseSaved, saveable } from './scope';
import type { ISavedView } from './scope';
import { JobTree } from './tree';
import type { TreeRow } from './tree';
import type { IJobPage, IUserSummary } from './types';

export interface ISavedState {
  views: Record<string, ISavedView>;
}

export class JobListing {
  view: IView = { ...DEFAULT_VIEW };
  page: IJobPage | null = null;
  users: IUserSummary[] = [];
  readonly tree = new JobTree(listChildren);

  /** Emits when the view or the expanded set changed (what `saved()` returns changed). */
  get changedView(): ISignal<this, void> {
    return this._changedView;
  }

  /** The rows the list shows: the page's jobs and, under expanded parents, their children. */
  get rows(): TreeRow[] {
    return this.tree.rows(this.page?.jobs ?? []);
  }

  /** Whether the page shown was read for another view (a new one is on its way). */
  stale(me: string | null): boolean {
    return this.page !== null && JSON.stringify(pageQuery(this.view, me)) !== this._pageKey;
  }

  /** Whether the page is exactly the current user's newest roots, `DEFAULT_VIEW`'s page (what
   * notifications watch). */
  showsRecent(me: string | null): boolean {
    return JSON.stringify(pageQuery(this.view, me)) === JSON.stringify(pageQuery(DEFAULT_VIEW, me));
  }

  /** Switch to cluster `key`'s saved view; returns whether it was another cluster. */
  useCluster(key: string): boolean {
    if (key === this._cluster) {
      return false;
    }
    this._saved[this._cluster] = saveable(this.view, this.tree.expanded);
    this._cluster = key;
    this._apply(this._saved[key]);
    return true;
  }

  /** Views saved earlier (the state DB's value; anything malformed is ignored). */
  restore(value: unknown): void {
    this._saved = { ...parseSaved(value), ...this._saved };
    this._apply(this._saved[this._cluster]);
  }

  /** Every cluster's view, the current one as it is now. */
  saved(): ISavedState {
    return { views: { ...this._saved, [this._cluster]: saveable(this.view, this.tree.expanded) } };
  }

  /** Change whose jobs or which are listed (back to the first page unless `offset` is given). */
  setView(view: Partial<IView>): void {
    this.view = { ...this.view, offset: 0, ...view };
    this._changedView.emit();
  }

  /** Expand or collapse `jobId`; resolves once its children are read. */
  async toggle(jobId: string): Promise<void> {
    const reading = this.tree.toggle(jobId);
    this._changedView.emit();
    await reading;
  }

  /** Mark the children of `ids` (null: of every parent) to be read again by the next `refresh`;
   * marks add up until a refresh takes them. */
  invalidate(ids: readonly string[] | null): void {
    if (ids === null || this._dirty === null) {
      this._dirty = null;
    } else {
      ids.forEach(id => this._dirty?.add(id));
    }
  }

  /** Read the page (and, when `withTree`, the children the last pushes touched). */
  async refresh(me: string | null, start: boolean, withTree: boolean): Promise<IJobPage> {
    const dirty = this._dirty;
    this._dirty = new Set();
    const query = pageQuery(this.view, me);
    try {
      const page = await listJobs(query, start);
      this.page = page;
      this._pageKey = JSON.stringify(query);
      if (withTree) {
        await this.tree.refresh(page.jobs, dirty);
      } else {
        this.invalidate(dirty === null ? null : [...dirty]);
      }
      return page;
    } catch (error) {
      this.invalidate(null);
      throw error;
    }
  }

  /** Read who has work on the controller, for the user picker. */
  async loadUsers(): Promise<void> {
    this.users = (await listUsers()).users;
  }

  /** The controller changed: forget the page and every child read (the view stays). */
  forget(): void {
    this.page = null;
    this.tree.reset(this.tree.expanded);
    this.invalidate(null);
  }

  /** A string that changes whenever what the list shows changes. */
  fingerprint(): string {
    const jobs = this.page?.jobs ?? [];
    return this.page ? `${this.page.total}\n${fingerprint(jobs)}\n${this.tree.fingerprint(jobs)}` : '-';
  }

  private _apply(saved: ISavedView | undefined): void {
    const { expanded = [], ...view } = saved ?? {};
    this.view = { ...DEFAULT_VIEW, ...view, offset: 0 };
    this.tree.reset(expanded);
    this.page = null;
    this.invalidate(null);
  }

  private _cluster = '';
  private _pageKey = '';
  private _saved: Record<string, ISavedView> = {};
  private _dirty: Set<string> | null = null;
  private _changedView = new Signal<this, void>(this);
}
