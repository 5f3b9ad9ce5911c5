/**
 * The sidebar's state, refreshed by one poll: the controller connection, the listed jobs
 * (`listing.ts`: whose, which, the tree under them), the open job with its tasks, child jobs and
 * followed log, and the watcher that turns "reached a terminal state" into notifications. Views
 * read it and listen to `changed`.
 *
 * Rules:
 * - A connection problem (HTTP 0/502/503/504) sets `connectionError` and keeps the last data on
 *   screen behind a banner; any other failure of a refresh is shown as `actionError`.
 * - While the controller is not known to answer, a refresh asks `GET /fray/status` first (an
 *   answer, not an error, when none runs) and lists nothing until it answers: a page whose
 *   sidebar only watches for notifications never meets a 503 (which browsers log as errors).
 * - Notifications watch the current user's newest root jobs (a coordinator's end notifies, not
 *   each of its steps').
 */
import { ISignal, Signal } from '@lumino/signaling';

import {
  FrayApiError,
  cancelJob,
  getJob,
  getOutputs,
  getStatus,
  getTimeline,
  getUsage,
  listChildren,
  listJobs,
  resubmitJob
} from './api';
import { fingerprint, JobWatcher } from './changes';
import { errorText } from './format';
import { JobListing } from './listing';
import { LogFeed } from './logfeed';
import { DEFAULT_VIEW, pageQuery } from './scope';
import type { IControllerStatus, IJob, IJobUsage, ITask, ITaskOutputs, IRetryLimits, ITimelineEntry } from './types';

/** Child jobs shown in an open job's detail (the list's tree shows them all). */
export const DETAIL_CHILDREN = 50;

export interface IOpenJob {
  job: IJob;
  tasks: ITask[];
  limits: IRetryLimits;
  /** Its first `DETAIL_CHILDREN` child jobs, oldest first, and how many it has (null: none). */
  children: { jobs: IJob[]; total: number } | null;
  /** Its log, read page by page (`logfeed.ts`); each refresh reads the rows written since. */
  log: LogFeed;
  /** What each task wrote under `$IRIS_OUTPUT_DIR`, read once the job has ended (null before). */
  outputs: ITaskOutputs[] | null;
  /** Why the outputs could not be read ('' when they were). */
  outputsError: string;
  /** How its tasks use what they asked for, and what happened to them (`watchOf`). */
  watch: IJobWatch;
}

/** What a job view watches while the job runs: its usage and its task timeline. */
export interface IJobWatch {
  /** Each task's usage and the tree's totals (null: not read, or it could not be: `error`). */
  usage: IJobUsage | null;
  /** The task timeline, newest first (null: not read). */
  timeline: ITimelineEntry[] | null;
  /** Why the last read failed ('' when it did not). */
  error: string;
  /** Reads made since the job ended (`FINAL_READS` more are made, then none). */
  finalReads: number;
}

/** Reads of usage and timeline after the job ended (its last samples and the kill event land then). */
export const FINAL_READS = 2;

/**
 * How often the open job's usage and timeline are read while it runs and the sidebar is shown, ms
 * (`JobsModel.refreshWatch`): half the controller's 1 s sampling interval, so a change shows within
 * about 1.5 s. The rest of the sidebar keeps its own, slower refresh.
 */
export const WATCH_INTERVAL_MS = 500;

/**
 * The usage and timeline of `job`, read on each refresh while it is active and `FINAL_READS` times
 * after it ended, then kept: an idle sidebar or a finished job costs no extra request.
 */
export async function watchOf(job: IJob, last: IJobWatch | null): Promise<IJobWatch> {
  const finalReads = (last?.finalReads ?? 0) + (job.terminal ? 1 : 0);
  if (last !== null && finalReads > FINAL_READS) {
    return last;
  }
  const [usage, timeline] = await Promise.allSettled([getUsage(job.job_id), getTimeline(job.job_id)]);
  const failed = [usage, timeline].find(read => read.status === 'rejected') as PromiseRejectedResult | undefined;
  return {
    usage: usage.status === 'fulfilled' ? usage.value : (last?.usage ?? null),
    timeline: timeline.status === 'fulfilled' ? timeline.value.events : (last?.timeline ?? null),
    error: failed ? errorText(failed.reason) : '',
    finalReads
  };
}

/** The outputs of a finished job (null while it runs), and why they could not be read. */
async function outputsOf(job: IJob): Promise<[ITaskOutputs[] | null, string]> {
  if (!job.terminal) {
    return [null, ''];
  }
  try {
    return [(await getOutputs(job.job_id)).tasks, ''];
  } catch (error) {
    return [[], errorText(error)];
  }
}

