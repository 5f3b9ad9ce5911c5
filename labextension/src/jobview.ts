/**
 * The open job: what it is, its tasks, its live log (`logview.ts`), and Cancel (after a
 * confirmation dialog). Rendered from `JobsModel.open`.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';

import { getOutputText, outputFileUrl } from './api';
import { badge, button, el } from './dom';
import { formatAgo, formatBytes, formatDuration, jobDuration, progressText, resourcesText } from './format';
import { LogView } from './logview';
import type { IOpenJob, JobsModel } from './model';
import type { IJob, ITaskOutputs } from './types';

/** Output files shown inline: images (as `<img>`, never as a page) up to 4 MiB, text up to 256 KiB. */
const IMAGE = /\.(png|jpe?g|gif|webp|svg)$/i;
const TEXT = /\.(txt|log|json|csv|tsv|md|ya?ml|py|out)$/i;
const MAX_INLINE_IMAGE = 4 * 2 ** 20;
const MAX_INLINE_TEXT = 256 * 2 ** 10;

/** Ask before cancelling; resolves true when the user confirmed. */
export async function confirmCancel(job: IJob): Promise<boolean> {
  const result = await showDialog({
    title: 'Cancel job?',
    body: `Cancel “${job.name}” (${job.job_id})? Its running tasks are stopped; this cannot be undone.`,
    buttons: [Dialog.cancelButton({ label: 'Keep running' }), Dialog.warnButton({ label: 'Cancel job' })]
  });
  return result.button.accept;
}

export class JobView {
  constructor(
    private readonly model: JobsModel,
    private readonly now: () => number = Date.now
  ) {
    this.node = el('section', { className: 'fj-JobView', attrs: { 'aria-label': 'Job details' } });
    this._back = button('← All jobs', () => model.closeJob(), {
      className: 'fj-Link',
      attrs: { 'aria-label': 'Back to all jobs' }
    });
    this._cancel = button('Cancel job', () => void this._onCancel(), { className: 'fj-Button fj-Button-warn' });
    this._title = el('h3', { className: 'fj-JobView-title' });
    this._badge = el('span');
    this._facts = el('dl', { className: 'fj-Facts' });
    this._tasks = el('tbody');
    this.node.append(
      el('div', { className: 'fj-JobView-bar', children: [this._back, this._cancel] }),
      el('div', { className: 'fj-JobView-head', children: [this._title, this._badge] }),
      this._facts,
      el('h4', { text: 'Tasks' }),
      el('table', {
        className: 'fj-Tasks',
        children: [
          el('thead', {
            children: [
              el('tr', {
                children: ['#', 'State', 'Attempt', 'Exit', 'Note'].map(h => el('th', { text: h, attrs: { scope: 'col' } }))
              })
            ]
          }),
          this._tasks
        ]
      }),
      this._outputsHead,
      this._outputs,
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
    this._title.textContent = job.name;
    this._title.title = job.job_id;
    this._badge.replaceChildren(badge(job.state));
    this._cancel.disabled = job.terminal || this._cancelling;
    this._cancel.title = job.terminal ? 'The job has finished' : 'Stop every task of this job';
    this._renderFacts(job);
    this._tasks.replaceChildren(
      ...tasks.map(task =>
        el('tr', {
          children: [
            el('td', { text: task.index === null ? task.task_id : String(task.index) }),
            el('td', { children: [badge(task.state)] }),
            el('td', { text: String(task.attempt) }),
            el('td', { text: task.finished_ms !== null ? String(task.exit_code) : '' }),
            el('td', { className: 'fj-Wrap', text: task.error || task.pending_reason })
          ]
        })
      )
    );
    this._renderOutputs(open, sameJob);
    this._log.show(open.log, job.terminal);
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
      const link = el('a', { text: file.name, attrs: { href: url, target: '_blank', rel: 'noopener noreferrer' } });
      const item = el('li', {
        className: 'fj-Output',
        children: [link, el('span', { className: 'fj-Muted', text: ` ${formatBytes(file.size)}` })]
      });
      if (IMAGE.test(file.name) && file.size <= MAX_INLINE_IMAGE) {
        item.append(el('img', { className: 'fj-OutputImage', attrs: { src: url, alt: file.name, loading: 'lazy' } }));
      } else if (TEXT.test(file.name) && file.size <= MAX_INLINE_TEXT) {
        const text = el('pre', { className: 'fj-OutputText' });
        text.hidden = true;
        const show = button('show', () => {
          text.hidden = !text.hidden;
          show.textContent = text.hidden ? 'show' : 'hide';
          if (!text.hidden && !text.textContent) {
            getOutputText(jobId, index, file.name).then(
              content => (text.textContent = content),
              error => (text.textContent = String(error))
            );
          }
        }, { className: 'fj-Link', attrs: { 'aria-label': `Show ${file.name}` } });
        item.append(' ', show, text);
      }
      list.append(item);
    }
    return count > 1 ? [el('p', { text: `Task ${index}` }), list] : [list];
  }

  private _renderFacts(job: IJob): void {
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
    if (job.failure_count || job.preemption_count) {
      facts.push(['Failures', `${job.failure_count} failed · ${job.preemption_count} preempted`]);
    }
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

  private _back: HTMLButtonElement;
  private _cancel: HTMLButtonElement;
  private _title: HTMLHeadingElement;
  private _badge: HTMLSpanElement;
  private _facts: HTMLDListElement;
  private _tasks: HTMLTableSectionElement;
  private _log = new LogView();
  private _outputsHead = el('h4', { text: 'Outputs' });
  private _outputs = el('div', { className: 'fj-OutputsView' });
  private _outputsKey = '';
  private _jobId = '';
  private _cancelling = false;
}
