/**
 * Whose jobs the sidebar lists and how, as a query of `GET /fray/jobs`, and what of it is kept per
 * cluster between sessions. Pure, unit-tested.
 *
 * Rules:
 * - "Mine" (the default) is Iris's own way: the current user's jobs (`user=` → `job_id_prefix=
 *   "/<user>/"`), roots only; "Everyone" drops the user; a picked user is that user's. When the
 *   server does not know the current user, "Mine" lists everyone's.
 * - A name search or a state filter runs on the controller over jobs at any depth (a step is found
 *   by its own name), shown flat; without them the list is the roots, children one ▸ away.
 * - Paging is by `PAGE_SIZE` from `offset`; a controller answers no offset past
 *   `MAX_LIST_OFFSET` (Iris's `MAX_LIST_JOBS_OFFSET`), so older jobs are reached by searching.
 * - `parseSaved` accepts only what `saveable` produces (the state DB may hold anything): unknown
 *   or malformed entries are dropped, never an error.
 */
import type { IJobQuery } from './types';

export const PAGE_SIZE = 50;
/** The deepest offset a controller pages to (Iris's `MAX_LIST_JOBS_OFFSET`). */
export const MAX_LIST_OFFSET = 5000;
/** Expanded parents remembered per cluster (the most recently expanded). */
export const MAX_SAVED_EXPANDED = 200;

/** Whose jobs a view lists: "Mine", "Everyone", or one picked user's. */
const WHO = ['mine', 'everyone', 'user'] as const;
export type Who = (typeof WHO)[number];

export interface IView {
  who: Who;
  /** The picked user (for `who === 'user'`). */
  user: string;
  state: string;
  name: string;
  offset: number;
}

export const DEFAULT_VIEW: IView = { who: 'mine', user: '', state: '', name: '', offset: 0 };

/** The user whose jobs `view` lists, or null for everyone's. */
export function viewUser(view: IView, me: string | null): string | null {
  if (view.who === 'user') {
    return view.user || null;
  }
  return view.who === 'mine' ? me : null;
}

/** Whether `view` searches or filters (then the list is flat, at any depth). */
export function isFiltered(view: IView): boolean {
  return view.state !== '' || view.name !== '';
}

/** The query of the page `view` shows. */
export function pageQuery(view: IView, me: string | null): IJobQuery {
  const user = viewUser(view, me);
  return {
    scope: isFiltered(view) ? 'all' : 'roots',
    ...(user ? { user } : {}),
    ...(view.state ? { state: view.state } : {}),
    ...(view.name ? { name: view.name } : {}),
    offset: Math.min(Math.max(0, view.offset), MAX_LIST_OFFSET),
    limit: PAGE_SIZE
  };
}

/** Whether the page after `offset` is past what a controller answers. */
export function pastDeepestPage(offset: number): boolean {
  return offset + PAGE_SIZE > MAX_LIST_OFFSET;
}

/** A heading for the list: whose jobs, and whether roots or matches. */
export function listTitle(view: IView, me: string | null): string {
  const user = viewUser(view, me);
  const whose = user === null ? "Everyone's" : user === me ? 'My' : `${user}'s`;
  return isFiltered(view) ? `${whose} jobs matching` : `${whose} jobs`;
}

/** What is kept per cluster between sessions: the view but its page, and the expanded parents. */
export interface ISavedView extends Omit<IView, 'offset'> {
  expanded: string[];
}

/** The part of `view` (and the expanded parents) worth keeping. */
export function saveable(view: IView, expanded: Iterable<string>): ISavedView {
  const ids = [...expanded];
  return {
    who: view.who,
    user: view.user,
    state: view.state,
    name: view.name,
    expanded: ids.slice(Math.max(0, ids.length - MAX_SAVED_EXPANDED))
  };
}

function isText(value: unknown): value is string {
  return typeof value === 'string';
}

/** Saved views by cluster key, from whatever the state DB returned (see the module rules). */
export function parseSaved(value: unknown): Record<string, ISavedView> {
  const views: Record<string, ISavedView> = {};
  const byCluster = (value as { views?: unknown } | null)?.views;
  if (!byCluster || typeof byCluster !== 'object') {
    return views;
  }
  for (const [cluster, raw] of Object.entries(byCluster as Record<string, unknown>)) {
    const saved = raw as Partial<Record<keyof ISavedView, unknown>> | null;
    if (
      !saved ||
      !(WHO as readonly unknown[]).includes(saved.who) ||
      ![saved.user, saved.state, saved.name].every(isText) ||
      !Array.isArray(saved.expanded)
    ) {
      continue;
    }
    views[cluster] = {
      who: saved.who as Who,
      user: saved.user as string,
      state: saved.state as string,
      name: saved.name as string,
      expanded: saved.expanded.filter(isText).slice(-MAX_SAVED_EXPANDED)
    };
  }
  return views;
}
