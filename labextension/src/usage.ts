/**
 * How each task of the open job uses what it asked for (`GET /fray/jobs/<id>/usage`): a CPU and a
 * memory sparkline (uPlot, redrawn with `setData` on each refresh, never rebuilt), a memory bar of
 * now and peak against the request, the server's words for the numbers and its over-request
 * warning; the job's MEM / PEAK MEM / CPU cells for the tasks table (Iris's job page); and a task's
 * signs of life: its status text's age ("reported 4 min ago") and, while it runs, "no output for
 * 12 min" once its newest sign of life is older than the server's threshold (`$FRAY_SILENCE_AFTER`,
 * the status panel's too) or, when the user set one, the `silenceSeconds` setting.
 *
 * Rules: sizes and ages go through the display vocabulary (`format.ts`, `vocabulary.ts`); what
 * the server already worded (memory, CPU, warning, totals) is shown as it came.
 */
import uPlot from 'uplot';

import { el } from './dom';
import { formatBytes } from './format';
import type { ITaskUsage, IUsageSample } from './types';
import { AGE_UNITS, JUST_NOW_MS, type Tone } from './vocabulary';

const MIB = 2 ** 20;
const SPARK_WIDTH = 120;
const SPARK_HEIGHT = 26;

/** Settings the views read (the plugin sets them from the user's settings). */
export const usageSettings: { silenceMs: number | null } = {
  /** A running task with no sign of life for longer than this says "no output for …" (null: the server's). */
  silenceMs: null
};

/** An age (`12 s`, `4 min`, `3 h`, `2 d`): the vocabulary's `age_ms`. */
export function ageText(ms: number): string {
  const whole = Math.max(0, Math.floor(ms));
  for (const [length, unit] of AGE_UNITS) {
    if (whole >= length) {
      return `${Math.floor(whole / length)} ${unit}`;
    }
  }
  return `0 ${AGE_UNITS[AGE_UNITS.length - 1][1]}`;
}

/** Something `ms` ago: `just now`, `4 min ago` (the vocabulary's `ago_ms`). */
export function agoText(ms: number): string {
  return ms < JUST_NOW_MS ? 'just now' : `${ageText(ms)} ago`;
}

/** "no output for 12 min" for a running task silent at least the setting (else `serverAfterMs`), else "". */
export function silenceText(usage: ITaskUsage | undefined, now: number, serverAfterMs: number): string {
  const since = usage?.quiet_since_ms ?? null;
  if (since === null || now - since < (usageSettings.silenceMs ?? serverAfterMs)) {
    return '';
  }
  return `no output for ${ageText(now - since)}`;
}

/** "reported 4 min ago" for a task that reported status text, else "". */
export function statusAgeText(usage: ITaskUsage | undefined, now: number): string {
  const at = usage?.status_ms ?? null;
  return at === null ? '' : `reported ${agoText(now - at)}`;
}

/** The tasks table's MEM, PEAK MEM and CPU cells of one task (Iris's job page; "-" without a sample). */
export function usageCells(usage: ITaskUsage | undefined): [string, string, string] {
  if (!usage || usage.now_memory_mb === null) {
    return ['-', '-', '-'];
  }
  return [formatBytes(usage.now_memory_mb * MIB), formatBytes(usage.peak_memory_mb * MIB), usage.cpu_text];
}

/** The colour of the vocabulary's `tone` in the current theme, read from its badge's style (a
 * canvas stroke takes no `var()`; the colours are the vocabulary's, never restated here). */
function toneColor(tone: Tone): string {
  const probe = el('span', { className: `fj-Badge fj-Badge-${tone}`, attrs: { hidden: '' } });
  document.body.append(probe);
  const color = getComputedStyle(probe).backgroundColor;
  probe.remove();
  return color || 'currentColor';
}

/** A small time-series chart of one number (uPlot), stroked in the colour of the vocabulary's `tone`. */
class Sparkline {
  constructor(
    readonly node: HTMLElement,
    private readonly label: string,
    private readonly tone: Tone
  ) {}

