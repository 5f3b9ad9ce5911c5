/**
 * Plays log pages through the sidebar's renderer for `tests/test_labextension.py`, which compares
 * the lines with the status panel's on random pages: reads `[[key, source, data], ...][]` (JSON) on
 * stdin and writes, per page, its shown lines as `[seq of the row that wrote it, spans]`.
 */
import { readFileSync } from 'node:fs';

import { collapse } from '../src/logrows';
import type { ILogLine } from '../src/types';

const pages: [string, string, string][][] = JSON.parse(readFileSync(0, 'utf8'));
const shown = pages.map(rows => {
  const lines: ILogLine[] = rows.map(([key, source, data], index) => {
    const [taskId, attempt] = key.split(/:(?=\d+$)/);
    return { task_id: taskId, attempt: Number(attempt), seq: index + 1, time_ms: null, source, data, level: '' };
  });
  return collapse(lines).map(row => [row.line.seq, row.spans]);
});
process.stdout.write(JSON.stringify(shown));
