/**
 * A job's tasks by state, as the compact bar on every row draws them. Pure, unit-tested.
 *
 * Rule (Iris's dashboard bar): segments in the display vocabulary's order (`vocabulary.ts`: succeeded,
 * running, building, assigned, failed, worker failed, preempted, killed), then the waiting state —
 * every task `task_state_counts` does not place in one of those (pending, or not reported yet) — each
 * as wide as its share of the job's tasks; empty segments are left out. A job without tasks has no segments.
 */
import { badgeFor } from './badges';
import type { IJob } from './types';
import { STATES, WAITING_STATE } from './vocabulary';

/** States drawn before the rest, which counts as waiting. */
export const SEGMENT_ORDER: readonly string[] = Object.keys(STATES)
  .filter(state => STATES[state].rank !== null && state !== WAITING_STATE)
  .sort((a, b) => (STATES[a].rank ?? 0) - (STATES[b].rank ?? 0));

export interface ISegment {
  state: string;
  count: number;
  /** Share of the job's tasks, 0..1. */
  share: number;
}

/** The bar's segments for `job` (see the module rule). */
export function taskSegments(job: Pick<IJob, 'task_state_counts' | 'replicas'>): ISegment[] {
  const total = job.replicas;
  if (total <= 0) {
    return [];
  }
  const counts = job.task_state_counts;
  const placed = SEGMENT_ORDER.map(state => [state, Math.max(0, counts[state] ?? 0)] as const);
  const rest = total - placed.reduce((sum, [, count]) => sum + count, 0);
  return [...placed, [WAITING_STATE, Math.max(0, rest)] as const]
    .filter(([, count]) => count > 0)
    .map(([state, count]) => ({ state, count, share: count / total }));
}

/** One line for a screen reader and the bar's tooltip: `"2 succeeded, 1 running, 1 pending"`. */
export function segmentsText(segments: readonly ISegment[]): string {
  return segments.map(s => `${s.count} ${badgeFor(s.state).label}`).join(', ') || 'no tasks';
}
