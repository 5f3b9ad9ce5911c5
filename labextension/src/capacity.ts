/**
 * The sidebar's capacity view (`GET /fray/capacity`): each scale group with its status and, for each
 * accelerator, CPU and memory, a bar of what is used and the words total / used / free; every worker
 * in a windowed list (`vlist.ts`: a thousand workers put a few dozen rows in the page); and the jobs
 * that wait, with the controller's reason (each opens the job).
 *
 * Rules: a collapsible section, closed by default. It is read when it is opened, and while it is
 * open and on screen whenever the sidebar's jobs change or the sidebar is shown or refreshed (⟳) —
 * never on a timer of its own, so an idle sidebar asks nothing more — and never more often than
 * every `REFRESH_MS` (a read asked for sooner is made when that has passed, once). Status words and tones
 * are the server's (the display vocabulary's tones: `fj-Badge-<tone>`); numbers are the server's
 * words. A failed read shows its one line and keeps what was shown.
 */
import { getCapacity } from './api';
import { button, el } from './dom';
import { counted, errorText } from './format';
import type { ICapacity, ICapacityGroup, ICapacityResource, ICapacityWorker } from './types';
import { WindowedList } from './vlist';

/** The shortest time between two reads. */
export const REFRESH_MS = 2000;
/** Height of one worker row, px. */
export const WORKER_ROW_PX = 22;

/** A status in the server's words and tone, as a badge. */
function statusBadge(word: string, tone: string): HTMLSpanElement {
  return el('span', { className: `fj-Badge fj-Badge-${tone}`, text: word });
}

/** A bar of `used` against `total` (a share, 0…1). */
function usageBar(share: number, label: string): HTMLElement {
  const bar = el('span', { className: 'fj-CapBar', attrs: { role: 'img', 'aria-label': label, title: label } });
  const fill = el('span', { className: 'fj-CapBar-used' });
  fill.style.width = `${(100 * Math.min(Math.max(share, 0), 1)).toFixed(1)}%`;
  bar.append(fill);
  return bar;
}

/** One resource of a group: its name, a bar, and "used X · free Y of Z". */
export function resourceRow(resource: ICapacityResource): HTMLElement {
  const words = `${resource.used_text} used · ${resource.free_text} free of ${resource.total_text}`;
  return el('div', {
    className: 'fj-CapResource',
    attrs: { 'data-resource': resource.name },
    children: [
      el('span', { className: 'fj-CapResource-name', text: resource.name }),
      usageBar(resource.total > 0 ? resource.used / resource.total : 0, `${resource.name}: ${words}`),
      el('span', { className: 'fj-CapResource-words', text: words })
    ]
  });
}

/** One scale group: name, device, status, workers and slices, its reason, its resources. */
export function groupNode(group: ICapacityGroup): HTMLElement {
  const facts = [
    group.device,
    counted(group.workers, 'worker') + (group.healthy < group.workers ? ` (${group.healthy} healthy)` : ''),
    group.slices,
    group.demand ? `demand ${group.demand}` : ''
  ].filter(Boolean);
  return el('li', {
    className: 'fj-CapGroup',
    attrs: { 'data-group': group.name },
    children: [
      el('div', {
        className: 'fj-CapGroup-head',
        children: [
          el('strong', { text: group.name || 'other workers' }),
          group.status ? statusBadge(group.status, group.tone) : null,
          el('span', { className: 'fj-Muted', text: facts.join(' · ') })
        ]
      }),
      group.reason ? el('div', { className: 'fj-Muted fj-Wrap', text: group.reason }) : null,
      ...group.resources.map(resourceRow)
    ]
  });
}

/** One worker's row: id, status, tasks, a bar of its busiest resource, its numbers. */
export function workerRow(worker: ICapacityWorker): HTMLElement {
  const title = [worker.worker_id, worker.group, worker.line, worker.message].filter(Boolean).join('\n');
  return el('div', {
    className: 'fj-CapWorker',
    attrs: { 'data-worker-id': worker.worker_id, title },
    children: [
      el('span', { className: 'fj-CapWorker-id', text: worker.worker_id }),
      statusBadge(worker.status, worker.tone),
      usageBar(worker.load, `busiest resource ${Math.round(worker.load * 100)}% in use`),
      el('span', { className: 'fj-CapWorker-line fj-Muted', text: `${counted(worker.tasks, 'task')} · ${worker.line}` })
    ]
  });
}

