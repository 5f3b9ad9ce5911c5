import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { ITaskUsage } from '../src/types';
import { agoText, ageText, silenceText, statusAgeText, usageCells, usageSettings } from '../src/usage';

function usage(overrides: Partial<ITaskUsage> = {}): ITaskUsage {
  return {
    task_id: '/alice/j/0',
    index: 0,
    state: 'running',
    now_cpu_millicores: 980,
    now_memory_mb: 300,
    peak_memory_mb: 310,
    requested_cpu_millicores: 1000,
    requested_memory_mb: 256,
    samples: [],
    warning: '',
    memory_text: '',
    cpu_text: '0.98 cores',
    requested_cpu_text: '1 core',
    status_ms: null,
    last_output_ms: null,
    quiet_since_ms: null,
    ...overrides
  };
}

test('ages are whole units, "ago" says just now at first', () => {
  assert.equal(ageText(999), '0 s');
  assert.equal(ageText(12 * 60_000 + 59_999), '12 min');
  assert.equal(agoText(4_999), 'just now');
  assert.equal(agoText(4 * 60_000 + 30_000), '4 min ago');
});

test('a running task silent past the threshold says so; one that spoke, or stopped, does not', () => {
  usageSettings.silenceMs = null; // the server's threshold
  const now = 10_000_000;
  assert.equal(silenceText(usage({ quiet_since_ms: now - 12 * 60_000 }), now, 600_000), 'no output for 12 min');
  assert.equal(silenceText(usage({ quiet_since_ms: now - 599_999 }), now, 600_000), '');
  assert.equal(silenceText(usage({ quiet_since_ms: null }), now, 600_000), '');
  assert.equal(silenceText(undefined, now, 600_000), '');
  usageSettings.silenceMs = 3000; // the user's setting wins
  assert.equal(silenceText(usage({ quiet_since_ms: now - 4000 }), now, 600_000), 'no output for 4 s');
  usageSettings.silenceMs = null;
});

test('status text age and the MEM / PEAK / CPU cells', () => {
  assert.equal(statusAgeText(usage({ status_ms: 0 }), 4 * 60_000), 'reported 4 min ago');
  assert.equal(statusAgeText(usage(), 1), '');
  assert.deepEqual(usageCells(usage()), ['300 MiB', '310 MiB', '0.98 cores']);
  assert.deepEqual(usageCells(usage({ now_memory_mb: null })), ['-', '-', '-']);
  assert.deepEqual(usageCells(undefined), ['-', '-', '-']);
});
