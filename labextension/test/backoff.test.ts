import assert from 'node:assert/strict';
import { test } from 'node:test';

import { backoffFromSettings, nextInterval, throttleDelay } from '../src/backoff';

const options = { base: 2000, max: 30000, factor: 1.5 };

test('a change brings the interval back to base', () => {
  assert.equal(nextInterval(30000, true, options), 2000);
  assert.equal(nextInterval(2000, true, options), 2000);
});

test('nothing changed: the interval grows by the factor up to max', () => {
  const seen: number[] = [];
  let interval = options.base;
  for (let i = 0; i < 10; i++) {
    interval = nextInterval(interval, false, options);
    seen.push(interval);
  }
  assert.deepEqual(seen.slice(0, 3), [3000, 4500, 6750]);
  assert.equal(seen[seen.length - 1], 30000);
  assert.ok(seen.every((value, i) => i === 0 || value >= seen[i - 1]));
});

test('a nonsense previous interval restarts at base; max below base is raised to base', () => {
  assert.equal(nextInterval(Number.NaN, false, options), 2000);
  assert.equal(nextInterval(0, false, options), 2000);
  assert.equal(nextInterval(5000, false, { base: 5000, max: 1000, factor: 2 }), 5000);
});

test('settings in seconds become clamped milliseconds', () => {
  assert.deepEqual(backoffFromSettings(2, 30), { base: 2000, max: 30000, factor: 1.5 });
  assert.equal(backoffFromSettings(0, 30).base, 500);
  assert.equal(backoffFromSettings(10, 1).max, 10000);
  assert.equal(backoffFromSettings(1, 100000).max, 600000);
});

test('a read asked for inside the gap waits for its end; after it, or with a clock gone back, it starts now', () => {
  assert.equal(throttleDelay(10_500, 10_000, 2000), 1500);
  assert.equal(throttleDelay(12_000, 10_000, 2000), 0);
  assert.equal(throttleDelay(20_000, 10_000, 2000), 0);
  assert.equal(throttleDelay(10_000, 0, 2000), 0);
  assert.equal(throttleDelay(5_000, 10_000, 2000), 0);
});
