/**
 * "Look inside" the open job's tasks, one line per task under the tasks table (the table is wider
 * than the sidebar: buttons in its rows would be out of sight): CPU, Memory and Threads buttons,
 * and the task's profile history. CPU and Memory capture `CAPTURE_SECONDS` seconds (saying "profiling… 5 s",
 * counting down, while the rest of the sidebar carries on); Threads dumps every thread's stack. Each
 * capture opens in a main-area tab (`capture.ts`) and joins the history, where any capture — this
 * server's, or one the controller keeps in `iris.profile` — opens again.
 *
 * Rules:
 * - Only a running task can be looked inside: for any other, the buttons are disabled and their
 *   tooltip says the task's state (the display vocabulary's word). One capture per task at a time.
 * - A capture that could not be made (the controller's reason, or the refusal of another user's
 *   job) is shown under the buttons in the sidebar's error style; a capture that holds no profile
 *   opens a tab that says why.
 * - The history is read when the job opens, after each capture, and when a task's list is opened —
 *   never on a timer, so an idle sidebar asks nothing more.
 * - A task's block is kept (and re-attached) across refreshes of the same job. An active job shows
 *   its first `MAX_TASK_LINES` tasks; a finished one only those with captures to open again.
 */
import { getCapture, getProfiles, getThreadDump, profileTask } from './api';
import type { ICaptureData } from './api';
import { badgeFor } from './badges';
import { button, el } from './dom';
import { errorText, formatBytes } from './format';
import { KIND_LABELS } from './capture';
import type { IOpenCapture } from './capture';
import type { IProfileCapture, IProfileHistory, ITask } from './types';

/** Seconds a CPU or memory capture samples the task. */
export const CAPTURE_SECONDS = 5;
/** Tasks of a job given a line of their own. */
export const MAX_TASK_LINES = 32;
const KINDS = ['cpu', 'memory', 'threads'] as const;
const RUNNING = 'running';

/** Why a task cannot be looked inside now ('' when it can: it runs). */
export function notRunningReason(state: string): string {
  if (state === RUNNING) {
    return '';
  }
  return `The task is ${badgeFor(state).label}: only a ${badgeFor(RUNNING).label} task can be profiled.`;
}

/** One line of the history: what, when, how long, how big, and whether Iris took it on its own schedule. */
export function captureText(capture: IProfileCapture): string {
  const parts = [KIND_LABELS[capture.kind] ?? capture.kind, new Date(capture.captured_ms).toLocaleTimeString()];
  if (capture.kind !== 'threads' && capture.seconds) {
    parts.push(`${capture.seconds} s`);
  }
  if (capture.size) {
    parts.push(formatBytes(capture.size));
  }
  if (capture.trigger === 'periodic') {
    parts.push('periodic');
  }
  return parts.join(' · ');
}

/** One task's buttons, state line, error line and history. */
class TaskInspect {
  constructor(
    private readonly owner: InspectView,
    taskId: string,
    readonly index: number,
    label: string
  ) {
    this._buttons = KINDS.map(kind =>
      button(KIND_LABELS[kind], () => void this._capture(kind), {
        className: 'fj-Button fj-Inspect-button',
        attrs: { 'data-kind': kind, 'aria-label': `${KIND_LABELS[kind]} profile of task ${index}` }
      })
    );
    this._history.addEventListener('toggle', () => {
      if (this._history.open) {
        void this.owner.load();
      }
    });
    this.node = el('div', {
      className: 'fj-Inspect',
      attrs: { 'data-task-id': taskId },
      children: [
        el('div', {
          className: 'fj-Inspect-bar',
          children: [
            el('span', { className: 'fj-Inspect-label', text: label }),
            ...this._buttons,
            this._state,
            this._history
          ]
        }),
        this._error
      ]
    });
    this._error.hidden = true;
    this._history.hidden = true;
  }

  readonly node: HTMLElement;
  /** How many captures of the task the history lists. */
  captures = 0;

  /** Follow the task's state (buttons on for a running task only). */
  update(task: ITask): void {
    this._why = notRunningReason(task.state);
    this._paint();
  }

  /** Show the task's captures from the job's history. */
  list(history: IProfileHistory | null): void {
    const mine = (history?.captures ?? []).filter(capture => capture.task_index === this.index);
    this.captures = mine.length;
    this._summary.textContent = `Profiles (${mine.length})`;
    this._history.hidden = mine.length === 0 && !history?.note;
    this._list.replaceChildren(
      ...mine.map(capture =>
        el('li', {
          className: 'fj-Profile',
          attrs: { 'data-capture-id': capture.capture_id, 'data-kind': capture.kind },
          children: [
            button(captureText(capture), () => void this._reopen(capture), {
              className: 'fj-Link fj-Profile-open',
              attrs: { title: capture.origin === 'controller' ? 'Kept by the controller (iris.profile)' : 'Open again' }
            }),
            capture.note ? el('span', { className: 'fj-Muted fj-Wrap', text: ` ${capture.note}` }) : null
          ]
        })
      ),
      ...(history?.note ? [el('li', { className: 'fj-Muted fj-Wrap', text: history.note })] : [])
    );
  }

