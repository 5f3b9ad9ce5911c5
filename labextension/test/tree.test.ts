/**
 * The job tree: lazy children per parent, rows at any depth, refresh of the shown expanded parents
 * only (and of the dirty ones), paging past 500 children, failures kept beside what was shown.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { JobTree } from '../src/tree';
import type { TreeRow } from '../src/tree';
import type { IJob, IJobPage } from '../src/types';

function job(id: string, hasChildren = false): IJob {
  return {
    job_id: id,
    parent_job_id: id.split('/').length > 3 ? id.slice(0, id.lastIndexOf('/')) : '',
    has_children: hasChildren,
    name: id.slice(id.lastIndexOf('/') + 1),
    user: 'alice',
    state: 'running',
    terminal: false,
    replicas: 1,
    completed: 0,
    task_state_counts: {},
    failure_count: 0,
    preemption_count: 0,
    pending_reason: '',
    status_message: '',
    error: '',
    exit_code: 0,
    submitted_ms: 1,
    started_ms: null,
    finished_ms: null,
    device: 'cpu',
    cpu_millicores: 1000,
    memory_bytes: 0,
    disk_bytes: 0
  };
}

/** A fake controller: children by parent, and every call it answered. */
function controller(children: Record<string, IJob[]>): {
  calls: string[];
  fetch: (p: string, o: number, l: number) => Promise<IJobPage>;
} {
  const calls: string[] = [];
  return {
    calls,
    fetch: async (parent, offset, limit) => {
      calls.push(`${parent}@${offset}`);
      const all = children[parent] ?? [];
      const jobs = all.slice(offset, offset + limit);
      return { jobs, total: all.length, has_more: offset + jobs.length < all.length };
    }
  };
}

function shape(rows: TreeRow[]): string[] {
  return rows.map(r => `${' '.repeat(r.depth)}${r.kind === 'job' ? `${r.job.name}${r.expanded ? '▾' : ''}` : r.kind}`);
}

test('children are read when a parent is first expanded, then shown one level deeper, at any depth', async () => {
  const root = job('/alice/coord', true);
  const steps = [job('/alice/coord/step-1', true), job('/alice/coord/step-2'), job('/alice/coord/step-3')];
  const fake = controller({ '/alice/coord': steps, '/alice/coord/step-1': [job('/alice/coord/step-1/sub')] });
  const tree = new JobTree(fake.fetch);
  assert.deepEqual(shape(tree.rows([root])), ['coord']);
  const reading = tree.toggle('/alice/coord');
  assert.deepEqual(shape(tree.rows([root])), ['coord▾', ' loading']);
  await reading;
  await tree.toggle('/alice/coord/step-1');
  assert.deepEqual(shape(tree.rows([root])), ['coord▾', ' step-1▾', '  sub', ' step-2', ' step-3']);
  assert.deepEqual(fake.calls, ['/alice/coord@0', '/alice/coord/step-1@0']);
});

test('a refresh re-reads the shown expanded parents (only the dirty ones when named) and shows new children', async () => {
  const root = job('/alice/coord', true);
  const children: Record<string, IJob[]> = { '/alice/coord': [job('/alice/coord/a', true)], '/alice/coord/a': [] };
  const fake = controller(children);
  const tree = new JobTree(fake.fetch);
  await tree.toggle('/alice/coord');
  await tree.toggle('/alice/coord/a');
  tree.restore(['/alice/elsewhere']); // expanded but not shown: never read
  children['/alice/coord/a'] = [job('/alice/coord/a/new')];
  fake.calls.length = 0;
  await tree.refresh([root], new Set(['/alice/coord/a']));
  assert.deepEqual(fake.calls, ['/alice/coord/a@0']);
  assert.deepEqual(shape(tree.rows([root])), ['coord▾', ' a▾', '  new']);
  fake.calls.length = 0;
  await tree.refresh([root]);
  assert.deepEqual(fake.calls.sort(), ['/alice/coord/a@0', '/alice/coord@0']);
  await tree.toggle('/alice/coord'); // collapse: its children are no longer shown, nor read
  fake.calls.length = 0;
  await tree.refresh([root]);
  assert.deepEqual(fake.calls, []);
  assert.deepEqual(tree.expanded, ['/alice/coord/a', '/alice/elsewhere']);
});

test('past 500 children a "more" row reads the next page, and a refresh re-reads every page shown', async () => {
  const root = job('/alice/wide', true);
  const many = Array.from({ length: 1200 }, (_, i) => job(`/alice/wide/s${i}`));
  const fake = controller({ '/alice/wide': many });
  const tree = new JobTree(fake.fetch);
  await tree.toggle('/alice/wide');
  let rows = tree.rows([root]);
  assert.equal(rows.length, 1 + 500 + 1);
  assert.deepEqual(rows[rows.length - 1], {
    kind: 'more',
    parent: '/alice/wide',
    depth: 1,
    shown: 500,
    total: 1200,
    capped: false
  });
  await tree.more('/alice/wide');
  rows = tree.rows([root]);
  assert.equal(rows.filter(r => r.kind === 'job').length, 1 + 1000);
  fake.calls.length = 0;
  await tree.refresh([root]);
  assert.deepEqual(fake.calls, ['/alice/wide@0', '/alice/wide@500']);
});

test('a failed read keeps what was shown and says why; a late answer of an older read is dropped', async () => {
  const root = job('/alice/coord', true);
  let fail = false;
  let release: (() => void) | null = null;
  const tree = new JobTree(async parent => {
    if (fail) {
      throw new Error('controller gone');
    }
    if (release === null && parent === '/alice/coord') {
      await new Promise<void>(resolve => (release = resolve)); // the first read hangs
      return { jobs: [job('/alice/coord/old')], total: 1, has_more: false };
    }
    return { jobs: [job('/alice/coord/new')], total: 1, has_more: false };
  });
  const first = tree.toggle('/alice/coord');
  await tree.refresh([root]); // a newer read answers first
  (release as unknown as () => void)();
  await first;
  assert.deepEqual(shape(tree.rows([root])), ['coord▾', ' new']);
  fail = true;
  await tree.refresh([root]);
  const rows = tree.rows([root]);
  assert.deepEqual(shape(rows), ['coord▾', ' new', ' error']);
  assert.equal(rows[2].kind === 'error' && rows[2].message, 'controller gone');
});

test('a restored view reads every level of expanded parents in one refresh', async () => {
  const root = job('/alice/coord', true);
  const fake = controller({
    '/alice/coord': [job('/alice/coord/a', true)],
    '/alice/coord/a': [job('/alice/coord/a/b', true)],
    '/alice/coord/a/b': [job('/alice/coord/a/b/c')]
  });
  const tree = new JobTree(fake.fetch);
  tree.restore(['/alice/coord', '/alice/coord/a', '/alice/coord/a/b']);
  await tree.refresh([root], new Set()); // nothing dirty, but nothing read yet either
  assert.deepEqual(shape(tree.rows([root])), ['coord▾', ' a▾', '  b▾', '   c']);
  assert.deepEqual(fake.calls, ['/alice/coord@0', '/alice/coord/a@0', '/alice/coord/a/b@0']);
});
