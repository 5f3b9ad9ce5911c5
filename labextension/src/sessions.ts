/**
 * The sidebar's sessions: each session with a host ready, as `%fray jobs` says it (its slice,
 * hosts ready, running a cell or idle and when it releases the slice), and a Stop button that
 * cancels its job (the slice is released; the kernel's session then says it is gone).
 *
 * Rules: read from `GET /fray/sessions?user=<me>` (the hosts' endpoints and each session's job:
 * what the controller holds, never the kernel) when the sidebar shows or its jobs change, then,
 * while the list is on screen: every `REFRESH_MS` while a session is listed (an endpoint has no
 * change feed on a genuine Iris, so its hosts' readiness and idle time are read again); while none
 * is but one of the user's jobs is active (a session is a running job), at intervals growing as the
 * jobs list's do (`nextInterval`, `DEFAULT_BACKOFF`), back to `REFRESH_MS` when its jobs change; with
 * neither, no read until a job changes. Never more often than `REFRESH_MS`, and a read asked for
 * sooner is not dropped but made when `REFRESH_MS` has passed (`throttleDelay`); hidden while there
 * are none; a failed read shows its one line; every session-provided string is set as text.
 */
import { cancelJob, getSessions } from './api';
import { DEFAULT_BACKOFF, nextInterval, throttleDelay } from './backoff';
import { button, el } from './dom';
import type { ISessionRow } from './types';

/** The shortest time between two reads of the sessions. */
export const REFRESH_MS = 2000;

/** One session's row: name, its line, Stop. */
export function sessionRow(session: ISessionRow, onStop: (jobId: string) => void): HTMLElement {
  return el('li', {
    className: 'fj-SessionRow',
    attrs: { 'data-job-id': session.job_id },
    children: [
      el('strong', { className: 'fj-SessionName', text: session.name, attrs: { title: session.job_id } }),
      el('span', { className: 'fj-SessionLine fj-Muted', text: session.line }),
      button('Stop', () => onStop(session.job_id), {
        className: 'fj-Button fj-SessionStop',
        attrs: { 'aria-label': `Stop session ${session.name}`, title: 'Cancel the job: the slice is released' }
      })
    ]
  });
}

export class SessionsView {
  /** `user`: whose sessions (null: everyone's); `onScreen`: whether the list is shown now;
   * `active`: whether one of the user's jobs is active now. */
  constructor(
    private readonly user: () => string | null,
    private readonly onScreen: () => boolean,
    private readonly active: () => boolean
  ) {
    this._list = el('ul', { className: 'fj-SessionList', attrs: { 'aria-label': 'Sessions' } });
    this._note = el('p', { className: 'fj-Muted fj-Wrap' });
    this._head = el('h3', { className: 'fj-SessionsTitle', text: 'Sessions' });
    this.node = el('section', { className: 'fj-Sessions', children: [this._head, this._note, this._list] });
    this.node.hidden = true;
  }

  readonly node: HTMLElement;

  /** Something changed (the sidebar shows, or its jobs changed): read the sessions now, or when
   * `REFRESH_MS` has passed since the last read began (after the one under way), then as the
   * module rules say. */
  refresh(): void {
    this._interval = REFRESH_MS;
    this._request();
  }

  private _request(): void {
    if (this._reading) {
      this._again = true;
      return;
    }
    window.clearTimeout(this._timer);
    const wait = throttleDelay(Date.now(), this._readAt, REFRESH_MS);
    if (wait > 0) {
      this._timer = window.setTimeout(() => this._request(), wait);
      return;
    }
    this._readAt = Date.now();
    void this._read().then(() => {
      const again = this._again;
      this._again = false;
      if (!again && !(this.onScreen() && (this._found || this.active()))) {
        return;
      }
      this._interval = again || this._found ? REFRESH_MS : nextInterval(this._interval, false, DEFAULT_BACKOFF);
      this._timer = window.setTimeout(() => this._request(), this._interval);
    });
  }

  /** Stop reading (the sidebar is gone). */
  dispose(): void {
    window.clearTimeout(this._timer);
  }

  private async _read(): Promise<void> {
    this._reading = true;
    try {
      const user = this.user();
      const { sessions } = await getSessions(user);
      this._note.hidden = true;
      this._list.replaceChildren(...sessions.map(session => sessionRow(session, jobId => void this._stop(jobId))));
      this._head.textContent = `Sessions (${sessions.length})`;
      this.node.hidden = sessions.length === 0;
      this._found = sessions.length > 0;
    } catch (error) {
      this._note.hidden = false;
      this._note.textContent = `sessions: ${String((error as Error).message ?? error)}`;
      this.node.hidden = false;
    } finally {
      this._reading = false;
    }
  }

  private async _stop(jobId: string): Promise<void> {
    try {
      await cancelJob(jobId);
    } catch (error) {
      this._note.hidden = false;
      this._note.textContent = `stop ${jobId}: ${String((error as Error).message ?? error)}`;
    }
    this._readAt = 0;
    this.refresh();
  }

  private _list: HTMLElement;
  private _note: HTMLElement;
  private _head: HTMLElement;
  private _reading = false;
  private _again = false;
  private _found = false;
  private _interval = REFRESH_MS;
  private _readAt = 0;
  private _timer = 0;
}
