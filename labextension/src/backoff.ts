/**
 * Refresh back-off. Pure, unit-tested.
 *
 * Rule: after a refresh that changed something the next one comes after `base` ms; after one that
 * changed nothing the interval grows by `factor`, up to `max`. So a running job is followed closely
 * and an idle list costs one request every `max` ms. (Failed requests back off through the poll's
 * own rejection back-off; pausing while hidden is the poll's standby.)
 *
 * Rule (`throttleDelay`): reads at least `gap` ms apart; a read asked for inside the gap is not
 * dropped but starts when the gap ends.
 */

export interface IBackoff {
  /** Interval after a change, ms. */
  base: number;
  /** Longest interval, ms. */
  max: number;
  /** Growth per unchanged refresh (> 1). */
  factor: number;
}

export const DEFAULT_BACKOFF: IBackoff = { base: 2000, max: 30000, factor: 1.5 };

/** The interval to wait after a refresh, given the one waited before it. */
export function nextInterval(previous: number, changed: boolean, options: IBackoff = DEFAULT_BACKOFF): number {
  const base = Math.max(1, options.base);
  const max = Math.max(base, options.max);
  if (changed || !(previous >= base)) {
    return base;
  }
  return Math.min(max, Math.round(previous * Math.max(1, options.factor)));
}

/** Back-off options from the user's settings (seconds), clamped to sane values. */
export function backoffFromSettings(refreshSeconds: number, maxSeconds: number): IBackoff {
  const base = Math.min(Math.max(refreshSeconds, 0.5), 60) * 1000;
  const max = Math.min(Math.max(maxSeconds * 1000, base), 600 * 1000);
  return { base, max, factor: DEFAULT_BACKOFF.factor };
}

/** Ms until a read asked for at `now` may start, the last one having started at `lastAt` (0: now). */
export function throttleDelay(now: number, lastAt: number, gap: number): number {
  const wait = lastAt + gap - now;
  return wait > 0 && wait <= gap ? wait : 0;
}
