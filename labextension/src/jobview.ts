/**
 * The open job: what it is (a child names its parent, as a link), why it waits or failed, its
 * failures against the job's limits, its child jobs, its tasks (`taskview.ts`) each with its "Look
 * inside" buttons and profile history (`inspect.ts`), its live log (`logview.ts`), how each task uses
 * what it asked for (`usage.ts`: sparklines, memory bar, warning, the tree's totals) and the task
 * timeline (`timeline.ts`), Cancel and Resubmit (each after a confirmation dialog; a resubmitted
 * job opens in its place and is announced). On a named cluster it links to the job's page on the
 * cluster's own Iris dashboard. Rendered from `JobsModel.open`.
 */
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';

import { getOutputText, outputFileUrl } from './api';
import { badge, button, el, NEW_TAB } from './dom';
import {
  formatAgo,
  formatBytes,
  formatDuration,
  jobDuration,
  jobRetriesText,
  progressText,
  resourcesText
} from './format';
import type { IOpenCapture } from './capture';
import { EndpointsView } from './endpoints';
import { InspectView } from './inspect';
import { dashboardJobUrl } from './links';
import { LogView } from './logview';
import type { IOpenJob, JobsModel } from './model';
import { NOTIFICATION_MS } from './notify';
import { leafName, taskBar } from './rows';
import { TASK_COLUMNS, taskRows } from './taskview';
import { timelineItems } from './timeline';
import type { IJob, IRetryLimits, ITaskOutputs, ITaskUsage } from './types';
import { UsageView } from './usage';

/** Output files shown inline: images (as `<img>`, never as a page) up to 4 MiB, text up to 256 KiB. */
const IMAGE = /\.(png|jpe?g|gif|webp|svg)$/i;
const TEXT = /\.(txt|log|json|csv|tsv|md|ya?ml|py|out)$/i;
const MAX_INLINE_IMAGE = 4 * 2 ** 20;
const MAX_INLINE_TEXT = 256 * 2 ** 10;

/** Ask before cancelling; resolves true when the user confirmed. */
export async function confirmCancel(job: IJob): Promise<boolean> {
  const result = await showDialog({
    title: 'Cancel job?',
    body: `Cancel “${leafName(job.job_id)}” (${job.job_id})? Its running tasks are stopped; this cannot be undone.`,
    buttons: [Dialog.cancelButton({ label: 'Keep running' }), Dialog.warnButton({ label: 'Cancel job' })]
  });
  return result.button.accept;
}

/** Ask before resubmitting; resolves true when the user confirmed. */
export async function confirmResubmit(job: IJob): Promise<boolean> {
  const result = await showDialog({
    title: 'Resubmit job?',
    body: `Send the request of “${leafName(job.job_id)}” (${job.job_id}) again as a new job beside it (${leafName(job.job_id)}-r2, -r3 …)?`,
    buttons: [Dialog.cancelButton({ label: 'Keep as is' }), Dialog.okButton({ label: 'Resubmit' })]
  });
  return result.button.accept;
}

