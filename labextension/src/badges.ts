/**
 * Job and task state → badge. Pure (no DOM, no JupyterLab), unit-tested.
 *
 * Rule: states are the server's names (Iris's enum without its prefix, lower-cased:
 * `running`, `worker_failed`…); each reads as the display vocabulary says (`vocabulary.ts`,
 * generated from `fray_jupyter/vocabulary.py`): its word, tone, finality and sentence; an
 * unknown name is shown as itself, neutral, so a newer controller never breaks the list.
 */
import { FILTER_STATES, OTHER_TONE, STATES } from './vocabulary';
import type { Tone } from './vocabulary';

/** The tones the stylesheet knows (`fj-Badge-<tone>`, style/vocabulary.css). */
export type { Tone };

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
export const JOB_STATES: readonly string[] = FILTER_STATES;

/** The badge of a job or task state name. */
export function badgeFor(state: string): IBadge {
  const look = STATES[state];
  if (look) {
    return { label: look.word, tone: look.tone, terminal: look.terminal, description: look.description };
  }
  const label = state.replace(/_/g, ' ') || STATES.unspecified.word; // no name: not reported yet
  return { label, tone: OTHER_TONE, terminal: false, description: `State "${state}".` };
}

/** Whether a job in `state` can still change. */
export function isActive(state: string): boolean {
  return !badgeFor(state).terminal;
}
