/**
 * Auto-refresh: a Lumino `Poll` whose interval follows `nextInterval` (back off while nothing
 * changes), that stands by while the browser tab is hidden (`'when-hidden'`) or while the caller
 * says so (`paused()`), and that backs off on its own after failed refreshes.
 */
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';

import { IBackoff, nextInterval } from './backoff';

export interface IBackoffPollOptions {
  /** One refresh; resolves to whether it changed anything. A rejection backs off. */
  refresh: () => Promise<boolean>;
  backoff: IBackoff;
  /** Extra standby condition (besides a hidden tab), checked before every tick. */
  paused: () => boolean;
}

export class BackoffPoll implements IDisposable {
  constructor(options: IBackoffPollOptions) {
    this._options = options;
    this._interval = options.backoff.base;
    this._poll = new Poll({
      name: 'fray-jupyter:jobs',
      factory: async () => {
        const changed = await options.refresh();
        this._setInterval(nextInterval(this._interval, changed, this._options.backoff));
      },
      frequency: this._frequency(),
      standby: () => (options.paused() ? true : 'when-hidden')
    });
  }

  /** The interval the next refresh waits, ms. */
  get interval(): number {
    return this._interval;
  }

  /** New back-off settings; takes effect from the next refresh. */
  set backoff(backoff: IBackoff) {
    this._options = { ...this._options, backoff };
    this._setInterval(backoff.base);
  }

  /** Refresh now and follow closely again (after a user action or when the panel is shown). */
  refreshNow(): Promise<void> {
    this._setInterval(this._options.backoff.base);
    return this._poll.refresh();
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  dispose(): void {
    this._poll.dispose();
  }

  private _frequency(): { interval: number; max: number; backoff: boolean } {
    return { interval: this._interval, max: this._options.backoff.max, backoff: true };
  }

  private _setInterval(interval: number): void {
    this._interval = interval;
    this._poll.frequency = this._frequency();
  }

  private _options: IBackoffPollOptions;
  private _interval: number;
  private _poll: Poll;
}
