/**
 * The open job's tasks, as much as the controller says about each: its state, attempts and exit
 * code, why it waits or failed, and below it (when there is any) the status text it reports
 * (Levanter's step, loss, ETA and W&B link: markdown, as the panel shows it, `statustext.ts`), the
 * likely root cause of a failure (Iris's highlights, the exception line last and in bold), and
 * every attempt — each retry is one — with what they charged against the job's limits. Everything
 * else job-provided is rendered as the log view renders a line (`ansi.ts`: colours kept, other
 * escapes dropped, `http(s)` addresses as links opened in a new tab with `noopener`), never as HTML.
 *
 * With the job's usage (`usage.ts`) each row also has Iris's MEM, PEAK MEM and CPU cells, the status
 * text its age ("reported 4 min ago"), and a running task silent for too long "no output for 12 min".
 *
 * Rule: what the user opened (a `<details>`) stays open across refreshes of the same job.
 */
import { lineSpans } from './ansi';
import { isActive } from './badges';
import { badge, el, spanNode } from './dom';
import { counted, formatDuration, taskRetriesText } from './format';
import { statusSpans } from './statustext';
import type { IAttempt, IRetryLimits, ITask, ITaskUsage } from './types';
import { silenceText, statusAgeText, usageCells } from './usage';

/** The tasks table's columns (`taskRows` fills them in this order). */
export const TASK_COLUMNS: readonly string[] = ['#', 'State', 'Attempts', 'Exit', 'Mem', 'Peak', 'CPU', 'Note'];

/** What the job's usage adds to its task rows: each task's usage by task id, the time now, and the
 * server's silence threshold (ms). */
export interface ITaskWatch {
  usage: ReadonlyMap<string, ITaskUsage>;
  now: number;
  silenceAfterMs: number;
}

/** `text` as a log line shows it (`ansi.ts`: colours, links, no raw escapes), line by line. */
function ansiLines(text: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  text.split('\n').forEach((line, index) => {
    fragment.append(...(index ? ['\n'] : []), ...lineSpans(line).map(spanNode));
  });
  return fragment;
}

/** Where JupyterLab's ANSI classes colour `children`: a `jp-RenderedText` (no box of its own) around them. */
function ansiArea(children: Node[]): HTMLElement {
  return el('div', { className: 'jp-RenderedText fj-Ansi', children });
}

/** `text` as a log line shows it, inline (an inline `pre` in `ansiArea`). */
export function linkedText(text: string): HTMLElement {
  const pre = el('pre', { className: 'fj-AnsiText' });
  pre.append(ansiLines(text));
  return ansiArea([pre]);
}

function details(summary: string, key: string, open: ReadonlySet<string>, body: HTMLElement): HTMLDetailsElement {
  const node = el('details', {
    className: 'fj-TaskMore',
    attrs: { 'data-key': key },
    children: [el('summary', { text: summary }), body]
  });
  node.open = open.has(key);
  return node;
}

function attemptItem(attempt: IAttempt): HTMLLIElement {
  const ran =
    attempt.started_ms !== null && attempt.finished_ms !== null
      ? formatDuration(attempt.finished_ms - attempt.started_ms)
      : '';
  return el('li', {
    className: 'fj-Attempt',
    children: [
      el('span', { text: `#${attempt.attempt_id} ` }),
      badge(attempt.state),
      el('span', {
        className: 'fj-Muted',
        text: [
          attempt.finished_ms !== null ? ` exit ${attempt.exit_code}` : '',
          ran ? ` ran ${ran}` : '',
          attempt.worker_failure ? ' worker lost' : ''
        ].join('')
      }),
      attempt.error ? el('div', { className: 'fj-Wrap fj-Muted', text: attempt.error }) : null
    ]
  });
}

