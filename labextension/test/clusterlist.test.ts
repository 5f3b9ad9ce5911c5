import assert from 'node:assert/strict';
import { test } from 'node:test';

import { clusterOptions, EMBEDDED_LABEL } from '../src/clusterlist';

test('the embedded controller comes first, then the named clusters', () => {
  const options = clusterOptions({
    current: null,
    available: null,
    clusters: [
      { name: 'marin', logged_in: true },
      { name: 'twin', logged_in: false }
    ]
  });
  assert.deepEqual(options, [
    ['', EMBEDDED_LABEL],
    ['marin', 'Cluster: marin'],
    ['twin', 'Cluster: twin']
  ]);
});

test('the current cluster stays selectable when the listing lacks it', () => {
  const options = clusterOptions({ current: 'gone', available: null, clusters: [] });
  assert.deepEqual(options, [
    ['', EMBEDDED_LABEL],
    ['gone', 'Cluster: gone']
  ]);
});
