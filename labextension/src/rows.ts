/**
 * One row of the job list (`tree.ts`'s rows), built as DOM. Rule: every row is `ROW_PX` high
 * (the windowed list relies on it): three lines, each cut with an ellipsis, the full text in the
 * tooltip or the job's detail; all job-provided text is set as text (`dom.ts`).
 *
 * A job row: its ▸ / ▾ (only when the controller says it has children), its own name as the id
 * spells it (in a filtered, flat list its path under the user), its badge, a per-state task bar, and
 * one line saying why it waits or failed (the Scheduler half of a pending reason first). On a
 * named cluster, ↗ opens the job on that cluster's own Iris dashboard in a new tab.
 */
import { badgeFor } from './badges';
import { badge, button, el, NEW_TAB } from './dom';
import { counted, formatAgo, formatDuration, jobDuration } from './format';
import { dashboardJobUrl } from './links';
import { segmentsText, taskSegments } from './progress';
import type { TreeRow } from './tree';
import type { IJob } from './types';

export const ROW_PX = 64;
/** Indent per tree level, px. */
export const INDENT_PX = 14;

export interface IRowContext {
  now: number;
  /** The current user (others' jobs name their user). */
  me: string | null;
  /** A filtered list: jobs at any depth, labelled by their path under the user. */
  flat: boolean;
  /** The Iris dashboard's origin on a named cluster, else null. */
  dashboard: string | null;
  onOpen: (jobId: string) => void;
  onToggle: (jobId: string) => void;
  onMore: (parent: string) => void;
  onRetry: (parent: string) => void;
}

