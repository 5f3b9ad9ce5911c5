/**
 * The sidebar's status text renderer runs the vectors the status panel's runs
 * (`tests/data/status_text_vectors.json`, read by `tests/test_views_statustext.py` too).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';

import { statusSpans } from '../src/statustext';

interface IVector {
  name: string;
  text: string;
  spans: Record<string, unknown>[];
}

// compiled to lib/unit/test/: the repository's root is four levels up
const VECTORS: IVector[] = JSON.parse(
  readFileSync(resolve(__dirname, '../../../../tests/data/status_text_vectors.json'), 'utf8')
).status_text;

for (const vector of VECTORS) {
  test(`status text: ${vector.name}`, () => {
    assert.deepEqual(statusSpans(vector.text), vector.spans);
  });
}
