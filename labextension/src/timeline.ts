/**
 * The open job's task timeline (`GET /fray/jobs/<id>/events`), newest first as the server orders
 * it: Iris's task events (`iris.task_event`: scheduling, admission, kills, with their reasons) and
 * each task's own state changes (submitted, running, exited). Each entry: its local time, the task,
 * the reason (a Warning in the warning tone) and the message — job-provided text, set as text only.
 */
import { el } from './dom';
import type { ITimelineEntry } from './types';

/** `/alice/train/3` → `3` (the task's index within its job). */
function taskLabel(taskId: string): string {
  return taskId.slice(taskId.lastIndexOf('/') + 1);
}

/** One entry of the timeline. */
export function timelineItem(entry: ITimelineEntry, manyTasks: boolean): HTMLLIElement {
  const warning = entry.type === 'Warning';
  return el('li', {
    className: `fj-Timeline-entry fj-Timeline-${entry.kind}${warning ? ' fj-Timeline-warning' : ''}`,
    attrs: { 'data-reason': entry.reason, title: entry.source },
    children: [
      el('time', {
        className: 'fj-Muted',
        text: new Date(entry.ts_ms).toLocaleTimeString(),
        attrs: { datetime: new Date(entry.ts_ms).toISOString() }
      }),
      manyTasks ? el('span', { className: 'fj-Muted', text: ` task ${taskLabel(entry.task_id)}` }) : null,
      el('strong', { className: 'fj-Timeline-reason', text: ` ${entry.reason}` }),
      entry.message ? el('span', { className: 'fj-Wrap', text: ` ${entry.message}` }) : null
    ]
  });
}

/** The timeline's items (one "no events yet" line when there are none). */
export function timelineItems(entries: readonly ITimelineEntry[]): HTMLLIElement[] {
  if (!entries.length) {
    return [el('li', { className: 'fj-Muted', text: 'No events yet.' })];
  }
  const manyTasks = new Set(entries.map(entry => entry.task_id)).size > 1;
  return entries.map(entry => timelineItem(entry, manyTasks));
}