export class JobView {
  /** `openCapture`: show a profile capture in a main-area tab. */
  constructor(
    private readonly model: JobsModel,
    private readonly now: () => number = Date.now,
    openCapture: (capture: IOpenCapture) => void
  ) {
    this._inspect = new InspectView(openCapture, () => this._renderInspect());
    this.node = el('section', { className: 'fj-JobView', attrs: { 'aria-label': 'Job details' } });
    this._back = button('← All jobs', () => model.closeJob(), {
      className: 'fj-Link',
      attrs: { 'aria-label': 'Back to all jobs' }
    });
    this._cancel = button('Cancel job', () => void this._onCancel(), { className: 'fj-Button fj-Button-warn' });
    this._resubmit = button('Resubmit', () => void this._onResubmit(), {
      className: 'fj-Button fj-Resubmit',
      attrs: { title: 'Send the same request again as a new job' }
    });
    this._title = el('h3', { className: 'fj-JobView-title' });
    this._badge = el('span');
    this._parent = el('p', { className: 'fj-JobView-parent' });
    this._dashboard = el('a', {
      className: 'fj-Link',
      text: 'Open on the Iris dashboard ↗',
      attrs: { ...NEW_TAB }
    });
    this._facts = el('dl', { className: 'fj-Facts' });
    this._tasks = el('tbody');
    this.node.append(
      el('div', { className: 'fj-JobView-bar', children: [this._back, this._resubmit, this._cancel] }),
      el('div', { className: 'fj-JobView-head', children: [this._title, this._badge] }),
      this._parent,
      this._facts,
      this._dashboard,
      this._childrenHead,
      this._children,
      el('h4', { text: 'Tasks' }),
      el('table', {
        className: 'fj-Tasks',
        children: [
          el('thead', {
            children: [
              el('tr', {
                children: TASK_COLUMNS.map(h => el('th', { text: h, attrs: { scope: 'col' } }))
              })
            ]
          }),
          this._tasks
        ]
      }),
      this._inspectLines,
      this._outputsHead,
      this._outputs,
      this._endpoints.node,
      this._usageHead,
      this._usage,
      this._timelineHead,
      this._timeline,
      el('h4', { text: 'Log' }),
      this._log.node
    );
  }

  readonly node: HTMLElement;

  /** Show `open` (the same job as before: the log view keeps its place). */
  render(open: IOpenJob): void {
    const { job, tasks } = open;
    const sameJob = this._jobId === job.job_id;
    this._jobId = job.job_id;
    this._title.textContent = leafName(job.job_id);
    this._title.title = job.job_id;
    this._badge.replaceChildren(badge(job.state));
    this._cancel.disabled = job.terminal || this._cancelling;
    this._cancel.title = job.terminal ? 'The job has finished' : 'Stop every task of this job';
    this._renderFacts(job, open.limits);
    this._renderLinks(job);
    this._renderChildren(open);
    if (!sameJob) {
      this._usageBlocks.clear();
    }
    this._inspect.show(job.job_id);
    this._resubmit.disabled = this._resubmitting;
    const usage = new Map<string, ITaskUsage>((open.watch.usage?.tasks ?? []).map(task => [task.task_id, task]));
    const watch = { usage, now: this.now(), silenceAfterMs: open.watch.usage?.silence_after_ms ?? Infinity };
    this._tasks.replaceChildren(...taskRows(tasks, open.limits, this._tasks, job.status_message, watch));
    this._renderInspect();
    this._renderWatch(open);
    this._renderOutputs(open, sameJob);
    this._endpoints.show(job.job_id, job.terminal);
    this._log.show(open.log, job.terminal);
  }

  /** The "Look inside" line of each task shown (`inspect.ts`). */
  private _renderInspect(): void {
    const open = this.model.open;
    const lines = open ? this._inspect.blocks(open.tasks, open.job.terminal) : [];
    this._inspectLines.hidden = lines.length === 0;
    this._inspectLines.replaceChildren(...lines);
  }

  /** Each task's usage block and the tree's totals; the task timeline, newest first. */
  private _renderWatch(open: IOpenJob): void {
    const { usage, timeline, error } = open.watch;
    const tasks = (usage?.tasks ?? []).filter(task => task.now_memory_mb !== null); // sampled ones
    const notes = [error, usage?.note ?? ''].filter(Boolean);
    this._usageHead.hidden = this._usage.hidden = !tasks.length && !notes.length;
    const blocks = tasks.map(task => {
      const block = this._usageBlocks.block(task);
      return tasks.length > 1
        ? el('div', { children: [el('div', { text: `Task ${task.index ?? task.task_id}` }), block] })
        : block;
    });
    this._usage.replaceChildren(
      ...(usage && tasks.length
        ? [el('p', { className: 'fj-Usage-totals', text: `Job tree: ${usage.totals.text}` })]
        : []),
      ...blocks,
      ...notes.map(text => el('p', { className: 'fj-Muted fj-Wrap', text }))
    );
    this._timelineHead.hidden = this._timeline.hidden = timeline === null;
    this._timeline.replaceChildren(...timelineItems(timeline ?? []));
  }

