import assert from 'node:assert/strict';
import { test } from 'node:test';

import { diagnosisLine, pathUnderUser, rowLabel } from '../src/rows';
import type { IJob } from '../src/types';

const base = {
  job_id: '/alice/coord/step-1',
  name: 'step-1',
  terminal: false,
  state: 'pending',
  error: '',
  pending_reason: ''
};

test("a row is labelled by the job's own name, or in a flat list by its path under the user", () => {
  assert.equal(pathUnderUser('/alice/coord/step-1/sub'), 'coord/step-1/sub');
  assert.equal(rowLabel(base as IJob, false), 'step-1');
  assert.equal(rowLabel(base as IJob, true), 'coord/step-1');
  assert.equal(rowLabel({ job_id: '/alice/Train-GPT' }, false), 'Train-GPT'); // not the controller's lower-cased name
});

test("a row's one line of diagnosis: the error of a failure, else the Scheduler half of a pending reason", () => {
  const reason = 'Scheduler: No workers match constraints: [device-type=tpu]\n\nAutoscaler: (scaling up) Waiting';
  assert.deepEqual(diagnosisLine({ ...base, pending_reason: reason } as IJob), {
    text: 'Scheduler: No workers match constraints: [device-type=tpu]',
    tone: 'waiting'
  });
  assert.deepEqual(
    diagnosisLine({ ...base, state: 'failed', terminal: true, error: 'Exit code 3', pending_reason: reason } as IJob),
    {
      text: 'Exit code 3',
      tone: 'error'
    }
  );
  assert.deepEqual(diagnosisLine({ ...base, state: 'succeeded', terminal: true } as IJob), { text: '', tone: '' });
});
