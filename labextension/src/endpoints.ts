/**
 * A job's endpoints (its actors, a trace viewer) in the open job's view: name (a link through the
 * cluster's proxy where it has one), address and the task serving each,
 * read from `GET /fray/jobs/<id>/endpoints` when the job opens and every `REFRESH_MS` while it
 * runs, so members show as they register and go as their tasks end. Hidden while there are none;
 * a failed read shows its one line and is tried again at the next refresh.
 */
import { getEndpoints } from './api';
import { el, NEW_TAB } from './dom';
import type { IEndpoint } from './types';

/** How often a running job's endpoints are read again. */
export const REFRESH_MS = 2000;

/** An endpoint's name: a link that opens it through the cluster's proxy where it has one (an XProf or
 * TensorBoard a task serves, say), else its name as text. */
function endpointName(endpoint: IEndpoint): HTMLElement {
  if (!endpoint.link) {
    return el('td', { text: endpoint.name, attrs: { title: endpoint.name } });
  }
  const link = el('a', {
    className: 'fj-Link',
    text: endpoint.name,
    attrs: { href: endpoint.link, title: `Open ${endpoint.name} through the cluster's proxy`, ...NEW_TAB }
  });
  return el('td', { children: [link] });
}

/** The rows of an endpoints table, by name. */
export function endpointRows(endpoints: IEndpoint[]): HTMLElement[] {
  return [...endpoints]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(endpoint =>
      el('tr', {
        attrs: { 'data-endpoint': endpoint.name },
        children: [
          endpointName(endpoint),
          ...[endpoint.address, endpoint.task_id].map(text => el('td', { text, attrs: { title: text } }))
        ]
      })
    );
}

export class EndpointsView {
  constructor() {
    this._body = el('tbody');
    this._note = el('p', { className: 'fj-Muted fj-Wrap' });
    this._head = el('h4', { text: 'Endpoints' });
    const table = el('table', {
      className: 'fj-Endpoints',
      children: [
        el('thead', {
          children: [
            el('tr', { children: ['Name', 'Address', 'Task'].map(h => el('th', { text: h, attrs: { scope: 'col' } })) })
          ]
        }),
        this._body
      ]
    });
    this.node = el('div', { className: 'fj-EndpointsView', children: [this._head, this._note, table] });
    this.node.hidden = true;
  }

  readonly node: HTMLElement;

  /** Show the endpoints of `jobId`, read again every `REFRESH_MS` until the job has finished. */
  show(jobId: string, terminal: boolean): void {
    if (jobId === this._jobId && terminal === this._terminal) {
      return;
    }
    const changed = jobId !== this._jobId;
    this._jobId = jobId;
    this._terminal = terminal;
    if (changed) {
      this.node.hidden = true;
    }
    this._schedule(0);
  }

  /** Stop refreshing (the view is gone). */
  dispose(): void {
    this._jobId = '';
    window.clearTimeout(this._timer);
  }

  private _schedule(delay: number): void {
    window.clearTimeout(this._timer);
    this._timer = window.setTimeout(() => void this._read(), delay);
  }

  private async _read(): Promise<void> {
    const jobId = this._jobId;
    if (!jobId) {
      return;
    }
    try {
      const { endpoints } = await getEndpoints(jobId);
      if (jobId !== this._jobId) {
        return;
      }
      this._note.hidden = true;
      this._body.replaceChildren(...endpointRows(endpoints));
      this._head.textContent = `Endpoints (${endpoints.length})`;
      this.node.hidden = endpoints.length === 0;
    } catch (error) {
      if (jobId !== this._jobId) {
        return;
      }
      this._note.hidden = false;
      this._note.textContent = `endpoints: ${String((error as Error).message ?? error)}`;
    }
    if (!this._terminal) {
      this._schedule(REFRESH_MS);
    }
  }

  private _body: HTMLElement;
  private _note: HTMLElement;
  private _head: HTMLElement;
  private _jobId = '';
  private _terminal = true;
  private _timer = 0;
}
