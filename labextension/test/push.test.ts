import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseEvents } from '../src/push';

test('complete frames become events and an incomplete tail is kept for the next chunk', () => {
  const chunk =
    'retry: 2000\n\nevent: hello\ndata: {"kind":"hello","source":"feed","jobIds":[],"message":""}\n\n' +
    ': keepalive\n\nevent: changed\ndata: {"kind":"cha';
  const first = parseEvents(chunk);
  assert.deepEqual(first.events, [{ kind: 'hello', source: 'feed', jobIds: [], message: '' }]);
  const second = parseEvents(first.rest + 'nged","source":"feed","jobIds":["/a/x"],"message":""}\n\n');
  assert.deepEqual(second.events, [{ kind: 'changed', source: 'feed', jobIds: ['/a/x'], message: '' }]);
  assert.equal(second.rest, '');
});

test('CRLF framing, multi-line data and garbage', () => {
  const parsed = parseEvents(
    'data: {"kind":\r\ndata: "error","message":"down"}\r\n\r\ndata: not json\n\ndata: {"x":1}\n\n'
  );
  assert.deepEqual(parsed.events, [{ kind: 'error', message: 'down' }]);
});
