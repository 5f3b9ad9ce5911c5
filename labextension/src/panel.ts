/**
 * The "Fray Jobs" sidebar: whose jobs and which (`filters.ts`), a connection banner, the cluster's
 * capacity (`capacity.ts`, a collapsible section), the job list (a windowed tree, `vlist.ts` +
 * `rows.ts`), paging, and the open job. By default it lists the current user's root jobs, Iris's
 * way; each ▸ lists a job's children under it. What the user's last action did (a resubmit) is said
 * in a polite live region. All job-provided text is set as text.
 */
import type { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { CapacityView } from './capacity';
import type { IOpenCapture } from './capture';
import { ClusterSwitcher } from './clusters';
import { button, el } from './dom';
import { ListControls } from './filters';
import { JobView } from './jobview';
import { JobsModel } from './model';
import { ROW_PX, treeRowKey, treeRowNode } from './rows';
import type { IRowContext } from './rows';
import { isFiltered, listTitle, MAX_LIST_OFFSET, PAGE_SIZE, pastDeepestPage } from './scope';
import type { IView } from './scope';
import { SessionsView } from './sessions';
import type { TreeRow } from './tree';
import { WindowedList } from './vlist';

export class JobsPanel extends Widget {
  /** `openCapture`: show a profile capture in a main-area tab. */
  constructor(
    readonly model: JobsModel,
    private readonly onRefresh: () => void,
    openCapture: (capture: IOpenCapture) => void,
    private readonly now: () => number = Date.now
  ) {
    super();
    this.id = 'fray-jobs';
    this.addClass('fj-JobsPanel');
    this.title.caption = 'Fray Jobs';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'Fray Jobs');

    this._controls = new ListControls(
      view => this._setView(view),
      () => void model.loadUsers()
    );
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
    this._notice = el('div', { className: 'fj-Notice', attrs: { role: 'status', 'aria-live': 'polite' } });
    this._list = new WindowedList<TreeRow>({
      rowPx: ROW_PX,
      render: row => treeRowNode(row, this._rowContext),
      key: treeRowKey,
      label: 'Jobs'
    });
    this._heading = el('p', { className: 'fj-ListTitle', attrs: { 'aria-live': 'polite' } });
    this._empty = el('p', { className: 'fj-Empty' });
    this._summary = el('span', { className: 'fj-Muted' });
    this._newer = button('Newer', () => this._page(-1), { className: 'fj-Link' });
    this._older = button('Older', () => this._page(1), { className: 'fj-Link' });
    this._deep = el('p', { className: 'fj-Muted fj-Wrap' });
    this._controller = el('p', { className: 'fj-Muted fj-Controller' });
    this._jobView = new JobView(model, now, openCapture);
    this._capacity = new CapacityView(
      () => this.isVisible && !this._listView.hidden,
      jobId => void model.openJob(jobId)
    );
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
        this._sessions.node,
        this._capacity.node,
        this._controls.node,
        this._heading,
        this._list.node,
        this._empty,
        el('div', { className: 'fj-Pager', children: [this._newer, this._summary, this._older] }),
        this._deep
      ]
    });
    this.node.append(
      el('header', {
        className: 'fj-Header',
        children: [
          el('h2', { text: 'Fray Jobs' }),
          this._clusters.node,
          button('⟳', () => this._refreshAll(), {
            className: 'fj-IconButton',
            attrs: { 'aria-label': 'Refresh jobs', title: 'Refresh' }
          })
        ]
      }),
      this._banner,
      this._error,
      this._notice,
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
    this._sessions.refresh();
    this._capacity.refresh();
    this._visibilityChanged.emit(true);
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._visibilityChanged.emit(false);
  }

  dispose(): void {
    this._controls.dispose();
    this._list.dispose();
    this._sessions.dispose();
    this._capacity.dispose();
    this.model.changed.disconnect(this._render, this);
    super.dispose();
  }

  private _setView(view: Partial<IView>): void {
    this.model.listing.setView(view);
    this._list.scrollToTop();
    this._render();
    this.onRefresh();
  }

  /** ⟳: the jobs, and the capacity when it is open. */
  private _refreshAll(): void {
    this.onRefresh();
    this._capacity.refresh();
  }

  private _page(direction: number): void {
    this._setView({
      offset: Math.min(MAX_LIST_OFFSET, Math.max(0, this.model.listing.view.offset + direction * PAGE_SIZE))
    });
  }

  private get _rowContext(): IRowContext {
    const model = this.model;
    return {
      now: this.now(),
      me: model.me,
      flat: isFiltered(model.listing.view),
      dashboard: model.status?.dashboard_url ?? null,
      onOpen: jobId => void model.openJob(jobId),
      onToggle: jobId => void model.toggle(jobId),
      onMore: parent => void model.more(parent),
      onRetry: parent => void model.retry(parent)
    };
  }

  private _render(): void {
    const model = this.model;
    this._banner.hidden = model.connectionError === null;
    this._bannerText.textContent = model.connectionError ?? '';
    this._error.hidden = model.actionError === null;
    this._error.textContent = model.actionError ?? '';
    this._notice.hidden = model.notice === null;
    this._notice.textContent = model.notice ?? '';
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
    this._sessions.refresh();
    this._capacity.refresh();
  }

  private _renderList(): void {
    const { listing, me } = this.model;
    const { page, view } = listing;
    const jobs = page?.jobs ?? [];
    this._controls.render(view, me, listing.users);
    this._list.setItems(listing.rows);
    const stale = listing.stale(me);
    this._list.node.classList.toggle('fj-Stale', stale);
    this._list.node.setAttribute('aria-busy', String(stale));
    const filtered = isFiltered(view);
    this._heading.textContent = `${listTitle(view, me)}${view.name ? ` “${view.name}”` : ''}${view.state ? ` (${view.state})` : ''}`;
    this._empty.hidden = jobs.length > 0 || page === null;
    this._empty.textContent = filtered
      ? 'No jobs match these filters.'
      : view.who === 'mine'
        ? 'No jobs of yours yet. Submit one from a notebook (%%fray, or client.submit(plan)) and it appears here.'
        : 'No jobs.';
    this._newer.hidden = view.offset === 0;
    const deepest = page?.has_more === true && pastDeepestPage(view.offset);
    this._older.hidden = !page?.has_more || deepest;
    this._summary.textContent =
      page && page.total ? `${view.offset + 1}–${view.offset + jobs.length} of ${page.total.toLocaleString()}` : '';
    this._deep.hidden = !deepest;
    this._deep.textContent = deepest
      ? `Iris pages no deeper than ${MAX_LIST_OFFSET.toLocaleString()} jobs: search by name or filter by state to reach older ones.`
      : '';
  }

  private _controls: ListControls;
  private _banner: HTMLDivElement;
  private _bannerText: HTMLParagraphElement;
  private _error: HTMLDivElement;
  private _notice: HTMLDivElement;
  private _capacity: CapacityView;
  private _list: WindowedList<TreeRow>;
  private _heading: HTMLParagraphElement;
  private _empty: HTMLParagraphElement;
  private _summary: HTMLSpanElement;
  private _newer: HTMLButtonElement;
  private _older: HTMLButtonElement;
  private _deep: HTMLParagraphElement;
  private _controller: HTMLParagraphElement;
  private _listView: HTMLDivElement;
  private _jobView: JobView;
  private _clusters: ClusterSwitcher;
  private _sessions = new SessionsView(
    () => this.model.me,
    () => this.isVisible && !this._listView.hidden,
    () => this.model.watcher.active
  );
  private _visibilityChanged = new Signal<this, boolean>(this);
}
