import assert from 'node:assert/strict';
import { test } from 'node:test';

import { JOB_STATES, badgeFor, isActive } from '../src/badges';

test('every filterable job state has its own badge with a label and a tone', () => {
  for (const state of JOB_STATES) {
    const badge = badgeFor(state);
    assert.ok(badge.label.length > 0, state);
    assert.notEqual(badge.description, `State "${state}".`, `${state} falls back to the unknown badge`);
  }
});

test('terminal states are exactly the ones Iris never changes again', () => {
  const terminal = JOB_STATES.filter(state => badgeFor(state).terminal);
  assert.deepEqual(terminal, ['succeeded', 'failed', 'killed', 'worker_failed', 'unschedulable']);
  assert.equal(isActive('running'), true);
  assert.equal(isActive('pending'), true);
  assert.equal(isActive('killed'), false);
});

test('tones: success green, failures red, cancel amber, running active', () => {
  assert.equal(badgeFor('succeeded').tone, 'success');
  assert.equal(badgeFor('failed').tone, 'danger');
  assert.equal(badgeFor('worker_failed').tone, 'danger');
  assert.equal(badgeFor('unschedulable').tone, 'danger');
  assert.equal(badgeFor('killed').tone, 'warning');
  assert.equal(badgeFor('killed').label, 'killed');
  assert.equal(badgeFor('running').tone, 'active');
  assert.equal(badgeFor('pending').tone, 'neutral');
});

test('task-only states have badges too', () => {
  assert.equal(badgeFor('preempted').tone, 'warning');
  assert.equal(badgeFor('cosched_failed').label, 'gang failed');
  assert.equal(badgeFor('assigned').terminal, false);
});

test('an unknown state is shown as itself, neutral and active', () => {
  const badge = badgeFor('some_new_state');
  assert.equal(badge.label, 'some new state');
  assert.equal(badge.tone, 'neutral');
  assert.equal(badge.terminal, false);
  assert.equal(badgeFor('').label, 'unknown');
});
