/**
 * Links the sidebar builds or finds: a job's page on a cluster's own Iris dashboard gives exactly
 * the URLs of `tests/data/dashboard_links.json` (checked against marin-iris's `JobName.dashboard_url`
 * by `tests/conformance/test_dashboard_links.py`), and web addresses in job-provided text.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';

import { dashboardJobUrl, linkParts } from '../src/links';

interface IVectors {
  cases: { origin: string; job_id: string; url: string }[];
}

// compiled to lib/unit/test/: the repository's root is four levels up
const VECTORS: IVectors = JSON.parse(readFileSync(resolve(__dirname, '../../../../tests/data/dashboard_links.json'), 'utf8'));

test("a job's dashboard link is Iris's, for every vector", () => {
  assert.ok(VECTORS.cases.length >= 10);
  for (const { origin, job_id, url } of VECTORS.cases) {
    assert.equal(dashboardJobUrl(origin, job_id), url, job_id);
  }
});

test('web addresses become links, trailing punctuation stays text, the rest is text', () => {
  assert.deepEqual(linkParts('step 120/1000, loss 2.31, https://wandb.ai/marin/run/abc.'), [
    { text: 'step 120/1000, loss 2.31, ' },
    { text: 'https://wandb.ai/marin/run/abc', href: 'https://wandb.ai/marin/run/abc' },
    { text: '.' }
  ]);
  assert.deepEqual(linkParts('no links <b>here</b>'), [{ text: 'no links <b>here</b>' }]);
  assert.deepEqual(linkParts(''), [{ text: '' }]);
  const hostile = 'see javascript:alert(1) and http://a.b/x"onmouseover=alert(1)';
  const parts = linkParts(hostile);
  assert.equal(parts.map(p => p.text).join(''), hostile);
  assert.deepEqual(parts.filter(p => p.href).map(p => p.href), ['http://a.b/x']);
});
