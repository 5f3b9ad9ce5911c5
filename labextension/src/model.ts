/**
 * The sidebar's state, refreshed by one poll: the controller connection, the listed page of jobs
 * (with the user's filters), the open job with its tasks and followed log, and the watcher that
 * turns "reached a terminal state" into notifications. Views read it and listen to `changed`.
 *
 * Rule: a connection problem (HTTP 0/502/503/504) sets `connectionError` and keeps the last data
 * on screen behind a banner; any other failure of a refresh is shown as `actionError`.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { FrayApiError, cancelJob, getJob, getOutputs, getStatus, listJobs } from './api';
import { fingerprint, JobWatcher } from './changes';
import { LogFeed } from './logfeed';
import type { IControllerStatus, IJob, IJobPage, ITask, ITaskOutputs } from './types';

export const PAGE_SIZE = 50;

export interface IFilters {
  state: string;
  name: string;
}

export interface IOpenJob {
  job: IJob;
  tasks: ITask[];
  /** Its log, read page by page (`logfeed.ts`); each refresh reads the rows written since. */
  log: LogFeed;
  /** What each task wrote under `$IRIS_OUTPUT_DIR`, read once the job has ended (null before). */
  outputs: ITaskOutputs[] | null;
  /** Why the outputs could not be read ('' when they were). */
  outputsError: string;
}

/** The outputs of a finished job (null while it runs), and why they could not be read. */
async function outputsOf(job: IJob): Promise<[ITaskOutputs[] | null, string]> {
  if (!job.terminal) {
    return [null, ''];
  }
  try {
    return [(await getOutputs(job.job_id)).tasks, ''];
  } catch (error) {
    return [[], error instanceof Error ? error.message : String(error)];
  }
}

export class JobsModel {
  constructor(now: () => number = Date.now) {
    this.watcher = new JobWatcher(now());
  }

  readonly watcher: JobWatcher;
  status: IControllerStatus | null = null;
  connectionError: string | null = null;
  actionError: string | null = null;
  page: IJobPage | null = null;
  filters: IFilters = { state: '', name: '' };
  offset = 0;
  open: IOpenJob | null = null;

  /** Emits after every refresh or user action that changed what is shown. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emits the jobs of the user that just reached a terminal state. */
  get finished(): ISignal<this, IJob[]> {
    return this._finished;
  }

  get filtered(): boolean {
    return this.filters.state !== '' || this.filters.name !== '' || this.offset > 0;
  }

  /**
   * One refresh of everything shown; resolves to whether anything changed. `start`: let the server
   * start the embedded controller if none runs (only while the user has the sidebar open).
   */
  async refresh(start = false): Promise<boolean> {
    const before = this._snapshot();
    try {
      if (this.status === null || this.connectionError !== null) {
        this.status = await getStatus(start);
        this.watcher.user = this.status.user;
      }
      const page = await listJobs({ ...this.filters, offset: this.offset, limit: PAGE_SIZE }, start);
      const recent = this.filtered ? (await listJobs({ limit: PAGE_SIZE })).jobs : page.jobs;
      this.page = page;
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
    this.page = null;
    this.open = null;
    this.offset = 0;
    this.connectionError = null;
    this.actionError = null;
    this._changed.emit();
  }

  /** Show a one-line error that did not come from a refresh (e.g. switching clusters failed). */
  showError(message: string): void {
    this.actionError = message;
    this._changed.emit();
  }

  setFilters(filters: Partial<IFilters>): void {
    this.filters = { ...this.filters, ...filters };
    this.offset = 0;
    this._changed.emit();
  }

  setOffset(offset: number): void {
    this.offset = Math.max(0, offset);
    this._changed.emit();
  }

  /** Open a job: its detail and the newest log lines; then follow the log by cursor. */
  async openJob(jobId: string): Promise<void> {
    try {
      const detail = await getJob(jobId);
      const log = new LogFeed(jobId);
      await log.open();
      const [outputs, outputsError] = await outputsOf(detail.job);
      this.open = { ...detail, log, outputs, outputsError };
      this.actionError = null;
    } catch (error) {
      this._fail(error);
    }
    this._changed.emit();
  }

  closeJob(): void {
    this.open = null;
    this._changed.emit();
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
    await open.log.poll();
    const [outputs, outputsError] = open.outputs === null ? await outputsOf(detail.job) : [open.outputs, open.outputsError];
    if (this.open?.job.job_id !== id) {
      return; // closed or switched meanwhile
    }
    this.open = { ...detail, log: open.log, outputs, outputsError };
  }

  private _fail(error: unknown): void {
    if (error instanceof FrayApiError && error.isConnectionProblem) {
      this.connectionError = error.message;
    } else {
      this.actionError = error instanceof Error ? error.message : String(error);
    }
  }

  /** What a refresh can change, compared before and after to decide whether to back off. */
  private _snapshot(): string {
    const open = this.open;
    return [
      this.connectionError ?? '',
      this.actionError ?? '',
      this.status?.url ?? '',
      this.page ? `${this.page.total}\n${fingerprint(this.page.jobs)}` : '-',
      open
        ? `${open.job.state}|${open.job.completed}|${open.log.version}|${open.tasks.map(t => t.state).join(',')}|${open.outputs?.length ?? '-'}`
        : '-'
    ].join('\n#\n');
  }

  private _changed = new Signal<this, void>(this);
  private _finished = new Signal<this, IJob[]>(this);
}
