import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  errorText,
  formatAgo,
  formatBytes,
  formatDuration,
  jobDuration,
  jobRetriesText,
  counted,
  progressText,
  resourcesText,
  taskRetriesText
} from '../src/format';

test('durations', () => {
  assert.equal(formatDuration(0), '0 ms');
  assert.equal(formatDuration(350), '350 ms');
  assert.equal(formatDuration(4_299), '4.2 s');
  assert.equal(formatDuration(75_000), '1m 15s');
  assert.equal(formatDuration(3_900_000), '1h 05m');
  assert.equal(formatDuration(90_000_000), '25h 00m');
  assert.equal(formatDuration(-5), '0 ms');
});

test('relative times', () => {
  assert.equal(formatAgo(0, 10_000), 'just now');
  assert.equal(formatAgo(0, 5 * 60_000), '5 min ago');
  assert.equal(formatAgo(0, 3 * 3_600_000), '3 h ago');
  assert.equal(formatAgo(0, 2 * 86_400_000), '2 d ago');
});

test('run time: null before start, running until now, fixed once finished', () => {
  assert.equal(jobDuration({ started_ms: null, finished_ms: null }, 100), null);
  assert.equal(jobDuration({ started_ms: 40, finished_ms: null }, 100), 60);
  assert.equal(jobDuration({ started_ms: 40, finished_ms: 70 }, 100), 30);
});

test('progress and resources', () => {
  assert.equal(progressText({ completed: 3, replicas: 4 }), '3/4 tasks done');
  assert.equal(progressText({ completed: 0, replicas: 1 }), '0/1 task done');
  assert.equal(formatBytes(512 * 2 ** 20), '512 MiB');
  assert.equal(formatBytes(1.5 * 2 ** 30), '1.5 GiB');
  assert.equal(resourcesText({ cpu_millicores: 1000, memory_bytes: 2 ** 30, device: 'cpu' }), '1 core · 1 GiB RAM');
  assert.equal(resourcesText({ cpu_millicores: 4000, memory_bytes: 0, device: 'v5p-8' }), '4 cores · v5p-8');
});

test('failures against the limits read as the status panel reads them', () => {
  assert.equal(
    jobRetriesText({ failure_count: 3, preemption_count: 1 }, { max_task_failures: 2 }),
    '3 failed attempts (max_task_failures 2), 1 preemption'
  );
  assert.equal(
    taskRetriesText({ failure_count: 1, preemption_count: 0 }, { max_retries_failure: 1, max_retries_preemption: 100 }),
    '1 failure (max_retries_failure 1), 0 preemptions (max_retries_preemption 100)'
  );
});

test("a failure shows as one line: an Error's message, anything else thrown as text", () => {
  assert.equal(errorText(new Error('controller gone')), 'controller gone');
  assert.equal(errorText('timed out'), 'timed out');
  assert.equal(errorText(503), '503');
});

test('a count and its word: singular only for exactly one', () => {
  assert.equal(counted(1, 'replica'), '1 replica');
  assert.equal(counted(0, 'replica'), '0 replicas');
  assert.equal(counted(8, 'replica'), '8 replicas');
});
