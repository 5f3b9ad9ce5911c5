/**
 * Numbers, times and failures as the sidebar shows them, by the display vocabulary's rules
 * (`fray_jupyter/vocabulary.py`; its tables arrive as `vocabulary.ts`). Pure, unit-tested;
 * `tests/test_vocabulary.py` compares durations, sizes, counts and retries with the Python
 * ones on random inputs.
 */
import type { IJob, IRetryLimits, ITask } from './types';
import { JOB_RETRIES, PLURALS, SIZE_UNITS, TASK_RETRIES } from './vocabulary';

/** `350` → `"350 ms"`, `4_250` → `"4.2 s"` (tenths cut), `75_000` → `"1m 15s"`, `3_900_000` → `"1h 05m"`:
 * the status panel's `views/job.py` `duration`, compared on random durations by `tests/test_labextension.py`. */
export function formatDuration(ms: number): string {
  const whole = Math.max(0, Math.round(ms));
  if (whole < 1000) {
    return `${whole} ms`;
  }
  if (whole < 60_000) {
    return `${Math.floor(whole / 1000)}.${Math.floor((whole % 1000) / 100)} s`;
  }
  const seconds = Math.floor(whole / 1000);
  const minutes = Math.floor(seconds / 60);
  const two = (value: number): string => String(value).padStart(2, '0');
  if (minutes < 60) {
    return `${minutes}m ${two(seconds % 60)}s`;
  }
  return `${Math.floor(minutes / 60)}h ${two(minutes % 60)}m`;
}

/** How long ago `then` was, relative to `now`: `"just now"`, `"5 min ago"`, `"3 h ago"`, `"2 d ago"`. */
export function formatAgo(then: number, now: number): string {
  const seconds = Math.floor((now - then) / 1000);
  if (seconds < 45) {
    return 'just now';
  }
  if (seconds < 3600) {
    return `${Math.max(1, Math.round(seconds / 60))} min ago`;
  }
  if (seconds < 86400) {
    return `${Math.round(seconds / 3600)} h ago`;
  }
  return `${Math.round(seconds / 86400)} d ago`;
}

/** Run time so far (or in all, once finished); null before it started. */
export function jobDuration(job: Pick<IJob, 'started_ms' | 'finished_ms'>, now: number): number | null {
  if (job.started_ms === null) {
    return null;
  }
  return (job.finished_ms ?? now) - job.started_ms;
}

/** `"3/4 tasks done"`; a single task reads `"1/1 task done"`. */
export function progressText(job: Pick<IJob, 'completed' | 'replicas'>): string {
  return `${fraction(job.completed, job.replicas, 'task')} done`;
}

/** `1536 * 2**20` → `"1.5 GiB"`, `512 * 2**20` → `"512 MiB"`, `1` → `"1 byte"`: binary units, at most two
 * decimals (ties to even), trailing zeros cut (the vocabulary's `byte_size`). */
export function formatBytes(bytes: number): string {
  const whole = BigInt(Math.max(0, Math.round(bytes)));
  let power = 0;
  while (power < SIZE_UNITS.length && whole >= 1024n ** BigInt(power + 1)) {
    power += 1;
  }
  if (power === 0) {
    return counted(Number(whole), 'byte');
  }
  const divider = 1024n ** BigInt(power);
  let hundredths = (whole * 100n) / divider;
  const rest = (whole * 100n) % divider;
  if (2n * rest > divider || (2n * rest === divider && hundredths % 2n === 1n)) {
    hundredths += 1n;
  }
  const cents = String(hundredths % 100n).padStart(2, '0');
  const text = `${hundredths / 100n}.${cents}`.replace(/0+$/, '').replace(/\.$/, '');
  return `${text} ${SIZE_UNITS[power - 1]}`;
}

/** `"2 cores · 4 GiB RAM · v5p-8"` for one task's request. */
export function resourcesText(job: Pick<IJob, 'cpu_millicores' | 'memory_bytes' | 'device'>): string {
  const cores = job.cpu_millicores / 1000;
  const parts = [`${+cores.toFixed(2)} ${cores === 1 ? 'core' : pluralOf('core')}`];
  if (job.memory_bytes) {
    parts.push(`${formatBytes(job.memory_bytes)} RAM`);
  }
  if (job.device && job.device !== 'cpu') {
    parts.push(job.device);
  }
  return parts.join(' · ');
}

/** The plural of `noun` (the vocabulary's `PLURALS`, else an added `s`). */
export function pluralOf(noun: string): string {
  return PLURALS[noun] ?? `${noun}s`;
}

/** `"1 replica"`, `"3 replicas"`, `"2 retries"`: the count and the noun, plural unless the count is 1. */
export function counted(count: number, noun: string): string {
  return `${count} ${count === 1 ? noun : pluralOf(noun)}`;
}

/** `"1/1 task"`, `"3/4 tasks"`: done of total, the noun plural unless the total is 1. */
export function fraction(done: number, total: number, noun: string): string {
  return `${done}/${total} ${total === 1 ? noun : pluralOf(noun)}`;
}

/** `template` with each `{name}` replaced by `values[name]`. */
function fill(template: string, values: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => String(values[name]));
}

/** The job's failed attempts against `max_task_failures`, and its preemptions (the vocabulary's `JOB_RETRIES`):
 * `"3 failed attempts (max_task_failures 2), 1 preemption"`. */
export function jobRetriesText(
  job: Pick<IJob, 'failure_count' | 'preemption_count'>,
  limits: Pick<IRetryLimits, 'max_task_failures'>
): string {
  return fill(JOB_RETRIES, {
    failures: counted(job.failure_count, 'failed attempt'),
    preemptions: counted(job.preemption_count, 'preemption'),
    max_failures: limits.max_task_failures
  });
}

/** What a task's attempts charged against the job's per-task limits (the vocabulary's `TASK_RETRIES`):
 * `"2 failures (max_retries_failure 1), 0 preemptions (max_retries_preemption 100)"`. */
export function taskRetriesText(
  task: Pick<ITask, 'failure_count' | 'preemption_count'>,
  limits: Pick<IRetryLimits, 'max_retries_failure' | 'max_retries_preemption'>
): string {
  return fill(TASK_RETRIES, {
    failures: counted(task.failure_count, 'failure'),
    preemptions: counted(task.preemption_count, 'preemption'),
    max_failure: limits.max_retries_failure,
    max_preemption: limits.max_retries_preemption
  });
}

/** The one line a failure shows: an `Error`'s message (a `FrayApiError` carries the server's), anything
 * else thrown as text. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