  /** "parent: …" (opens the parent) for a child job; the Iris dashboard's page on a named cluster. */
  private _renderLinks(job: IJob): void {
    this._parent.hidden = !job.parent_job_id;
    if (job.parent_job_id) {
      const parent = job.parent_job_id;
      this._parent.replaceChildren(
        'parent: ',
        button(parent, () => void this.model.openJob(parent), {
          className: 'fj-Link fj-ParentLink',
          attrs: { 'aria-label': `Open the parent job ${parent}`, title: 'Open the parent job' }
        })
      );
    }
    const origin = this.model.status?.dashboard_url ?? null;
    this._dashboard.hidden = origin === null;
    if (origin !== null) {
      this._dashboard.href = dashboardJobUrl(origin, job.job_id);
    }
  }

  /** The job's first child jobs, oldest first, each opening itself (the list's ▸ shows them all). */
  private _renderChildren(open: IOpenJob): void {
    const children = open.children;
    this._childrenHead.hidden = this._children.hidden = children === null;
    if (children === null) {
      return;
    }
    this._childrenHead.textContent =
      children.total > children.jobs.length
        ? `Child jobs (${children.jobs.length} of ${children.total})`
        : `Child jobs (${children.total})`;
    this._children.replaceChildren(
      ...children.jobs.map(child =>
        el('li', {
          children: [
            button(leafName(child.job_id), () => void this.model.openJob(child.job_id), {
              className: 'fj-Link fj-ChildLink',
              attrs: { 'data-job-id': child.job_id, title: child.job_id }
            }),
            badge(child.state),
            taskBar(child)
          ]
        })
      )
    );
  }

  /** The files each task wrote (once the job has ended): name and size; images and text inline. */
  private _renderOutputs(open: IOpenJob, sameJob: boolean): void {
    const key = open.outputs === null ? '' : JSON.stringify([open.outputs, open.outputsError]);
    if (sameJob && key === this._outputsKey) {
      return; // keep what the user opened
    }
    this._outputsKey = key;
    const tasks = open.outputs ?? [];
    this._outputsHead.hidden = this._outputs.hidden = open.outputs === null;
    const rows: HTMLElement[] = [];
    if (open.outputsError) {
      rows.push(el('p', { className: 'fj-Muted fj-Wrap', text: open.outputsError }));
    }
    tasks.forEach((task, index) => rows.push(...this._taskOutputs(open.job.job_id, task, index, tasks.length)));
    if (!rows.length) {
      rows.push(el('p', { className: 'fj-Muted', text: 'The job wrote no files to $IRIS_OUTPUT_DIR.' }));
    }
    this._outputs.replaceChildren(...rows);
  }

  private _taskOutputs(jobId: string, task: ITaskOutputs, index: number, count: number): HTMLElement[] {
    const files = task.files.filter(file => file.kind === 'file');
    if (!files.length) {
      return count > 1 && task.note ? [el('p', { className: 'fj-Muted', text: `Task ${index}: ${task.note}` })] : [];
    }
    const list = el('ul', { className: 'fj-Outputs', attrs: { 'data-task': String(index) } });
    for (const file of files) {
      const url = outputFileUrl(jobId, index, file.name);
      const link = el('a', { text: file.name, attrs: { href: url, ...NEW_TAB } });
      const item = el('li', {
        className: 'fj-Output',
        children: [link, el('span', { className: 'fj-Muted', text: ` ${formatBytes(file.size)}` })]
      });
      if (IMAGE.test(file.name) && file.size <= MAX_INLINE_IMAGE) {
        item.append(el('img', { className: 'fj-OutputImage', attrs: { src: url, alt: file.name, loading: 'lazy' } }));
      } else if (TEXT.test(file.name) && file.size <= MAX_INLINE_TEXT) {
        const text = el('pre', { className: 'fj-OutputText' });
        text.hidden = true;
        const show = button(
          'show',
          () => {
            text.hidden = !text.hidden;
            show.textContent = text.hidden ? 'show' : 'hide';
            if (!text.hidden && !text.textContent) {
              getOutputText(jobId, index, file.name).then(
                content => (text.textContent = content),
                error => (text.textContent = String(error))
              );
            }
          },
          { className: 'fj-Link', attrs: { 'aria-label': `Show ${file.name}` } }
        );
        item.append(' ', show, text);
      }
      list.append(item);
    }
    return count > 1 ? [el('p', { text: `Task ${index}` }), list] : [list];
  }

