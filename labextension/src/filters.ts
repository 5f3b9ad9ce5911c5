/**
 * The controls above the job list: Mine / Everyone, a user picker fed by `GET /fray/users`
 * (Iris's `ListUsers`), a state filter and a name search. They only change `JobListing.view`
 * (through `onChange`); filtering happens on the controller. The search waits `NAME_DEBOUNCE_MS`
 * after the last key (Enter: at once).
 */
import { JOB_STATES, badgeFor } from './badges';
import { button, el } from './dom';
import type { IView } from './scope';
import type { IUserSummary } from './types';

const NAME_DEBOUNCE_MS = 300;

/** `"bob · 3 active"` for the picker (active: unfinished jobs, Iris's count). */
export function userLabel(summary: IUserSummary): string {
  const active = Object.values(summary.job_state_counts).reduce((sum, count) => sum + count, 0);
  return active ? `${summary.user} · ${active} active` : summary.user;
}

export class ListControls {
  constructor(
    private readonly onChange: (view: Partial<IView>) => void,
    private readonly onWantUsers: () => void
  ) {
    this._mine = button('Mine', () => this.onChange({ who: 'mine' }), {
      className: 'fj-Segment',
      attrs: { 'aria-pressed': 'true', title: 'My root jobs (Iris: job_id_prefix="/<me>/")' }
    });
    this._everyone = button('Everyone', () => this.onChange({ who: 'everyone' }), {
      className: 'fj-Segment',
      attrs: { 'aria-pressed': 'false', title: "Every user's root jobs" }
    });
    this._user = el('select', {
      className: 'fj-UserPicker',
      attrs: { 'aria-label': 'Jobs of user', title: 'Jobs of one user' }
    });
    this._user.addEventListener('focus', () => this.onWantUsers());
    this._user.addEventListener('pointerdown', () => this.onWantUsers());
    this._user.addEventListener('change', () => {
      if (this._user.value) {
        this.onChange({ who: 'user', user: this._user.value });
      }
    });
    this._state = el('select', { attrs: { 'aria-label': 'Filter by state' } });
    this._state.append(
      el('option', { text: 'All states', attrs: { value: '' } }),
      ...JOB_STATES.map(state => el('option', { text: badgeFor(state).label, attrs: { value: state } }))
    );
    this._state.addEventListener('change', () => this.onChange({ state: this._state.value }));
    this._name = el('input', {
      attrs: {
        type: 'search',
        placeholder: 'Search names (all depths)',
        'aria-label': 'Search job names',
        spellcheck: 'false'
      }
    });
    this._name.addEventListener('input', () => {
      window.clearTimeout(this._timer);
      this._timer = window.setTimeout(() => this._search(), NAME_DEBOUNCE_MS);
    });
    this._name.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        window.clearTimeout(this._timer);
        this._search();
      }
    });
    this.node = el('div', {
      className: 'fj-Controls',
      children: [
        el('div', {
          className: 'fj-Scope',
          attrs: { role: 'group', 'aria-label': 'Whose jobs' },
          children: [this._mine, this._everyone, this._user]
        }),
        el('div', { className: 'fj-Filters', children: [this._state, this._name] })
      ]
    });
  }

  readonly node: HTMLDivElement;

  /** Show `view` (and the users known so far) without firing `onChange`. */
  render(view: IView, me: string | null, users: readonly IUserSummary[]): void {
    this._mine.setAttribute('aria-pressed', String(view.who === 'mine' || (view.who === 'user' && view.user === me)));
    this._everyone.setAttribute('aria-pressed', String(view.who === 'everyone'));
    this._mine.disabled = me === null;
    this._mine.title = me === null ? 'The server cannot tell who you are (set IRIS_USER)' : `${me}'s root jobs`;
    const picked = view.who === 'user' ? view.user : '';
    const names = users.map(u => u.user);
    const key = JSON.stringify([picked, users.map(userLabel)]);
    if (key !== this._usersKey) {
      this._usersKey = key;
      const options = users.map(u => el('option', { text: userLabel(u), attrs: { value: u.user } }));
      if (picked && !names.includes(picked)) {
        options.unshift(el('option', { text: picked, attrs: { value: picked } }));
      }
      this._user.replaceChildren(el('option', { text: 'User…', attrs: { value: '' } }), ...options);
    }
    this._user.value = picked;
    this._state.value = view.state;
    if (document.activeElement !== this._name) {
      this._name.value = view.name;
    }
  }

  dispose(): void {
    window.clearTimeout(this._timer);
  }

  private _search(): void {
    this.onChange({ name: this._name.value.trim() });
  }

  private _mine: HTMLButtonElement;
  private _everyone: HTMLButtonElement;
  private _user: HTMLSelectElement;
  private _state: HTMLSelectElement;
  private _name: HTMLInputElement;
  private _timer = 0;
  private _usersKey = '';
}