/** `"/alice/coord/step-1"` → `"coord/step-1"`: a job's path under its user. */
export function pathUnderUser(jobId: string): string {
  return jobId.replace(/^\/[^/]*\//, '');
}

/** `"/alice/coord/Step-1"` → `"Step-1"`: a job's own name as its submitter spelled it (a
 * controller's `name` is Iris's lower-cased copy, kept for case-insensitive search). */
export function leafName(jobId: string): string {
  return jobId.slice(jobId.lastIndexOf('/') + 1) || jobId;
}

/** The row's label: a job's own name, or in a flat list its path under the user. */
export function rowLabel(job: Pick<IJob, 'job_id'>, flat: boolean): string {
  return flat ? pathUnderUser(job.job_id) || job.job_id : leafName(job.job_id);
}

/** The one line a row gives its diagnosis: the error of a job that ended badly, else the first
 * line of the pending reason of one still waiting (Iris's Scheduler half), else ''. */
export function diagnosisLine(job: IJob): { text: string; tone: 'error' | 'waiting' | '' } {
  if (job.terminal && job.error && job.state !== 'succeeded') {
    return { text: job.error, tone: 'error' };
  }
  if (!job.terminal && job.pending_reason) {
    return { text: job.pending_reason.split('\n').find(line => line.trim()) ?? '', tone: 'waiting' };
  }
  return { text: '', tone: '' };
}

/** The task bar: one segment per state, as wide as its share (`progress.ts`). */
export function taskBar(job: IJob): HTMLSpanElement {
  const segments = taskSegments(job);
  const text = segmentsText(segments);
  const bar = el('span', {
    className: 'fj-TaskBar',
    attrs: { role: 'img', 'aria-label': `Tasks: ${text}`, title: text }
  });
  for (const segment of segments) {
    const part = el('span', { className: 'fj-Seg', attrs: { 'data-state': segment.state } });
    part.style.width = `${(segment.share * 100).toFixed(2)}%`;
    bar.append(part);
  }
  return bar;
}

function jobRowNode(job: IJob, depth: number, expanded: boolean, ctx: IRowContext): HTMLElement {
  const label = rowLabel(job, ctx.flat);
  const toggle = job.has_children
    ? button(expanded ? '▾' : '▸', () => ctx.onToggle(job.job_id), {
        className: 'fj-Toggle',
        attrs: {
          'data-part': 'toggle',
          'aria-expanded': String(expanded),
          'aria-label': `${expanded ? 'Hide' : 'Show'} the child jobs of ${label}`,
          title: expanded ? 'Hide child jobs' : 'Show child jobs'
        }
      })
    : el('span', { className: 'fj-Toggle fj-Toggle-none', attrs: { 'aria-hidden': 'true' } });
  const duration = jobDuration(job, ctx.now);
  const facts = [
    counted(job.replicas, 'replica'),
    job.device !== 'cpu' ? job.device : '',
    `${job.completed}/${job.replicas} done`,
    job.failure_count ? `${job.failure_count} failed` : '',
    job.preemption_count ? `${job.preemption_count} preempted` : ''
  ].filter(Boolean);
  const when = [
    job.submitted_ms !== null ? `submitted ${formatAgo(job.submitted_ms, ctx.now)}` : '',
    duration !== null ? `${job.terminal ? 'ran' : 'running'} ${formatDuration(duration)}` : ''
  ].filter(Boolean);
  const why = diagnosisLine(job);
  const main = el('button', {
    className: 'fj-JobRow',
    attrs: {
      type: 'button',
      'data-part': 'main',
      'data-job-id': job.job_id,
      title: [job.job_id, job.pending_reason && !job.terminal ? job.pending_reason : '', job.error]
        .filter(Boolean)
        .join('\n\n'),
      'aria-label': `${label}, ${badgeFor(job.state).label}`
    },
    children: [
      el('span', {
        className: 'fj-JobRow-top',
        children: [
          el('span', { className: 'fj-JobRow-name', text: label }),
          job.user && job.user !== ctx.me ? el('span', { className: 'fj-JobRow-user', text: job.user }) : null,
          badge(job.state)
        ]
      }),
      el('span', {
        className: 'fj-JobRow-line',
        children: [taskBar(job), el('span', { className: 'fj-JobRow-meta', text: facts.join(' · ') })]
      }),
      el('span', {
        className: why.tone ? `fj-JobRow-why fj-JobRow-${why.tone}` : 'fj-JobRow-why fj-JobRow-meta',
        text: why.text || when.join(' · ')
      })
    ]
  });
  main.addEventListener('click', () => ctx.onOpen(job.job_id));
  const link = ctx.dashboard
    ? el('a', {
        className: 'fj-Dashboard',
        text: '↗',
        attrs: {
          'data-part': 'dashboard',
          href: dashboardJobUrl(ctx.dashboard, job.job_id),
          ...NEW_TAB,
          title: 'Open on the Iris dashboard',
          'aria-label': `Open ${label} on the Iris dashboard`
        }
      })
    : null;
  return indented(depth, [toggle, main, link], 'fj-TreeRow');
}

function indented(depth: number, children: (HTMLElement | null)[], className: string): HTMLElement {
  const node = el('div', { className, children });
  node.style.paddingLeft = `${depth * INDENT_PX}px`;
  return node;
}

/** The DOM of one row of the list. */
export function treeRowNode(row: TreeRow, ctx: IRowContext): HTMLElement {
  switch (row.kind) {
    case 'job':
      return jobRowNode(row.job, row.depth, row.expanded, ctx);
    case 'loading':
      return indented(
        row.depth,
        [el('span', { className: 'fj-Muted fj-TreeNote', text: 'Loading child jobs…' })],
        'fj-TreeRow fj-TreeRow-note'
      );
    case 'error':
      return indented(
        row.depth,
        [
          el('span', {
            className: 'fj-JobRow-error fj-TreeNote',
            text: `Cannot list the child jobs: ${row.message}`,
            attrs: { title: row.message }
          }),
          button('Retry', () => ctx.onRetry(row.parent), { className: 'fj-Link', attrs: { 'data-part': 'main' } })
        ],
        'fj-TreeRow fj-TreeRow-note'
      );
    case 'more':
      return indented(
        row.depth,
        [
          row.capped
            ? el('span', {
                className: 'fj-Muted fj-TreeNote',
                text: `${row.shown.toLocaleString()} of ${row.total.toLocaleString()} child jobs shown: Iris lists no more of one job; search by name to find the others.`
              })
            : button(
                `Show more child jobs (${row.shown.toLocaleString()} of ${row.total.toLocaleString()})`,
                () => ctx.onMore(row.parent),
                {
                  className: 'fj-Link',
                  attrs: { 'data-part': 'main' }
                }
              )
        ],
        'fj-TreeRow fj-TreeRow-note'
      );
  }
}

/** The key the windowed list follows a row by. */
export function treeRowKey(row: TreeRow): string {
  return row.kind === 'job' ? row.job.job_id : `${row.kind}:${row.parent}`;
}