  private _renderFacts(job: IJob, limits: IRetryLimits): void {
    const now = this.now();
    const duration = jobDuration(job, now);
    const facts: [string, string][] = [
      ['Job id', job.job_id],
      ['User', job.user],
      ['Replicas', `${job.replicas} · ${progressText(job)}`],
      ['Resources', resourcesText(job)]
    ];
    if (job.submitted_ms !== null) {
      facts.push(['Submitted', `${new Date(job.submitted_ms).toLocaleString()} (${formatAgo(job.submitted_ms, now)})`]);
    }
    if (duration !== null) {
      facts.push([job.terminal ? 'Ran for' : 'Running for', formatDuration(duration)]);
    }
    facts.push(['Failures', jobRetriesText(job, limits)]);
    if (job.terminal && job.state !== 'succeeded' && job.exit_code) {
      facts.push(['Exit code', String(job.exit_code)]);
    }
    if (job.error) {
      facts.push(['Error', job.error]);
    } else if (job.pending_reason && !job.terminal) {
      facts.push(['Waiting', job.pending_reason]);
    }
    if (job.status_message) {
      facts.push(['Note', job.status_message]);
    }
    this._facts.replaceChildren(
      ...facts.flatMap(([term, value]) => [el('dt', { text: term }), el('dd', { className: 'fj-Wrap', text: value })])
    );
  }

  private async _onCancel(): Promise<void> {
    const open = this.model.open;
    if (!open || open.job.terminal || !(await confirmCancel(open.job))) {
      return;
    }
    this._cancelling = true;
    this._cancel.disabled = true;
    try {
      await this.model.cancel(open.job.job_id);
    } finally {
      this._cancelling = false;
    }
  }

  private async _onResubmit(): Promise<void> {
    const open = this.model.open;
    if (!open || this._resubmitting || !(await confirmResubmit(open.job))) {
      return;
    }
    this._resubmitting = true;
    this._resubmit.disabled = true;
    try {
      const newId = await this.model.resubmit(open.job.job_id);
      if (newId !== null) {
        Notification.success(`Fray job ${leafName(open.job.job_id)} resubmitted as ${leafName(newId)}`, {
          autoClose: NOTIFICATION_MS
        });
      }
    } finally {
      this._resubmitting = false;
      this._resubmit.disabled = false;
    }
  }

  private _back: HTMLButtonElement;
  private _cancel: HTMLButtonElement;
  private _resubmit: HTMLButtonElement;
  private _resubmitting = false;
  private _inspect: InspectView;
  private _inspectLines = el('div', { className: 'fj-InspectLines', attrs: { 'aria-label': 'Look inside the tasks' } });
  private _title: HTMLHeadingElement;
  private _badge: HTMLSpanElement;
  private _parent: HTMLParagraphElement;
  private _dashboard: HTMLAnchorElement;
  private _childrenHead = el('h4');
  private _children = el('ul', { className: 'fj-Children', attrs: { 'aria-label': 'Child jobs' } });
  private _facts: HTMLDListElement;
  private _tasks: HTMLTableSectionElement;
  private _log = new LogView();
  private _endpoints = new EndpointsView();
  private _usageHead = el('h4', { text: 'Usage' });
  private _usage = el('div', { className: 'fj-UsageView' });
  private _usageBlocks = new UsageView();
  private _timelineHead = el('h4', { text: 'Events' });
  private _timeline = el('ol', { className: 'fj-Timeline', attrs: { 'aria-label': 'Task events, newest first' } });
  private _outputsHead = el('h4', { text: 'Outputs' });
  private _outputs = el('div', { className: 'fj-OutputsView' });
  private _outputsKey = '';
  private _jobId = '';
  private _cancelling = false;
}
