import assert from 'node:assert/strict';
import { test } from 'node:test';

import { OVERSCAN, windowRange } from '../src/vlist';

test('only the rows in view and the overscan around them are rendered', () => {
  assert.deepEqual(windowRange(0, 640, 64, 10_000), [0, 10 + OVERSCAN]);
  assert.deepEqual(windowRange(64 * 100, 640, 64, 10_000), [100 - OVERSCAN, 110 + OVERSCAN]);
  assert.deepEqual(windowRange(64 * 9995, 640, 64, 10_000), [9995 - OVERSCAN, 10_000]);
  assert.deepEqual(windowRange(0, 640, 64, 3), [0, 3]);
  assert.deepEqual(windowRange(-50, 640, 64, 0), [0, 0]);
  const [start, end] = windowRange(0, 0, 64, 10_000); // not laid out yet: a bounded first window
  assert.ok(start === 0 && end > 0 && end <= 40);
});
