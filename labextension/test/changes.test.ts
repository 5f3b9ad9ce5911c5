import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fingerprint, JobWatcher } from '../src/changes';
import type { IJob } from '../src/types';

function job(id: string, state: string, extra: Partial<IJob> = {}): IJob {
  return {
    job_id: `/alice/${id}`,
    parent_job_id: '',
    has_children: false,
    name: id,
    user: 'alice',
    state,
    terminal: !['pending', 'running', 'building'].includes(state),
    replicas: 2,
    completed: 0,
    task_state_counts: {},
    failure_count: 0,
    preemption_count: 0,
    pending_reason: '',
    status_message: '',
    error: '',
    exit_code: 0,
    submitted_ms: 1000,
    started_ms: null,
    finished_ms: null,
    device: 'cpu',
    cpu_millicores: 1000,
    memory_bytes: 0,
    disk_bytes: 0,
    ...extra
  };
}

test('fingerprint changes with state and progress, not with unrelated fields', () => {
  const a = fingerprint([job('a', 'running')]);
  assert.equal(fingerprint([job('a', 'running', { status_message: 'x' })]), a);
  assert.notEqual(fingerprint([job('a', 'succeeded')]), a);
  assert.notEqual(fingerprint([job('a', 'running', { completed: 1 })]), a);
  assert.notEqual(fingerprint([job('a', 'running'), job('b', 'pending')]), a);
});

test('an active job that reaches a terminal state is reported once', () => {
  const watcher = new JobWatcher(500, 'alice');
  assert.deepEqual(watcher.update([job('a', 'running')]), []);
  assert.deepEqual(
    watcher.update([job('a', 'succeeded')]).map(j => j.name),
    ['a']
  );
  assert.deepEqual(watcher.update([job('a', 'succeeded')]), []);
});

test('jobs finished before watching started never notify; quick new ones do', () => {
  const watcher = new JobWatcher(5000, null);
  assert.deepEqual(watcher.update([job('old', 'failed', { submitted_ms: 1000 })]), []);
  assert.deepEqual(
    watcher.update([job('quick', 'failed', { submitted_ms: 6000 })]).map(j => j.name),
    ['quick']
  );
});

test("only the user's jobs notify", () => {
  const watcher = new JobWatcher(0, 'alice');
  watcher.update([job('mine', 'running'), job('theirs', 'running', { user: 'bob' })]);
  const done = watcher.update([job('mine', 'killed'), job('theirs', 'killed', { user: 'bob' })]);
  assert.deepEqual(
    done.map(j => j.name),
    ['mine']
  );
});

test("active says whether the last update held one of the user's jobs not yet ended", () => {
  const watcher = new JobWatcher(0, 'alice');
  assert.equal(watcher.active, false);
  watcher.update([job('mine', 'succeeded'), job('theirs', 'running', { user: 'bob' })]);
  assert.equal(watcher.active, false);
  for (const state of ['pending', 'building', 'running']) {
    watcher.update([job('mine', state)]);
    assert.equal(watcher.active, true, state);
  }
  watcher.update([job('mine', 'killed')]);
  assert.equal(watcher.active, false);
});
