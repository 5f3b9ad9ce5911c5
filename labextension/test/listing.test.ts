/**
 * The listing keeps one view per cluster: switching clusters saves the current view and
 * expanded parents and brings back the other cluster's (or the default), and a restored state DB
 * value gives the current cluster its saved view.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { JobListing } from '../src/listing';

test('each cluster has its own view and expanded parents', () => {
  const listing = new JobListing();
  let saves = 0;
  listing.changedView.connect(() => saves++);
  listing.setView({ who: 'everyone', name: 'eval' });
  listing.tree.restore(['/alice/coord']);
  assert.ok(saves > 0);
  assert.equal(listing.useCluster('twin'), true);
  assert.deepEqual([listing.view.who, listing.view.name, listing.tree.expanded], ['mine', '', []]);
  listing.setView({ who: 'user', user: 'bob' });
  assert.equal(listing.useCluster(''), true);
  assert.deepEqual(
    [listing.view.who, listing.view.name, listing.tree.expanded],
    ['everyone', 'eval', ['/alice/coord']]
  );
  assert.equal(listing.useCluster(''), false);
  const saved = listing.saved();
  assert.deepEqual(Object.keys(saved.views).sort(), ['', 'twin']);
  assert.equal(saved.views.twin.user, 'bob');

  const again = new JobListing();
  again.restore(JSON.parse(JSON.stringify(saved)));
  assert.deepEqual([again.view.who, again.view.name, again.tree.expanded], ['everyone', 'eval', ['/alice/coord']]);
  again.useCluster('twin');
  assert.deepEqual([again.view.who, again.view.user], ['user', 'bob']);
  again.restore('garbage');
  assert.equal(again.view.who, 'user'); // nothing usable: the view stays
});

test("the page is the one notifications watch only when it is the current user's newest roots", () => {
  const listing = new JobListing();
  assert.equal(listing.showsRecent('alice'), true);
  listing.setView({ who: 'user', user: 'alice' }); // picking yourself is "Mine"
  assert.equal(listing.showsRecent('alice'), true);
  listing.setView({ who: 'everyone' });
  assert.equal(listing.showsRecent('alice'), false);
  assert.equal(listing.showsRecent(null), true); // no known user: "Mine" is everyone's too
  listing.setView({ who: 'mine', offset: 50 });
  assert.equal(listing.showsRecent('alice'), false);
  listing.setView({ name: 'eval' });
  assert.equal(listing.showsRecent('alice'), false);
});
