/**
 * Calls to the server extension's REST API under `<base_url>/fray/`.
 *
 * Rules: every call goes through `ServerConnection.makeRequest` (Jupyter's token and XSRF
 * header); a job id travels as one `encodeURIComponent`-ed path segment; any failure is a
 * `FrayApiError` carrying the server's one-line message, its HTTP status (0: the Jupyter server
 * itself did not answer) and a short code. `start: true` lets the server start the embedded
 * controller when none runs (the sidebar asks for it only while it is open).
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type {
  IApiError,
  ICancelResult,
  ICapacity,
  IClusterList,
  IControllerStatus,
  IJobDetail,
  IJobEndpoints,
  IJobEvents,
  IJobOutputs,
  IJobPage,
  IJobQuery,
  IJobUsage,
  ILogPage,
  IProfileHistory,
  IResubmitResult,
  ISessionList,
  IThreadDump,
  IUserList
} from './types';

/** A failed call: `status` 0 when the Jupyter server did not answer at all. */
export class FrayApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string
  ) {
    super(message);
    this.name = 'FrayApiError';
  }

  /** The controller (or the Jupyter server) is unreachable: a connection banner, not a job error. */
  get isConnectionProblem(): boolean {
    return this.status === 0 || this.status === 502 || this.status === 503 || this.status === 504;
  }
}

/** The URL of `path` (segments already encoded) under the server extension's `<base_url>/fray/`. */
export function frayUrl(path: string[], settings = ServerConnection.makeSettings()): string {
  return URLExt.join(settings.baseUrl, 'fray', ...path);
}

/** `text` as JSON (null when it is empty or not JSON). */
function parsed(text: string): any {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

/** The answer to one call; a failed one (or no answer) is a `FrayApiError`. */
async function send(path: string[], init: RequestInit = {}, query: Record<string, string> = {}): Promise<Response> {
  const settings = ServerConnection.makeSettings();
  const search = new URLSearchParams(query).toString();
  const url = frayUrl(path, settings) + (search ? `?${search}` : '');
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new FrayApiError(`cannot reach the Jupyter server: ${String(error)}`, 0, 'server_unreachable');
  }
  if (!response.ok) {
    const error = parsed(await response.text()) as Partial<IApiError> | null; // the Jupyter server's own may differ
    const message = error?.message || `${response.status} ${response.statusText}`;
    throw new FrayApiError(String(message), response.status, String(error?.code ?? 'http_error'));
  }
  return response;
}

async function request<T>(path: string[], init: RequestInit = {}, query: Record<string, string> = {}): Promise<T> {
  const response = await send(path, init, query);
  return parsed(await response.text()) as T;
}

function jobPath(jobId: string, ...rest: string[]): string[] {
  return ['jobs', encodeURIComponent(jobId), ...rest];
}

/** The controller the server reaches, whether it answers, and the current user. */
export function getStatus(start = false): Promise<IControllerStatus> {
  return request<IControllerStatus>(['status'], {}, start ? { start: '1' } : {});
}

/** One page of jobs. */
export function listJobs(query: IJobQuery = {}, start = false): Promise<IJobPage> {
  const params: Record<string, string> = start ? { start: '1' } : {};
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') {
      params[key] = String(value);
    }
  }
  return request<IJobPage>(['jobs'], {}, params);
}

/** One page of `parent`'s child jobs from `offset`, oldest first (what the tree and an open job's detail list). */
export function listChildren(parent: string, offset: number, limit: number): Promise<IJobPage> {
  return listJobs({ scope: 'children', parent, sort: 'date', order: 'asc', offset, limit });
}

/** Every user with work on the controller (Iris's `ListUsers`), the busiest first. */
export function listUsers(): Promise<IUserList> {
  return request<IUserList>(['users']);
}

/** A job and its tasks. */
export function getJob(jobId: string): Promise<IJobDetail> {
  return request<IJobDetail>(jobPath(jobId));
}

/** What `getLogs` may ask besides the cursor (the filters run on the controller). */
export interface ILogQuery {
  /** The newest `maxLines` instead of the oldest. */
  tail?: boolean;
  maxLines?: number;
  /** Only lines before this cursor (with `tail`: the page just before it). */
  before?: number;
  /** Only lines containing this text. */
  substring?: string;
  /** Only lines of this level or above (Iris's levels in lower case). */
  minLevel?: string;
}

/** Log lines after `cursor` (or the newest `maxLines` with `tail`), filtered as `options` says. */
export function getLogs(jobId: string, cursor = 0, options: ILogQuery = {}): Promise<ILogPage> {
  const query: Record<string, string> = { cursor: String(cursor) };
  if (options.tail) {
    query.tail = '1';
  }
  if (options.maxLines) {
    query.max_lines = String(options.maxLines);
  }
  if (options.before) {
    query.before = String(options.before);
  }
  if (options.substring) {
    query.substring = options.substring;
  }
  if (options.minLevel) {
    query.min_level = options.minLevel;
  }
  return request<ILogPage>(jobPath(jobId, 'logs'), {}, query);
}