/** What is shown under a task's row: status text, root cause, attempts (empty: nothing to add). */
function taskExtras(task: ITask, limits: IRetryLimits, open: ReadonlySet<string>, watch: ITaskWatch): HTMLElement[] {
  const extras: HTMLElement[] = [];
  const label = task.index === null ? task.task_id : String(task.index);
  if (task.status_summary || task.status_text) {
    const summary = el('div', { className: 'fj-StatusText fj-Wrap' });
    summary.append(...statusSpans(task.status_summary || task.status_text.split('\n')[0]).map(spanNode));
    const age = statusAgeText(watch.usage.get(task.task_id), watch.now);
    const ageNode = age ? el('span', { className: 'fj-StatusAge fj-Muted', text: age }) : null;
    extras.push(el('div', { className: 'fj-StatusLine', children: [summary, ageNode] }));
    if (task.status_text && task.status_text.trim() !== task.status_summary.trim()) {
      const full = el('pre', { className: 'fj-StatusText-full' });
      full.append(...statusSpans(task.status_text).map(spanNode));
      extras.push(details('Full status', `status:${label}`, open, full));
    }
  }
  if (task.root_cause.length) {
    const lines = el('pre', { className: 'fj-RootCause', attrs: { 'aria-label': `Likely root cause, task ${label}` } });
    task.root_cause.forEach((line, index) => {
      const last = index === task.root_cause.length - 1;
      const shown = ansiLines(line);
      lines.append(last ? el('strong', { children: [shown] }) : shown, last ? '' : '\n');
    });
    extras.push(el('div', { className: 'fj-RootCause-head', text: 'Likely cause' }), ansiArea([lines]));
  }
  if (task.attempts > 1 || task.failure_count || task.preemption_count) {
    const list = el('ol', { className: 'fj-Attempts', children: task.history.map(attemptItem) });
    extras.push(
      details(`${counted(task.attempts, 'attempt')}: ${taskRetriesText(task, limits)}`, `attempts:${label}`, open, list)
    );
  }
  return extras;
}

/** The rows of the tasks table (each task's row, then one with its extras when it has any); a live
 * task's controller note is shown when it says more than the job's own (`jobNote`). */
export function taskRows(
  tasks: readonly ITask[],
  limits: IRetryLimits,
  container: HTMLElement,
  jobNote = '',
  watch: ITaskWatch = { usage: new Map(), now: Date.now(), silenceAfterMs: Infinity }
): HTMLTableRowElement[] {
  const open = new Set(
    [...container.querySelectorAll<HTMLDetailsElement>('details[data-key]')]
      .filter(d => d.open)
      .map(d => d.dataset.key ?? '')
  );
  return tasks.flatMap(task => {
    const note = el('td', { className: 'fj-Wrap' });
    const own = isActive(task.state) && task.status_message !== jobNote ? task.status_message : '';
    note.append(linkedText(task.error || task.pending_reason || own));
    const usage = watch.usage.get(task.task_id);
    const silence = isActive(task.state) ? silenceText(usage, watch.now, watch.silenceAfterMs) : '';
    if (silence) {
      note.prepend(el('div', { className: 'fj-Silence', text: silence, attrs: { role: 'status' } }));
    }
    const row = el('tr', {
      attrs: { 'data-task': String(task.index ?? task.task_id) },
      children: [
        el('td', { text: task.index === null ? task.task_id : String(task.index) }),
        el('td', { children: [badge(task.state)] }),
        el('td', { text: String(Math.max(task.attempts, 1)), attrs: { title: `current attempt #${task.attempt}` } }),
        el('td', { text: task.finished_ms !== null ? String(task.exit_code) : '' }),
        ...usageCells(usage).map(text => el('td', { className: 'fj-UsageCell', text })),
        note
      ]
    });
    const extras = taskExtras(task, limits, open, watch);
    if (!extras.length) {
      return [row];
    }
    const cell = el('td', {
      className: 'fj-TaskExtras',
      attrs: { colspan: String(TASK_COLUMNS.length) },
      children: extras
    });
    return [row, el('tr', { className: 'fj-TaskExtrasRow', children: [cell] })];
  });
}
