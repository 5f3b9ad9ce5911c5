/**
 * The JSON the server extension answers: `I<Name>` is `<Name>` of `fray_jupyter/server/contract.py`,
 * field for field (tests/test_server_contract.py checks it). Times are epoch milliseconds or null;
 * every string that came from a job is data, to be shown as text.
 */

export interface IJob {
  job_id: string;
  parent_job_id: string;
  has_children: boolean;
  name: string;
  user: string;
  state: string;
  terminal: boolean;
  replicas: number;
  completed: number;
  task_state_counts: Record<string, number>;
  failure_count: number;
  preemption_count: number;
  pending_reason: string;
  status_message: string;
  error: string;
  exit_code: number;
  submitted_ms: number | null;
  started_ms: number | null;
  finished_ms: number | null;
  device: string;
  cpu_millicores: number;
  memory_bytes: number;
  disk_bytes: number;
}

export interface IAttempt {
  attempt_id: number;
  state: string;
  exit_code: number;
  error: string;
  worker_failure: boolean;
  started_ms: number | null;
  finished_ms: number | null;
}

export interface ITask {
  task_id: string;
  index: number | null;
  state: string;
  attempt: number;
  attempts: number;
  exit_code: number;
  error: string;
  pending_reason: string;
  worker_id: string;
  started_ms: number | null;
  finished_ms: number | null;
  history: IAttempt[];
  failure_count: number;
  preemption_count: number;
  root_cause: string[];
  status_text: string;
  status_summary: string;
  status_message: string;
}

export interface IRetryLimits {
  max_task_failures: number;
  max_retries_failure: number;
  max_retries_preemption: number;
}

export interface ILogLine {
  task_id: string;
  attempt: number;
  seq: number;
  time_ms: number | null;
  source: string;
  data: string;
  /** Iris's level of the line in lower case (`info`, `error`, ...); `''` when unknown. */
  level: string;
}

export interface IJobPage {
  jobs: IJob[];
  total: number;
  has_more: boolean;
}

export interface IJobDetail {
  job: IJob;
  tasks: ITask[];
  limits: IRetryLimits;
}

export interface ITaskDetail {
  task: ITask;
  limits: IRetryLimits;
}

export interface ICancelResult {
  job: IJob;
}

export interface ILogPage {
  entries: ILogLine[];
  cursor: number;
}

export interface IControllerStatus {
  url: string;
  reachable: boolean;
  error: string | null;
  user: string | null;
  /** The named Marin cluster the server is on; null: the embedded controller (or a URL). */
  cluster: string | null;
  /** The origin of that cluster's own Iris dashboard; null off a named cluster. */
  dashboard_url: string | null;
}

export interface IUserSummary {
  user: string;
  job_state_counts: Record<string, number>;
  task_state_counts: Record<string, number>;
}

/** `GET /fray/users`: every user with work on the controller, the busiest first. */
export interface IUserList {
  users: IUserSummary[];
}

export interface IClusterChoice {
  name: string;
  logged_in: boolean;
}

/** `GET /fray/clusters`: the cluster the server is on and the named clusters the user can pick. */
export interface IClusterList {
  current: string | null;
  /** null, or the one line saying what to install for named clusters. */
  available: string | null;
  clusters: IClusterChoice[];
}

export interface IApiError {
  message: string;
  code: string;
}

/** The query of `GET /fray/jobs` (a request, not an answer). */
export interface IJobQuery {
  state?: string;
  name?: string;
  scope?: 'all' | 'roots' | 'children';
  parent?: string;
  /** One user's jobs (Iris's `job_id_prefix="/<user>/"`); absent: everyone's. */
  user?: string;
  sort?: 'date' | 'name' | 'state' | 'failures' | 'preemptions';
  order?: 'asc' | 'desc';
  offset?: number;
  limit?: number;
}

export interface IPushEvent {
  kind: string;
  source: string;
  jobIds: string[];
  message: string;
}

export interface IOutputFile {
  name: string;
  size: number;
  kind: string;
}

export interface ITaskOutputs {
  task_id: string;
  attempt: number;
  uri: string;
  note: string;
  files: IOutputFile[];
}

export interface IJobOutputs {
  tasks: ITaskOutputs[];
}

/** One endpoint a task registered (an actor): its name, where it is served, the task serving it. */
export interface IEndpoint {
  name: string;
  address: string;
  task_id: string;
  link: string;
}

/** `GET /fray/jobs/<id>/endpoints`: the endpoints registered under the job (its children's too). */
export interface IJobEndpoints {
  endpoints: IEndpoint[];
}