/** Where the browser downloads the job's whole log (a text file, streamed by the server). */
export function logDownloadUrl(jobId: string): string {
  return frayUrl(jobPath(jobId, 'logs', 'download'));
}

/** Terminate the job; resolves to its status afterwards. */
export function cancelJob(jobId: string): Promise<ICancelResult> {
  return request<ICancelResult>(jobPath(jobId, 'cancel'), { method: 'POST' });
}

/** Each task's CPU and memory (newest, peak, recent samples), its warning and signs of life, and the tree's totals. */
export function getUsage(jobId: string): Promise<IJobUsage> {
  return request<IJobUsage>(jobPath(jobId, 'usage'));
}

/** The job's task timeline (Iris's task events and the tasks' state changes), newest first. */
export function getTimeline(jobId: string): Promise<IJobEvents> {
  return request<IJobEvents>(jobPath(jobId, 'events'));
}

/** The cluster the server is on and the named clusters the user has. */
export function getClusters(): Promise<IClusterList> {
  return request<IClusterList>(['clusters']);
}

/** Switch the server to a named cluster (`''`: the embedded controller); resolves to the new listing. */
export function selectCluster(name: string): Promise<IClusterList> {
  return request<IClusterList>(['clusters'], { method: 'POST' }, { cluster: name });
}

/** What each task's current attempt wrote under `$IRIS_OUTPUT_DIR`. */
export function getOutputs(jobId: string): Promise<IJobOutputs> {
  return request<IJobOutputs>(jobPath(jobId, 'outputs'));
}

/** The endpoints (actors) registered under a job and the jobs below it. */
export function getEndpoints(jobId: string): Promise<IJobEndpoints> {
  return request<IJobEndpoints>(jobPath(jobId, 'endpoints'));
}

/** The URL of one output file (shown inline when it is an image or text, else downloaded). */
export function outputFileUrl(jobId: string, taskIndex: number, name: string): string {
  return frayUrl([...jobPath(jobId, 'outputs', String(taskIndex)), ...name.split('/').map(encodeURIComponent)]);
}

/** The text of one output file. */
export async function getOutputText(jobId: string, taskIndex: number, name: string): Promise<string> {
  const response = await ServerConnection.makeRequest(
    outputFileUrl(jobId, taskIndex, name),
    {},
    ServerConnection.makeSettings()
  );
  if (!response.ok) {
    throw new FrayApiError(`${response.status} ${response.statusText}`, response.status, 'http_error');
  }
  return response.text();
}

/** The sessions (with a host ready) of `user` (null: everyone's). */
export function getSessions(user: string | null): Promise<ISessionList> {
  return request<ISessionList>(['sessions'], {}, user ? { user } : {});
}

/** Send the job's stored request again as a new job (`<name>-r2`, …); resolves to the new job. */
export function resubmitJob(jobId: string): Promise<IResubmitResult> {
  return request<IResubmitResult>(jobPath(jobId, 'resubmit'), { method: 'POST' });
}

/** The cluster's scale groups and workers (total, used, free), and the jobs that wait and why. */
export function getCapacity(): Promise<ICapacity> {
  return request<ICapacity>(['capacity']);
}

/** One profile capture as the server serves it: its id in the history, kind and format, media type,
 * bytes, and why it holds no profile (`''` when it holds one). */
export interface ICaptureData {
  captureId: string;
  kind: string;
  format: string;
  mediaType: string;
  bytes: ArrayBuffer;
  empty: string;
}

async function captureOf(response: Response): Promise<ICaptureData> {
  const [kind, format] = (response.headers.get('X-Fray-Profile-Format') ?? '/').split('/');
  return {
    captureId: response.headers.get('X-Fray-Capture') ?? '',
    kind,
    format,
    mediaType: response.headers.get('Content-Type') ?? 'application/octet-stream',
    bytes: await response.arrayBuffer(),
    empty: decodeURIComponent(response.headers.get('X-Fray-Profile-Empty') ?? '')
  };
}

/** Capture a `kind` profile (cpu, memory, threads) of task `index` for `seconds`; kept in the history. */
export async function profileTask(jobId: string, index: number, kind: string, seconds: number): Promise<ICaptureData> {
  const query = { kind, ...(kind === 'threads' ? {} : { seconds: String(seconds) }) };
  return captureOf(await send(jobPath(jobId, 'tasks', String(index), 'profile'), { method: 'POST' }, query));
}

/** The job's profile history: this server's captures and the controller's, newest first. */
export function getProfiles(jobId: string): Promise<IProfileHistory> {
  return request<IProfileHistory>(jobPath(jobId, 'profiles'));
}

/** One capture of the history again. */
export async function getCapture(jobId: string, captureId: string): Promise<ICaptureData> {
  return captureOf(await send(jobPath(jobId, 'profiles', encodeURIComponent(captureId))));
}

/** A thread dump of the history as lines, the task's own frames told from library frames. */
export function getThreadDump(jobId: string, captureId: string): Promise<IThreadDump> {
  return request<IThreadDump>(jobPath(jobId, 'profiles', encodeURIComponent(captureId)), {}, { view: 'lines' });
}
