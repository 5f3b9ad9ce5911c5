/**
 * Links the sidebar builds or finds: a job's page on a cluster's own Iris dashboard gives exactly
 * the URLs of `tests/data/dashboard_links.json` (checked against marin-iris's `JobName.dashboard_url`
 * by `tests/conformance/test_dashboard_links.py`).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';

import { dashboardJobUrl } from '../src/links';

interface IVectors {
  cases: { origin: string; job_id: string; url: string }[];
}

// compiled to lib/unit/test/: the repository's root is four levels up
const VECTORS: IVectors = JSON.parse(
  readFileSync(resolve(__dirname, '../../../../tests/data/dashboard_links.json'), 'utf8')
);

test("a job's dashboard link is Iris's, for every vector", () => {
  assert.ok(VECTORS.cases.length >= 10);
  for (const { origin, job_id, url } of VECTORS.cases) {
    assert.equal(dashboardJobUrl(origin, job_id), url, job_id);
  }
});
