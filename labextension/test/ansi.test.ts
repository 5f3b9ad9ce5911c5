/**
 * The sidebar's log renderer runs the vectors the status panel's runs (`tests/data/ansi_vectors.json`,
 * read by `tests/test_views_ansi.py` and `tests/test_views_logtail.py` too): one behaviour, two renderers.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';

import { CUT_NOTE, lineSpans, MAX_LINE_CHARS } from '../src/ansi';
import { collapse, LogScreen, LogWindow, tracebackEnd, tracebackRows } from '../src/logrows';
import type { IShownRow } from '../src/logrows';
import { LIVE_LINES } from '../src/terminal';
import type { ILogLine } from '../src/types';

type Row = [string, string, string];
interface IVectors {
  max_line_chars: number;
  live_lines: number;
  render: { name: string; input: string; spans: Record<string, unknown>[] }[];
  screen: { name: string; rows: Row[]; shown: [number, string][] }[];
  tracebacks: { name: string; rows: Row[]; start: number; end: number; marked: number[] }[];
}

// compiled to lib/unit/test/: the repository's root is four levels up
const VECTORS: IVectors = JSON.parse(
  readFileSync(resolve(__dirname, '../../../../tests/data/ansi_vectors.json'), 'utf8')
);

function line(key: string, source: string, data: string, seq: number): ILogLine {
  const [taskId, attempt] = key.split(/:(?=\d+$)/);
  return { task_id: taskId, attempt: Number(attempt), seq, time_ms: null, source, data, level: '' };
}

/** What a reader sees of shown lines (their spans are worked out when read). */
function seen(rows: IShownRow[]): unknown[] {
  return rows.map(row => ({ line: row.line, stream: row.stream, order: row.order, spans: row.spans, text: row.text }));
}

function rowsOf(rows: Row[]): ILogLine[] {
  return rows.map(([key, source, data], index) => line(key, source, data, index + 1));
}

for (const vector of VECTORS.render) {
  test(`render: ${vector.name}`, () => {
    const spans = lineSpans(vector.input).map(span =>
      Object.fromEntries(Object.entries(span).filter(([, value]) => (Array.isArray(value) ? value.length : value)))
    );
    assert.deepEqual(spans, vector.spans);
  });
}

for (const vector of VECTORS.screen) {
  test(`screen: ${vector.name}`, () => {
    const rows = rowsOf(vector.rows);
    const shown = collapse(rows);
    assert.deepEqual(
      shown.map(row => [row.line.seq - 1, row.text]),
      vector.shown
    );
    const oneByOne = new LogScreen();
    rows.forEach(row => oneByOne.feed([row]));
    assert.deepEqual(seen(oneByOne.shown()), seen(shown));
  });
}

for (const vector of VECTORS.tracebacks) {
  test(`traceback: ${vector.name}`, () => {
    assert.equal(tracebackEnd(collapse(rowsOf(vector.rows)), vector.start), vector.end);
    assert.deepEqual(tracebackRows(collapse(rowsOf(vector.rows)), vector.start), vector.marked);
  });
}

test('the limits are the shared ones', () => {
  assert.equal(MAX_LINE_CHARS, VECTORS.max_line_chars);
  assert.equal(LIVE_LINES, VECTORS.live_lines);
  const spans = lineSpans('x'.repeat(MAX_LINE_CHARS + 10) + '\rab');
  assert.equal(spans[0].text, 'ab' + 'x'.repeat(MAX_LINE_CHARS - 2));
  assert.deepEqual(spans[1], { text: CUT_NOTE, classes: ['more'], style: '', href: '' });
});

test('a window keeps its cap, dropping the side away from where rows came', () => {
  const window = new LogWindow(5);
  const lines = (from: number, to: number): ILogLine[] =>
    Array.from({ length: to - from + 1 }, (_, i) => line('/u/j/0:0', 'stdout', `row ${from + i}`, from + i));
  window.reset(lines(10, 12), 12, false, true);
  window.append(lines(13, 15), 15, true);
  assert.deepEqual(
    [window.firstSeq, window.lastSeq, window.atStart, window.atEnd, window.cursor],
    [11, 15, false, true, 15]
  );
  window.prepend(lines(8, 10), true);
  assert.deepEqual([window.firstSeq, window.lastSeq, window.atStart, window.atEnd], [8, 12, true, false]);
});

test('an older page is played with the rows held after it: a bar drawn across the boundary is one line', () => {
  const window = new LogWindow(100);
  const frame = (seq: number): ILogLine =>
    line('/u/j/0:0', 'stderr', ` ${seq}%|# | ${seq}/100 [00:01<00:01, 1.00it/s]`, seq);
  window.reset([frame(5), frame(6)], 6, false, true);
  assert.deepEqual([window.rows.length, window.firstSeq, window.lastSeq], [1, 5, 6]);
  window.prepend([frame(3), frame(4)], false);
  assert.deepEqual([window.rows.map(row => row.line.seq), window.firstSeq, window.atEnd], [[6], 3, true]);
  assert.deepEqual(seen(window.rows), seen(collapse([frame(3), frame(4), frame(5), frame(6)])));
});

test('an older page keeps at most a page of the rows after it; the rest are read again', () => {
  const window = new LogWindow(100, 2);
  const row = (seq: number): ILogLine => line('/u/j/0:0', 'stdout', `row ${seq}`, seq);
  window.reset([row(5), row(6), row(7)], 7, false, true);
  window.prepend([row(3), row(4)], true);
  assert.deepEqual(
    [window.rows.map(shown => shown.line.seq), window.firstSeq, window.lastSeq, window.atStart, window.atEnd],
    [[3, 4, 5, 6], 3, 6, true, false]
  );
  window.append([row(7)], 7, true);
  assert.deepEqual([window.rows.map(shown => shown.line.seq), window.atEnd], [[3, 4, 5, 6, 7], true]);
});

test('a page grouped per task is put in cursor order, and a redraw across pages still collapses', () => {
  const window = new LogWindow(100);
  const frame = (seq: number, n: number): ILogLine =>
    line('/u/j/0:0', 'stderr', ` ${n}0%|# | ${n}/10 [00:0${n}<00:01, 1.00it/s]`, seq);
  window.reset([line('/u/j/1:0', 'stdout', 'task one', 2), frame(1, 1)], 2, true, true);
  assert.deepEqual(
    window.rows.map(row => row.line.seq),
    [1, 2]
  );
  window.append([frame(3, 2)], 3, true);
  assert.deepEqual(
    window.rows.map(row => row.line.seq),
    [2, 3]
  );
});
