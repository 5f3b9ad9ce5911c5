/**
 * The "Fray Jobs" sidebar: filters, a connection banner, the job list, paging, and the open job.
 * Every job on the controller is listed, whoever submitted it. Rows are buttons (Tab / Enter);
 * all job-provided text is set as text.
 */
import type { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { JOB_STATES, badgeFor } from './badges';
import { badge, button, el } from './dom';
import { formatAgo, formatDuration, jobDuration, progressText } from './format';
import { ClusterSwitcher } from './clusters';
import { JobView } from './jobview';
import { JobsModel, PAGE_SIZE } from './model';
import type { IJob } from './types';

const NAME_DEBOUNCE_MS = 300;

export class JobsPanel extends Widget {
  constructor(
    readonly model: JobsModel,
    private readonly onRefresh: () => void,
    private readonly now: () => number = Date.now
  ) {
    super();
    this.id = 'fray-jobs';
    this.addClass('fj-JobsPanel');
    this.title.caption = 'Fray Jobs';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'Fray Jobs');

    this._state = el('select', { attrs: { 'aria-label': 'Filter by state' } });
    this._state.append(
      el('option', { text: 'All states', attrs: { value: '' } }),
      ...JOB_STATES.map(state => el('option', { text: badgeFor(state).label, attrs: { value: state } }))
    );
    this._state.addEventListener('change', () => this._filter({ state: this._state.value }));
    this._name = el('input', {
      attrs: { type: 'search', placeholder: 'Filter by name', 'aria-label': 'Filter by name', spellcheck: 'false' }
    });
    this._name.addEventListener('input', () => {
      window.clearTimeout(this._nameTimer);
      this._nameTimer = window.setTimeout(() => this._filter({ name: this._name.value.trim() }), NAME_DEBOUNCE_MS);
    });

    this._bannerText = el('p', { className: 'fj-Banner-detail' });
    this._banner = el('div', {
      className: 'fj-Banner',
      attrs: { role: 'alert' },
      children: [
        el('strong', { text: 'Cannot reach the Fray controller' }),
        this._bannerText,
        button('Retry', () => this.onRefresh(), { className: 'fj-Button' })
      ]
    });
    this._error = el('div', { className: 'fj-Error', attrs: { role: 'status' } });
    this._list = el('ul', { className: 'fj-JobList', attrs: { 'aria-label': 'Jobs' } });
    this._empty = el('p', { className: 'fj-Empty' });
    this._summary = el('span', { className: 'fj-Muted' });
    this._newer = button('Newer', () => this._page(-1), { className: 'fj-Link' });
    this._older = button('Older', () => this._page(1), { className: 'fj-Link' });
    this._controller = el('p', { className: 'fj-Muted fj-Controller' });
    this._jobView = new JobView(model, now);
    this._clusters = new ClusterSwitcher(
      () => {
        this.model.clusterSwitched();
        this.onRefresh();
      },
      message => this.model.showError(message)
    );

    this._listView = el('div', {
      className: 'fj-ListView',
      children: [
        el('div', { className: 'fj-Filters', children: [this._state, this._name] }),
        this._list,
        this._empty,
        el('div', { className: 'fj-Pager', children: [this._newer, this._summary, this._older] })
      ]
    });
    this.node.append(
      el('header', {
        className: 'fj-Header',
        children: [
          el('h2', { text: 'Fray Jobs' }),
          this._clusters.node,
          button('⟳', () => this.onRefresh(), {
            className: 'fj-IconButton',
            attrs: { 'aria-label': 'Refresh jobs', title: 'Refresh' }
          })
        ]
      }),
      this._banner,
      this._error,
      this._listView,
      this._jobView.node,
      this._controller
    );
    model.changed.connect(this._render, this);
    this._render();
  }

  /** Emits `true` when the sidebar is shown, `false` when it is hidden. */
  get visibilityChanged(): ISignal<this, boolean> {
    return this._visibilityChanged;
  }

  /** Shown again: refresh now and follow closely. */
  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this._clusters.load();
    this.onRefresh();
    this._visibilityChanged.emit(true);
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._visibilityChanged.emit(false);
  }

  dispose(): void {
    window.clearTimeout(this._nameTimer);
    this.model.changed.disconnect(this._render, this);
    super.dispose();
  }

  private _filter(filters: { state?: string; name?: string }): void {
    this.model.setFilters(filters);
    this.onRefresh();
  }

  private _page(direction: number): void {
    this.model.setOffset(this.model.offset + direction * PAGE_SIZE);
    this.onRefresh();
  }

  private _render(): void {
    const model = this.model;
    this._banner.hidden = model.connectionError === null;
    this._bannerText.textContent = model.connectionError ?? '';
    this._error.hidden = model.actionError === null;
    this._error.textContent = model.actionError ?? '';
    const cluster = model.status?.cluster;
    this._controller.textContent = model.status?.url
      ? `${cluster ? `Cluster ${cluster} · ` : ''}Controller: ${model.status.url}`
      : '';

    const open = model.open;
    this._listView.hidden = open !== null;
    this._jobView.node.hidden = open === null;
    if (open !== null) {
      this._jobView.render(open);
      return;
    }
    this._renderList();
  }

  private _renderList(): void {
    const { page, offset } = this.model;
    const jobs = page?.jobs ?? [];
    const focused = (document.activeElement as HTMLElement | null)?.dataset?.jobId;
    this._list.replaceChildren(...jobs.map(job => el('li', { children: [this._row(job)] })));
    if (focused) {
      this._list.querySelector<HTMLElement>(`[data-job-id="${CSS.escape(focused)}"]`)?.focus();
    }
    this._empty.hidden = jobs.length > 0 || page === null;
    this._empty.textContent = this.model.filtered
      ? 'No jobs match these filters.'
      : 'No jobs yet. Submit one from a notebook (%%fray, or client.submit(plan)) and it appears here.';
    this._newer.hidden = offset === 0;
    this._older.hidden = !page?.has_more;
    this._summary.textContent = page && page.total ? `${offset + 1}–${offset + jobs.length} of ${page.total}` : '';
  }

  private _row(job: IJob): HTMLButtonElement {
    const now = this.now();
    const duration = jobDuration(job, now);
    const when = [
      job.submitted_ms !== null ? `submitted ${formatAgo(job.submitted_ms, now)}` : '',
      duration !== null ? `${job.terminal ? 'ran' : 'running'} ${formatDuration(duration)}` : ''
    ].filter(Boolean);
    const progress = el('progress', {
      className: 'fj-Progress',
      attrs: { max: String(Math.max(job.replicas, 1)), value: String(job.completed), 'aria-label': progressText(job) }
    });
    const row = el('button', {
      className: 'fj-JobRow',
      attrs: { type: 'button', 'data-job-id': job.job_id, title: job.job_id },
      children: [
        el('span', {
          className: 'fj-JobRow-top',
          children: [el('span', { className: 'fj-JobRow-name', text: job.name }), badge(job.state)]
        }),
        el('span', {
          className: 'fj-JobRow-meta',
          text: `${job.replicas} ${job.replicas === 1 ? 'replica' : 'replicas'} · ${progressText(job)}${job.device !== 'cpu' ? ` · ${job.device}` : ''}`
        }),
        progress,
        el('span', { className: 'fj-JobRow-meta', text: when.join(' · ') }),
        job.error ? el('span', { className: 'fj-JobRow-error', text: job.error }) : null
      ]
    });
    row.addEventListener('click', () => void this.model.openJob(job.job_id));
    return row;
  }

  private _state: HTMLSelectElement;
  private _name: HTMLInputElement;
  private _nameTimer = 0;
  private _banner: HTMLDivElement;
  private _bannerText: HTMLParagraphElement;
  private _error: HTMLDivElement;
  private _list: HTMLUListElement;
  private _empty: HTMLParagraphElement;
  private _summary: HTMLSpanElement;
  private _newer: HTMLButtonElement;
  private _older: HTMLButtonElement;
  private _controller: HTMLParagraphElement;
  private _listView: HTMLDivElement;
  private _jobView: JobView;
  private _clusters: ClusterSwitcher;
  private _visibilityChanged = new Signal<this, boolean>(this);
}
