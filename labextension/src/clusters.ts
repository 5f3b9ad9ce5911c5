/**
 * The cluster switcher in the Fray Jobs sidebar: the embedded controller and the named Marin
 * clusters the user has (the server lists what `iris cluster list` would). Picking one switches
 * the Jupyter server's link (`POST /fray/clusters?cluster=NAME`); the sidebar then shows that
 * cluster's jobs. Kernels choose their own cluster (`%%fray --cluster`, `%fray config cluster`).
 *
 * Rule: the list is loaded when the sidebar is first shown and after each switch; a failure to
 * load or switch is reported through `onError` and leaves the current choice in place.
 */
import { getClusters, selectCluster } from './api';
import { el } from './dom';
import { clusterOptions, EMBEDDED_LABEL } from './clusterlist';
import { errorText } from './format';
import type { IClusterList } from './types';

export class ClusterSwitcher {
  constructor(
    private readonly onSwitched: () => void,
    private readonly onError: (message: string) => void
  ) {
    this.node = el('select', { className: 'fj-Cluster', attrs: { 'aria-label': 'Cluster', title: 'Cluster' } });
    this.node.append(el('option', { text: EMBEDDED_LABEL, attrs: { value: '' } }));
    this.node.addEventListener('change', () => void this._switch(this.node.value));
  }

  readonly node: HTMLSelectElement;

  /** Fetch the listing once (later calls do nothing until a switch). */
  async load(): Promise<void> {
    if (this._loaded) {
      return;
    }
    this._loaded = true;
    try {
      this._render(await getClusters());
    } catch (error) {
      this._loaded = false;
      this.onError(errorText(error));
    }
  }

  private async _switch(name: string): Promise<void> {
    this.node.disabled = true;
    try {
      this._render(await selectCluster(name));
      this.onSwitched();
    } catch (error) {
      this.onError(errorText(error));
      this.node.value = this._current;
    } finally {
      this.node.disabled = false;
    }
  }

  private _render(list: IClusterList): void {
    this._current = list.current ?? '';
    this.node.replaceChildren(
      ...clusterOptions(list).map(([value, label]) => el('option', { text: label, attrs: { value } }))
    );
    this.node.value = this._current;
    this.node.title = list.available ?? 'Cluster whose jobs this sidebar shows';
  }

  private _loaded = false;
  private _current = '';
}
