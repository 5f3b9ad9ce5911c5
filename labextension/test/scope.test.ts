import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  DEFAULT_VIEW,
  listTitle,
  MAX_LIST_OFFSET,
  pageQuery,
  parseSaved,
  pastDeepestPage,
  saveable
} from '../src/scope';

test("mine is the current user's roots, Iris's way; everyone drops the user; a picked user is theirs", () => {
  assert.deepEqual(pageQuery(DEFAULT_VIEW, 'alice'), { scope: 'roots', user: 'alice', offset: 0, limit: 50 });
  assert.deepEqual(pageQuery({ ...DEFAULT_VIEW, who: 'everyone' }, 'alice'), { scope: 'roots', offset: 0, limit: 50 });
  assert.deepEqual(pageQuery({ ...DEFAULT_VIEW, who: 'user', user: 'bob' }, 'alice').user, 'bob');
  assert.equal(pageQuery(DEFAULT_VIEW, null).user, undefined); // the server cannot tell who "me" is
  assert.equal(listTitle(DEFAULT_VIEW, 'alice'), 'My jobs');
  assert.equal(listTitle({ ...DEFAULT_VIEW, who: 'user', user: 'bob' }, 'alice'), "bob's jobs");
  assert.equal(listTitle({ ...DEFAULT_VIEW, who: 'everyone', name: 'x' }, 'alice'), "Everyone's jobs matching");
});

test('a search or a state filter runs on the server over every depth; offsets stop at Iris’s cap', () => {
  assert.deepEqual(pageQuery({ ...DEFAULT_VIEW, name: 'eval', state: 'running' }, 'alice'), {
    scope: 'all',
    user: 'alice',
    state: 'running',
    name: 'eval',
    offset: 0,
    limit: 50
  });
  assert.equal(pageQuery({ ...DEFAULT_VIEW, offset: 99999 }, 'a').offset, MAX_LIST_OFFSET);
  assert.equal(pastDeepestPage(4950), false);
  assert.equal(pastDeepestPage(5000), true);
});

test('a saved view round-trips, and anything malformed in the state DB is dropped', () => {
  const saved = saveable({ ...DEFAULT_VIEW, who: 'user', user: 'bob', name: 'x', offset: 100 }, ['/bob/a', '/bob/a/b']);
  assert.deepEqual(saved, { who: 'user', user: 'bob', state: '', name: 'x', expanded: ['/bob/a', '/bob/a/b'] });
  assert.deepEqual(parseSaved({ views: { twin: saved } }), { twin: saved });
  assert.deepEqual(parseSaved(null), {});
  assert.deepEqual(parseSaved({ views: { a: { who: 'root' }, b: 7, c: { ...saved, expanded: 'no' } } }), {});
  assert.deepEqual(parseSaved({ views: { a: { ...saved, expanded: ['/x', 3] } } }).a.expanded, ['/x']);
  const many = saveable(
    DEFAULT_VIEW,
    Array.from({ length: 500 }, (_, i) => `/a/${i}`)
  ).expanded;
  assert.equal(many.length, 200);
  assert.equal(many[199], '/a/499'); // the most recently expanded are kept
});
