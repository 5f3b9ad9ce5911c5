import assert from 'node:assert/strict';
import { test } from 'node:test';

import { userLabel } from '../src/filters';

test('the user picker names each user with their active jobs', () => {
  assert.equal(
    userLabel({ user: 'bob', job_state_counts: { running: 2, pending: 1 }, task_state_counts: {} }),
    'bob · 3 active'
  );
  assert.equal(userLabel({ user: 'carol', job_state_counts: { running: 0 }, task_state_counts: {} }), 'carol');
});
