/**
 * Pushed job changes: the server's `/fray/events` stream (server-sent events from the one watcher
 * every tab shares), read with `fetch` through `ServerConnection` so Jupyter's token goes along.
 *
 * Rules:
 * - `parseEvents` is pure (unit-tested): complete `data:` frames of a buffer become events; an
 *   incomplete tail is returned to be completed by the next chunk; comments are skipped.
 * - `PushStream` is open only while `wanted()` says so (the tab is visible and someone looks at
 *   jobs): a hidden tab holds no connection, so it costs nothing. A dropped stream reconnects after
 *   `retry` ms, doubling to 30 s while it keeps failing.
 * - `onState(connected, source)`: `source` is how the server learns of changes: `feed` (the
 *   embedded controller's change feed, which also covers log lines), `poll` (a controller listed
 *   on a timer), or `` before the controller answered.
 */
import { ServerConnection } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';

import { frayUrl } from './api';
import type { IPushEvent } from './types';

export type { IPushEvent };

/** Complete events in `buffer`, and the incomplete rest. */
export function parseEvents(buffer: string): { events: IPushEvent[]; rest: string } {
  const events: IPushEvent[] = [];
  const frames = buffer.replace(/\r\n/g, '\n').split('\n\n');
  const rest = frames.pop() ?? '';
  for (const frame of frames) {
    const data = frame
      .split('\n')
      .filter(line => line.startsWith('data:'))
      .map(line => line.slice(5).trimStart())
      .join('\n');
    if (!data) {
      continue;
    }
    try {
      const event = JSON.parse(data) as IPushEvent;
      if (event && typeof event.kind === 'string') {
        events.push(event);
      }
    } catch {
      // not ours: ignore
    }
  }
  return { events, rest };
}

export interface IPushOptions {
  onEvent: (event: IPushEvent) => void;
  onState: (connected: boolean, source: string) => void;
  wanted: () => boolean;
  retry?: number;
}

const MAX_RETRY = 30000;

export class PushStream implements IDisposable {
  constructor(options: IPushOptions) {
    this._options = options;
    this._retry = options.retry ?? 2000;
    this._onVisibility = () => this.update();
    document.addEventListener('visibilitychange', this._onVisibility);
  }

  get connected(): boolean {
    return this._connected;
  }

  get source(): string {
    return this._source;
  }

  /** Open or close the stream as `wanted()` and the tab's visibility say. */
  update(): void {
    const want = !this._disposed && document.visibilityState !== 'hidden' && this._options.wanted();
    if (want && this._abort === null) {
      void this._run();
    } else if (!want && this._abort !== null) {
      this._abort.abort();
    }
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    this._disposed = true;
    document.removeEventListener('visibilitychange', this._onVisibility);
    this._abort?.abort();
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
  }

  private async _run(): Promise<void> {
    const abort = new AbortController();
    this._abort = abort;
    let failed = false;
    try {
      const settings = ServerConnection.makeSettings();
      const response = await ServerConnection.makeRequest(
        frayUrl(['events'], settings),
        { signal: abort.signal },
        settings
      );
      if (!response.ok || !response.body) {
        throw new Error(`${response.status}`);
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          break;
        }
        const parsed = parseEvents(buffer + decoder.decode(value, { stream: true }));
        buffer = parsed.rest;
        for (const event of parsed.events) {
          this._handle(event);
        }
      }
    } catch {
      failed = !abort.signal.aborted;
    }
    this._abort = null;
    this._setState(false, this._source);
    if (!this._disposed && !abort.signal.aborted) {
      const delay = failed ? this._delay : this._retry;
      this._delay = failed ? Math.min(this._delay * 2, MAX_RETRY) : this._retry;
      this._timer = setTimeout(() => {
        this._timer = null;
        this.update();
      }, delay);
    }
  }

  private _handle(event: IPushEvent): void {
    if (event.kind === 'hello') {
      this._delay = this._retry;
      this._setState(true, event.source);
    }
    this._options.onEvent(event);
  }

  private _setState(connected: boolean, source: string): void {
    if (connected !== this._connected || source !== this._source) {
      this._connected = connected;
      this._source = source;
      this._options.onState(connected, source);
    }
  }

  private _options: IPushOptions;
  private _retry: number;
  private _delay = 2000;
  private _abort: AbortController | null = null;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _connected = false;
  private _source = '';
  private _disposed = false;
  private _onVisibility: () => void;
}