/** The open job's child jobs (null when the controller says it has none). */
async function childrenOf(job: IJob): Promise<IOpenJob['children']> {
  if (!job.has_children) {
    return null;
  }
  const page = await listChildren(job.job_id, 0, DETAIL_CHILDREN);
  return { jobs: page.jobs, total: page.total };
}

/** What a refresh of the watch can change: each task's newest sample and sign of life, the timeline's length. */
function watchFingerprint(watch: IJobWatch): string {
  const tasks = watch.usage?.tasks ?? [];
  const samples = tasks.map(t => `${t.samples[t.samples.length - 1]?.ts ?? '-'}:${t.quiet_since_ms}:${t.status_ms}`);
  return `${samples.join(',')}|${watch.timeline?.length ?? '-'}|${watch.error}`;
}

export class JobsModel {
  constructor(now: () => number = Date.now) {
    this.watcher = new JobWatcher(now());
  }

  readonly watcher: JobWatcher;
  status: IControllerStatus | null = null;
  connectionError: string | null = null;
  actionError: string | null = null;
  /** What the last user action did, said once (e.g. "Resubmitted … as …"); null: nothing to say. */
  notice: string | null = null;
  readonly listing = new JobListing();
  open: IOpenJob | null = null;

  /** The current user, as the server resolves it (null: it cannot tell). */
  get me(): string | null {
    return this.status?.user ?? null;
  }

  /** Emits after every refresh or user action that changed what is shown. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emits the jobs of the user that just reached a terminal state. */
  get finished(): ISignal<this, IJob[]> {
    return this._finished;
  }

  /**
   * One refresh of everything shown; resolves to whether anything changed. `start`: let the server
   * start the embedded controller if none runs (only while the user has the sidebar open);
   * `visible`: the sidebar is shown (the tree's children are read only then).
   */
  async refresh(start = false, visible = true): Promise<boolean> {
    const before = this._snapshot();
    try {
      if (this.status === null || this.connectionError !== null) {
        this.status = await getStatus(start);
        this.watcher.user = this.status.user;
        this.listing.useCluster(this.status.cluster ?? '');
        if (!this.status.reachable) {
          const why = this.status.error || `the controller at ${this.status.url || '(no URL)'} does not answer`;
          throw new FrayApiError(why, 503, 'controller_unreachable');
        }
      }
      const me = this.me;
      const watched = this.listing.showsRecent(me) ? null : listJobs(pageQuery(DEFAULT_VIEW, me)); // at the same time
      watched?.catch(() => undefined); // handled below, unless the page's own read fails first
      const page = await this.listing.refresh(me, start, visible);
      const recent = watched === null ? page.jobs : (await watched).jobs;
      this.connectionError = null;
      const done = this.watcher.update(recent);
      if (this.open !== null) {
        await this._refreshOpen(this.open);
      }
      if (done.length) {
        this._finished.emit(done);
      }
    } catch (error) {
      this._fail(error);
    }
    const changed = this._snapshot() !== before;
    if (changed) {
      this._changed.emit();
    }
    return changed;
  }

  /** The server was switched to another cluster: forget what was shown (the next refresh reloads it). */
  clusterSwitched(): void {
    this.status = null;
    this.listing.forget();
    this.open = null;
    this.connectionError = null;
    this.actionError = null;
    this._changed.emit();
  }

  /** Show a one-line error that did not come from a refresh (e.g. switching clusters failed). */
  showError(message: string): void {
    this.actionError = message;
    this._changed.emit();
  }

  /** Expand or collapse a parent in the list; shows its children once they are read. */
  async toggle(jobId: string): Promise<void> {
    const reading = this.listing.toggle(jobId);
    this._changed.emit(); // the ▾ and a "loading" row at once
    await this._tree(reading);
  }

  /** The next page of a parent's children. */
  async more(parent: string): Promise<void> {
    await this._tree(this.listing.tree.more(parent));
  }

  /** Read a parent's children again (after a failed read). */
  async retry(parent: string): Promise<void> {
    this.listing.invalidate([parent]);
    await this._tree(this.listing.tree.refresh(this.listing.page?.jobs ?? [], new Set([parent])));
  }

  /** Read the users the picker offers (a failure is shown, the last list kept). */
  async loadUsers(): Promise<void> {
    try {
      await this.listing.loadUsers();
    } catch (error) {
      this._fail(error);
    }
    this._changed.emit();
  }

  /** Whether the open job's usage and timeline are worth reading between refreshes: it runs, or it
   * ended and its `FINAL_READS` are not all made. */
  get watching(): boolean {
    const open = this.open;
    return open !== null && (!open.job.terminal || open.watch.finalReads < FINAL_READS);
  }