/** One session: its job, slice, hosts ready, whether a cell runs, idle time, and all of it as one line. */
export interface ISessionRow {
  job_id: string;
  name: string;
  state: string;
  device: string;
  hosts: number;
  ready: number;
  running: boolean;
  idle_ms: number | null;
  releases_in_ms: number | null;
  line: string;
}

/** `GET /fray/sessions`: the sessions with a host ready. */
export interface ISessionList {
  sessions: ISessionRow[];
}

/** One `iris.task` sample for a sparkline: when (epoch ms), CPU (millicores), memory (MiB). */
export interface IUsageSample {
  ts: number;
  cpu: number;
  mem: number;
}

/** One task's usage: newest sample, peak, request, recent samples, warning, ready words, signs of life. */
export interface ITaskUsage {
  task_id: string;
  index: number | null;
  state: string;
  now_cpu_millicores: number | null;
  now_memory_mb: number | null;
  peak_memory_mb: number;
  requested_cpu_millicores: number;
  requested_memory_mb: number;
  samples: IUsageSample[];
  warning: string;
  memory_text: string;
  cpu_text: string;
  requested_cpu_text: string;
  status_ms: number | null;
  last_output_ms: number | null;
  quiet_since_ms: number | null;
}

/** A job tree's totals and the one line that says them. */
export interface IUsageTotals {
  cpu_hours: number;
  wall_hours: number;
  peak_memory_mb: number;
  tasks: number;
  text: string;
}

/** `GET /fray/jobs/<id>/usage`: each task's usage, by index, the tree's totals, why there is none. */
export interface IJobUsage {
  job_id: string;
  tasks: ITaskUsage[];
  totals: IUsageTotals;
  note: string;
  silence_after_ms: number;
}

/** One timeline entry: an `iris.task_event` row (`kind` "event") or a state change (`kind` "state"). */
export interface ITimelineEntry {
  kind: string;
  task_id: string;
  attempt_id: number;
  ts_ms: number;
  type: string;
  reason: string;
  message: string;
  source: string;
}

/** `GET /fray/jobs/<id>/events`: the job's task timeline, newest first. */
export interface IJobEvents {
  events: ITimelineEntry[];
}

/** One profile capture of a task: `origin` "server" (this Jupyter server made it) or "controller"
 * (its `iris.profile`; `size` 0: not known until reopened); `note`: why it holds no profile. */
export interface IProfileCapture {
  capture_id: string;
  task_index: number;
  attempt: number | null;
  kind: string;
  format: string;
  seconds: number;
  captured_ms: number;
  size: number;
  origin: string;
  trigger: string;
  note: string;
}

/** `GET /fray/jobs/<id>/profiles`: the job's captures, newest first; why the controller's are not listed. */
export interface IProfileHistory {
  captures: IProfileCapture[];
  note: string;
}

/** A thread dump's lines, each one's kind ("own", "library", "thread", "process", "detail", "other"). */
export interface IThreadDump {
  lines: string[];
  kinds: string[];
  own_frames: number;
}

/** `POST /fray/jobs/<id>/resubmit`: the new job's id and the new job. */
export interface IResubmitResult {
  job_id: string;
  job: IJob;
}

/** A group's accelerator, `CPU` or `memory`: held, asked for by running tasks, left, in words. */
export interface ICapacityResource {
  name: string;
  total: number;
  used: number;
  free: number;
  total_text: string;
  used_text: string;
  free_text: string;
}

/** A scale group ("" for workers of no known group), its availability status (words, tone, reason). */
export interface ICapacityGroup {
  name: string;
  device: string;
  workers: number;
  healthy: number;
  slices: string;
  status: string;
  tone: string;
  reason: string;
  demand: number;
  resources: ICapacityResource[];
}

/** A worker: health in words and tone, tasks on it, the largest share in use, and one line of numbers. */
export interface ICapacityWorker {
  worker_id: string;
  group: string;
  status: string;
  tone: string;
  tasks: number;
  load: number;
  line: string;
  message: string;
}

/** A job with tasks waiting, how many, and the controller's reason. */
export interface ICapacityPending {
  job_id: string;
  tasks: number;
  reason: string;
}

/** `GET /fray/capacity`: groups, workers, the jobs that wait and why; what could not be read. */
export interface ICapacity {
  groups: ICapacityGroup[];
  workers: ICapacityWorker[];
  pending: ICapacityPending[];
  running_tasks: number;
  pending_tasks: number;
  note: string;
}
