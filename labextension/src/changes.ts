/**
 * What changed between two refreshes. Pure, unit-tested.
 *
 * Rules:
 * - `fingerprint` summarises what the list shows that can change (state, progress, failures), so an
 *   unchanged fingerprint means the refresh changed nothing and the poll may back off.
 * - `JobWatcher.update` returns the jobs that reached a terminal state since the watcher last saw
 *   them: a job seen active before and terminal now, or a job first seen already terminal that was
 *   submitted after the watcher started (it ran between two refreshes). Jobs already finished when
 *   the watcher started never notify. Only the given user's jobs count (all when user is null).
 * - `JobWatcher.active` says whether the last update held one of those jobs still active (pending,
 *   building or running): what a user can have going on, a session among it, is an active job.
 */
import { isActive } from './badges';
import type { IJob } from './types';

/** A string that changes whenever anything the list shows about these jobs changes. */
export function fingerprint(jobs: readonly IJob[]): string {
  return jobs
    .map(j => `${j.job_id}|${j.state}|${j.completed}/${j.replicas}|${j.failure_count}|${j.preemption_count}`)
    .join('\n');
}

export class JobWatcher {
  /**
   * @param since - epoch ms when watching started (jobs submitted before and first seen finished
   *   are old news).
   * @param user - whose jobs notify; null: everyone's.
   */
  constructor(
    readonly since: number,
    public user: string | null = null
  ) {}

  /** Record `jobs` and return those that have just reached a terminal state. */
  update(jobs: readonly IJob[]): IJob[] {
    const finished: IJob[] = [];
    this._active = jobs.some(job => isActive(job.state) && (this.user === null || job.user === this.user));
    for (const job of jobs) {
      const before = this._seen.get(job.job_id);
      this._seen.set(job.job_id, job.state);
      if (isActive(job.state) || (this.user !== null && job.user !== this.user)) {
        continue;
      }
      const wasActive = before !== undefined && isActive(before);
      const newAndQuick = before === undefined && (job.submitted_ms ?? 0) >= this.since;
      if (wasActive || newAndQuick) {
        finished.push(job);
      }
    }
    return finished;
  }

  /** Whether the last `update` held a job of the user still active (the module rules). */
  get active(): boolean {
    return this._active;
  }

  private _seen = new Map<string, string>();
  private _active = false;
}