  private _paint(): void {
    for (const node of this._buttons) {
      node.disabled = this._why !== '' || this._busy;
      node.title = this._why || (this._busy ? 'A capture of this task is under way' : node.getAttribute('aria-label')!);
    }
  }

  private async _capture(kind: string): Promise<void> {
    const seconds = kind === 'threads' ? 0 : CAPTURE_SECONDS;
    this._busy = true;
    this._error.hidden = true;
    this._paint();
    let left = seconds;
    const say = (): void => {
      this._state.textContent =
        kind === 'threads' ? 'dumping threads…' : left > 0 ? `profiling… ${left} s` : 'reading the profile…';
    };
    say();
    const timer = window.setInterval(() => {
      left -= 1;
      say();
    }, 1000);
    try {
      const capture = await profileTask(this.owner.jobId, this.index, kind, seconds);
      await this._show(capture, Date.now(), seconds);
      void this.owner.load();
    } catch (error) {
      this._fail(`${KIND_LABELS[kind]}: ${errorText(error)}`);
    } finally {
      window.clearInterval(timer);
      this._state.textContent = '';
      this._busy = false;
      this._paint();
    }
  }

  private async _reopen(capture: IProfileCapture): Promise<void> {
    this._error.hidden = true;
    try {
      await this._show(await getCapture(this.owner.jobId, capture.capture_id), capture.captured_ms, capture.seconds);
    } catch (error) {
      this._fail(`${KIND_LABELS[capture.kind] ?? capture.kind}: ${errorText(error)}`);
    }
  }

  private async _show(capture: ICaptureData, capturedMs: number, seconds: number): Promise<void> {
    const dump =
      capture.kind === 'threads' && !capture.empty ? await getThreadDump(this.owner.jobId, capture.captureId) : null;
    this.owner.open({ jobId: this.owner.jobId, taskIndex: this.index, capture, capturedMs, seconds, dump });
  }

  private _fail(message: string): void {
    this._error.hidden = false;
    this._error.textContent = message;
  }

  private _buttons: HTMLButtonElement[];
  private _state = el('span', { className: 'fj-Inspect-state fj-Muted', attrs: { role: 'status' } });
  private _error = el('div', { className: 'fj-Error fj-Inspect-error', attrs: { role: 'alert' } });
  private _summary = el('summary', { text: 'Profiles (0)' });
  private _list = el('ul', { className: 'fj-Profiles-list' });
  private _history = el('details', { className: 'fj-Profiles', children: [this._summary, this._list] });
  private _why = '';
  private _busy = false;
}

/** The open job's "Look inside" blocks by task id, and its profile history (module rules). */
export class InspectView {
  /** `open`: show a capture in a main-area tab; `loaded`: the history was read (a finished job's
   * lines depend on it). */
  constructor(
    readonly open: (capture: IOpenCapture) => void,
    private readonly loaded: () => void
  ) {}

  /** The job whose tasks are shown. */
  get jobId(): string {
    return this._jobId;
  }

  /** Show `jobId` (another job: forget the blocks and read its history). */
  show(jobId: string): void {
    if (jobId === this._jobId) {
      return;
    }
    this._jobId = jobId;
    this._blocks.clear();
    this._history = null;
    void this.load();
  }

  /** The lines of `tasks` (module rules: an active job's first ones, a finished job's with captures). */
  blocks(tasks: readonly ITask[], finished: boolean): HTMLElement[] {
    const shown = tasks.slice(0, MAX_TASK_LINES).map(task => this._block(task, tasks.length > 1));
    return shown.filter(block => !finished || block.captures > 0).map(block => block.node);
  }

  private _block(task: ITask, many: boolean): TaskInspect {
    let block = this._blocks.get(task.task_id);
    if (!block) {
      const index = task.index ?? 0;
      block = new TaskInspect(this, task.task_id, index, many ? `Task ${index}: ` : 'Look inside: ');
      block.list(this._history);
      this._blocks.set(task.task_id, block);
    }
    block.update(task);
    return block;
  }

  /** Read the job's profile history again and list it under each task. */
  async load(): Promise<void> {
    const jobId = this._jobId;
    let history: IProfileHistory;
    try {
      history = await getProfiles(jobId);
    } catch (error) {
      history = { captures: this._history?.captures ?? [], note: `profiles: ${errorText(error)}` };
    }
    if (jobId !== this._jobId) {
      return; // another job was opened meanwhile
    }
    this._history = history;
    this._blocks.forEach(block => block.list(history));
    this.loaded();
  }

  private _jobId = '';
  private _history: IProfileHistory | null = null;
  private _blocks = new Map<string, TaskInspect>();
}
