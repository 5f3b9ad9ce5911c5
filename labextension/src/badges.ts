/**
 * Job and task state → badge. Pure (no DOM, no JupyterLab), unit-tested.
 *
 * Rule: states are the server's names (Iris's enum without its prefix, lower-cased:
 * `running`, `worker_failed`…); each maps to a short label (the status panel's word for it,
 * `fray_jupyter/views/words.py`, as `tests/test_labextension.py` checks) and a tone that the stylesheet colours;
 * an unknown name is shown as itself, neutral, so a newer controller never breaks the list.
 */

/** The tones the stylesheet knows (`fj-Badge-<tone>`). */
export type Tone = 'neutral' | 'active' | 'success' | 'danger' | 'warning';

export interface IBadge {
  /** Text on the badge (never colour alone). */
  label: string;
  tone: Tone;
  /** The state never changes again. */
  terminal: boolean;
  /** One sentence for the tooltip / screen readers. */
  description: string;
}

/** Job states a user can filter by, in the order the filter lists them. */
export const JOB_STATES: readonly string[] = [
  'pending',
  'building',
  'running',
  'succeeded',
  'failed',
  'killed',
  'worker_failed',
  'unschedulable'
];

const BADGES: Readonly<Record<string, IBadge>> = {
  unspecified: { label: 'unknown', tone: 'neutral', terminal: false, description: 'State not reported yet.' },
  pending: { label: 'pending', tone: 'neutral', terminal: false, description: 'Waiting for capacity.' },
  assigned: { label: 'assigned', tone: 'active', terminal: false, description: 'Placed on a worker, starting.' },
  building: { label: 'building', tone: 'active', terminal: false, description: 'Preparing the environment.' },
  running: { label: 'running', tone: 'active', terminal: false, description: 'Running.' },
  succeeded: { label: 'succeeded', tone: 'success', terminal: true, description: 'Finished successfully.' },
  failed: { label: 'failed', tone: 'danger', terminal: true, description: 'Finished with an error.' },
  killed: { label: 'killed', tone: 'warning', terminal: true, description: 'Stopped before it finished.' },
  worker_failed: {
    label: 'worker failed',
    tone: 'danger',
    terminal: true,
    description: 'Its worker was lost.'
  },
  unschedulable: {
    label: 'unschedulable',
    tone: 'danger',
    terminal: true,
    description: 'No capacity can ever run it as requested.'
  },
  preempted: { label: 'preempted', tone: 'warning', terminal: true, description: 'Preempted by other work.' },
  cosched_failed: {
    label: 'gang failed',
    tone: 'danger',
    terminal: true,
    description: 'Another task of its co-scheduled group failed.'
  },
  missing: { label: 'missing', tone: 'warning', terminal: false, description: 'Its worker stopped reporting it.' }
};

/** The badge of a job or task state name. */
export function badgeFor(state: string): IBadge {
  return (
    BADGES[state] ?? {
      label: state.replace(/_/g, ' ') || 'unknown',
      tone: 'neutral',
      terminal: false,
      description: `State "${state}".`
    }
  );
}

/** Whether a job in `state` can still change. */
export function isActive(state: string): boolean {
  return !badgeFor(state).terminal;
}