  /**
   * Read only the open job's usage and timeline, while `watching`; resolves to whether what is shown changed.
   * A read started before another one's answer never replaces it (`_watchOf`).
   */
  async refreshWatch(): Promise<boolean> {
    const open = this.open;
    if (open === null || !this.watching) {
      return false;
    }
    const before = watchFingerprint(open.watch);
    const watch = await this._watchOf(open.job, open.watch);
    if (this.open?.job.job_id !== open.job.job_id || watchFingerprint(watch) === before) {
      return false;
    }
    this.open = { ...this.open, watch };
    this._changed.emit();
    return true;
  }

  /** Open a job: its detail and the newest log lines; then follow the log by cursor. */
  async openJob(jobId: string): Promise<void> {
    this.notice = null;
    try {
      const detail = await getJob(jobId);
      const children = await childrenOf(detail.job);
      const log = new LogFeed(jobId);
      await log.open();
      const [outputs, outputsError] = await outputsOf(detail.job);
      const watch = await this._watchOf(detail.job, null);
      this.open = { ...detail, children, log, outputs, outputsError, watch };
      this.actionError = null;
    } catch (error) {
      this._fail(error);
    }
    this._changed.emit();
  }

  /** Back to the list: the open job (and its log feed) is dropped. */
  closeJob(): void {
    this.open = null;
    this.notice = null;
    this._changed.emit();
  }

  /** Send the job's request again as a new job, then open the new one and say so; resolves to its id
   * (null when refused: the one line why is `actionError`). */
  async resubmit(jobId: string): Promise<string | null> {
    let newId: string;
    try {
      newId = (await resubmitJob(jobId)).job_id;
      this.actionError = null;
    } catch (error) {
      this._fail(error);
      this._changed.emit();
      return null;
    }
    this.listing.invalidate(null);
    await this.openJob(newId);
    this.notice = `Resubmitted ${jobId} as ${newId}.`;
    this._changed.emit();
    return newId;
  }

  /** Terminate a job (the caller has asked for confirmation). */
  async cancel(jobId: string): Promise<void> {
    try {
      const { job } = await cancelJob(jobId);
      if (this.open?.job.job_id === jobId) {
        this.open = { ...this.open, job };
      }
      this.actionError = null;
    } catch (error) {
      this._fail(error);
    }
    this._changed.emit();
  }

  private async _refreshOpen(open: IOpenJob): Promise<void> {
    const id = open.job.job_id;
    const detail = await getJob(id);
    const children = await childrenOf(detail.job);
    await open.log.poll();
    const [outputs, outputsError] =
      open.outputs === null ? await outputsOf(detail.job) : [open.outputs, open.outputsError];
    const watch = await this._watchOf(detail.job, open.watch);
    if (this.open?.job.job_id !== id) {
      return; // closed or switched meanwhile
    }
    this.open = { ...detail, children, log: open.log, outputs, outputsError, watch };
  }

  /** `watchOf`, unless a read started later has already answered: then what that one read. */
  private async _watchOf(job: IJob, last: IJobWatch | null): Promise<IJobWatch> {
    const started = ++this._watchReads;
    const watch = await watchOf(job, last);
    if (started < this._watchShown && this.open?.job.job_id === job.job_id) {
      return this.open.watch;
    }
    this._watchShown = started;
    return watch;
  }

  private async _tree(reading: Promise<void>): Promise<void> {
    await reading;
    this._changed.emit();
  }

  private _fail(error: unknown): void {
    if (error instanceof FrayApiError && error.isConnectionProblem) {
      this.connectionError = error.message;
    } else {
      this.actionError = errorText(error);
    }
  }

  /** What a refresh can change, compared before and after to decide whether to back off. */
  private _snapshot(): string {
    const open = this.open;
    return [
      this.connectionError ?? '',
      this.actionError ?? '',
      this.status?.url ?? '',
      this.listing.fingerprint(),
      open
        ? `${open.job.state}|${open.job.completed}|${open.log.version}|${open.tasks.map(t => `${t.state}:${t.attempts}:${t.status_summary}`).join(',')}|${open.outputs?.length ?? '-'}|${open.children ? fingerprint(open.children.jobs) : '-'}`
        : '-',
      open ? watchFingerprint(open.watch) : '-'
    ].join('\n#\n');
  }

  /** Watch reads started, and the newest of them whose answer is shown. */
  private _watchReads = 0;
  private _watchShown = 0;
  private _changed = new Signal<this, void>(this);
  private _finished = new Signal<this, IJob[]>(this);
}