  /** Draw `values` over `times` (epoch ms), the y axis from 0 to at least `floor`. */
  draw(times: number[], values: number[], floor: number): void {
    const data: uPlot.AlignedData = [times.map(t => t / 1000), values];
    this._floor = floor;
    if (this._plot) {
      this._plot.setData(data);
      return;
    }
    if (!times.length) {
      return;
    }
    const color = toneColor(this.tone);
    this._plot = new uPlot(
      {
        width: SPARK_WIDTH,
        height: SPARK_HEIGHT,
        legend: { show: false },
        cursor: { show: false },
        axes: [{ show: false }, { show: false }],
        scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(max, this._floor) * 1.05] } },
        series: [{}, { label: this.label, stroke: color, width: 1.5, points: { show: false } }]
      },
      data,
      this.node
    );
  }

  private _plot: uPlot | null = null;
  private _floor = 0;
}

/** One task's usage block: sparklines, memory bar, words, warning. Kept across refreshes. */
class TaskUsageBlock {
  constructor(taskId: string) {
    const cpu = el('span', { className: 'fj-Spark fj-Spark-cpu', attrs: { 'aria-label': 'CPU over time' } });
    const mem = el('span', { className: 'fj-Spark fj-Spark-mem', attrs: { 'aria-label': 'Memory over time' } });
    this._cpu = new Sparkline(cpu, 'CPU', 'active');
    this._mem = new Sparkline(mem, 'memory', 'success');
    this.node = el('div', {
      className: 'fj-Usage',
      attrs: { 'data-task-id': taskId },
      children: [
        el('div', { className: 'fj-Usage-line', children: [el('span', { text: 'CPU ' }), cpu, this._cpuText] }),
        el('div', { className: 'fj-Usage-line', children: [el('span', { text: 'Mem ' }), mem, this._memText] }),
        this._bar,
        this._warning
      ]
    });
    this._bar.append(this._now, this._peak, this._request);
  }

  readonly node: HTMLElement;

  show(usage: ITaskUsage): void {
    const samples: IUsageSample[] = usage.samples;
    const times = samples.map(s => s.ts);
    this._cpu.draw(
      times,
      samples.map(s => s.cpu / 1000),
      usage.requested_cpu_millicores / 1000
    );
    this._mem.draw(
      times,
      samples.map(s => s.mem),
      usage.requested_memory_mb
    );
    this._cpuText.textContent = usage.cpu_text ? `${usage.cpu_text} of ${usage.requested_cpu_text}` : '';
    this._memText.textContent = usage.memory_text;
    this._warning.textContent = usage.warning;
    this._warning.hidden = !usage.warning;
    const now = usage.now_memory_mb ?? 0;
    const scale = Math.max(usage.requested_memory_mb, usage.peak_memory_mb, now, 1) * 1.1;
    const percent = (mib: number): string => `${((100 * mib) / scale).toFixed(1)}%`;
    this._bar.hidden = usage.now_memory_mb === null;
    this._bar.classList.toggle('fj-MemBar-over', Boolean(usage.warning));
    this._now.style.width = percent(now);
    this._peak.style.left = percent(usage.peak_memory_mb);
    this._request.hidden = !usage.requested_memory_mb;
    this._request.style.left = percent(usage.requested_memory_mb);
    this._bar.title = usage.memory_text;
  }

  private _cpu: Sparkline;
  private _mem: Sparkline;
  private _cpuText = el('span', { className: 'fj-Usage-cpu' });
  private _memText = el('span', { className: 'fj-Usage-memory' });
  private _warning = el('div', { className: 'fj-Usage-warning', attrs: { role: 'alert' } });
  private _bar = el('div', {
    className: 'fj-MemBar',
    attrs: { 'aria-label': 'Memory now and peak against the request' }
  });
  private _now = el('span', { className: 'fj-MemBar-now' });
  private _peak = el('span', { className: 'fj-MemBar-peak', attrs: { title: 'peak' } });
  private _request = el('span', { className: 'fj-MemBar-request', attrs: { title: 'requested' } });
}

/** The open job's usage blocks by task id, kept while the same job stays open. */
export class UsageView {
  /** The block of `usage`'s task, updated. */
  block(usage: ITaskUsage): HTMLElement {
    let block = this._blocks.get(usage.task_id);
    if (!block) {
      block = new TaskUsageBlock(usage.task_id);
      this._blocks.set(usage.task_id, block);
    }
    block.show(usage);
    return block.node;
  }

  /** Forget every block (another job was opened). */
  clear(): void {
    this._blocks.clear();
  }

  private _blocks = new Map<string, TaskUsageBlock>();
}