export class CapacityView {
  /** `onScreen`: whether the list view (where the section is) is shown; `onOpenJob`: open a pending job. */
  constructor(
    private readonly onScreen: () => boolean,
    private readonly onOpenJob: (jobId: string) => void
  ) {
    this._workers = new WindowedList<ICapacityWorker>({
      rowPx: WORKER_ROW_PX,
      render: workerRow,
      key: worker => worker.worker_id,
      label: 'Workers'
    });
    this._workers.node.className = 'fj-CapWorkers'; // not the job list's classes: the sidebar has one job list
    this._workers.list.className = 'fj-CapWorkerList';
    this.node = el('details', {
      className: 'fj-Capacity',
      children: [
        el('summary', { children: [el('span', { className: 'fj-CapacityTitle', text: 'Capacity' }), this._summary] }),
        this._note,
        this._groups,
        this._pendingHead,
        this._pending,
        this._workersHead,
        this._workers.node
      ]
    });
    this._note.hidden = true;
    this._pendingHead.hidden = this._pending.hidden = true;
    this.node.addEventListener('toggle', () => this.refresh());
  }

  readonly node: HTMLDetailsElement;

  /** Read the capacity again when the section is open and on screen (module rules): one read is
   * scheduled at a time, `REFRESH_MS` after the last began; an answer older than the newest is dropped. */
  refresh(): void {
    if (!this.node.open || !this.onScreen() || this._timer !== 0) {
      return;
    }
    const wait = Math.max(0, this._readAt + REFRESH_MS - Date.now());
    this._timer = window.setTimeout(() => {
      this._timer = 0;
      this._readAt = Date.now();
      void this._read(++this._reads);
    }, wait);
  }

  /** Stop (the sidebar is gone). */
  dispose(): void {
    window.clearTimeout(this._timer);
    this._workers.dispose();
  }

  private async _read(read: number): Promise<void> {
    try {
      const capacity = await getCapacity();
      if (read === this._reads) {
        this._show(capacity);
      }
    } catch (error) {
      this._note.hidden = false;
      this._note.textContent = `capacity: ${errorText(error)}`;
    }
  }

  private _show(capacity: ICapacity): void {
    this._note.hidden = !capacity.note;
    this._note.textContent = capacity.note;
    this._summary.textContent = ` ${capacity.running_tasks} running · ${capacity.pending_tasks} waiting · ${counted(capacity.workers.length, 'worker')}`;
    this._groups.replaceChildren(...capacity.groups.map(groupNode));
    this._pendingHead.hidden = this._pending.hidden = capacity.pending.length === 0;
    this._pendingHead.textContent = `Waiting (${capacity.pending.length})`;
    this._pending.replaceChildren(
      ...capacity.pending.map(job =>
        el('li', {
          className: 'fj-CapPending',
          attrs: { 'data-job-id': job.job_id },
          children: [
            button(job.job_id, () => this.onOpenJob(job.job_id), {
              className: 'fj-Link',
              attrs: { title: 'Open the job' }
            }),
            el('span', { className: 'fj-Muted', text: ` ${counted(job.tasks, 'task')}` }),
            job.reason ? el('div', { className: 'fj-Wrap fj-CapPending-reason', text: job.reason }) : null
          ]
        })
      )
    );
    this._workersHead.textContent = `Workers (${capacity.workers.length})`;
    this._workers.setItems(capacity.workers);
  }

  private _summary = el('span', { className: 'fj-Muted' });
  private _note = el('p', { className: 'fj-Muted fj-Wrap', attrs: { role: 'status' } });
  private _groups = el('ul', { className: 'fj-CapGroups', attrs: { 'aria-label': 'Scale groups' } });
  private _pendingHead = el('h4', { text: 'Waiting' });
  private _pending = el('ul', { className: 'fj-CapPendingList', attrs: { 'aria-label': 'Jobs waiting for capacity' } });
  private _workersHead = el('h4', { text: 'Workers' });
  private _workers: WindowedList<ICapacityWorker>;
  private _reads = 0;
  private _readAt = 0;
  private _timer = 0;
}
