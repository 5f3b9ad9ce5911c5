import assert from 'node:assert/strict';
import { test } from 'node:test';

import { segmentsText, taskSegments } from '../src/progress';

test("segments follow Iris's order and the rest counts as pending", () => {
  const segments = taskSegments({
    replicas: 8,
    task_state_counts: { pending: 1, running: 2, succeeded: 3, failed: 1 }
  });
  assert.deepEqual(
    segments.map(s => [s.state, s.count]),
    [
      ['succeeded', 3],
      ['running', 2],
      ['failed', 1],
      ['pending', 2]
    ]
  );
  assert.equal(
    segments.reduce((sum, s) => sum + s.share, 0),
    1
  );
  assert.equal(segmentsText(segments), '3 succeeded, 2 running, 1 failed, 2 pending');
});

test('a job without tasks has no segments, and bad counts never go negative', () => {
  assert.deepEqual(taskSegments({ replicas: 0, task_state_counts: { running: 1 } }), []);
  assert.equal(segmentsText([]), 'no tasks');
  const over = taskSegments({ replicas: 1, task_state_counts: { succeeded: 2, killed: -1 } });
  assert.deepEqual(
    over.map(s => [s.state, s.count]),
    [['succeeded', 2]]
  );
});
