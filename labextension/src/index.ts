/**
 * The `fray-jupyter` JupyterLab plugin: the Fray Jobs sidebar (left area), its auto-refresh,
 * notifications when a job of the user finishes, the command "Show Fray Jobs", and the settings
 * `refreshInterval` / `maxRefreshInterval` (seconds) and `notifications`.
 *
 * Refresh rule: the server pushes job changes (`push.ts`); each push refreshes at once. While the
 * push stream is connected the timer poll stands by, except against a controller the server can
 * only poll (a real Iris) while a job is open (its log lines are not pushed). Without a stream
 * (none yet, or it dropped) refresh every `refreshInterval` seconds, backing off to
 * `maxRefreshInterval` while nothing changes; the timer also runs while the last refresh failed to reach
 * the controller (to clear the banner when it is back). Everything stands by while the browser tab is hidden,
 * and while the sidebar is hidden unless notifications are on. Only a refresh of the open sidebar may
 * start the embedded controller; the background ones (for notifications) just look for a running one.
 * Refreshes never overlap: one asked for during another runs once right after it. A push names the
 * jobs that changed (the embedded controller's feed names a child's parent too), so it re-reads only
 * the children of those expanded parents; any other refresh re-reads every shown one. While the
 * sidebar shows an open job that runs (and for its final reads once it ended), a second poll reads
 * only that job's usage and timeline every `WATCH_INTERVAL_MS` (`model.ts`), since a task's usage
 * changes with no job change to push.
 *
 * The view (whose jobs, which, the expanded parents) is kept per cluster in JupyterLab's state DB
 * under `fray-jupyter:sidebar` and restored before the first refresh.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IStateDB } from '@jupyterlab/statedb';
import type { ReadonlyPartialJSONValue } from '@lumino/coreutils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';
import { Poll } from '@lumino/polling';

import { backoffFromSettings, DEFAULT_BACKOFF } from './backoff';
import { CaptureWidget } from './capture';
import type { IOpenCapture } from './capture';
import { JobsModel, WATCH_INTERVAL_MS } from './model';
import { notifyFinished } from './notify';
import { JobsPanel } from './panel';
import { BackoffPoll } from './poll';
import { PushStream } from './push';
import { usageSettings } from './usage';

const PLUGIN_ID = 'fray-jupyter:plugin';
const COMMAND = 'fray-jupyter:show-jobs';
const STATE_KEY = 'fray-jupyter:sidebar';
const SAVE_DELAY_MS = 500;

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="3" y="4" width="18" height="4" rx="1"/>
    <rect x="3" y="10" width="13" height="4" rx="1"/>
    <rect x="3" y="16" width="8" height="4" rx="1"/>
    <circle cx="19" cy="17" r="3"/>
  </g>
</svg>`;

export const jobsIcon = new LabIcon({ name: 'fray-jupyter:jobs', svgstr: ICON_SVG });

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Fray Jobs sidebar: every job on the Fray/Iris controller, with logs, cancel and notifications.',
  autoStart: true,
  optional: [ISettingRegistry, ILayoutRestorer, ICommandPalette, IStateDB],
  activate: (
    app: JupyterFrontEnd,
    settingRegistry: ISettingRegistry | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    state: IStateDB | null
  ) => {
    const model = new JobsModel();
    const restored: Promise<void> = state
      ? state.fetch(STATE_KEY).then(
          value => model.listing.restore(value),
          reason => console.warn('fray-jupyter: cannot read the saved sidebar view', reason)
        )
      : Promise.resolve();
    let saveTimer = 0;
    model.listing.changedView.connect(() => {
      window.clearTimeout(saveTimer);
      saveTimer = window.setTimeout(() => {
        void state
          ?.save(STATE_KEY, model.listing.saved() as unknown as ReadonlyPartialJSONValue)
          .catch(reason => console.warn('fray-jupyter: cannot save the sidebar view', reason));
      }, SAVE_DELAY_MS);
    });
    let notifications = true;
    let running: Promise<boolean> | null = null;
    let again = false;
    /** Refresh; `changed`: the jobs a push named (absent: anything may have changed). */
    const refresh = (changed: readonly string[] | null = null): Promise<boolean> => {
      model.listing.invalidate(changed);
      return run();
    };
    const run = (): Promise<boolean> => {
      if (running !== null) {
        again = true;
        return running;
      }
      const visible = panel.isVisible;
      running = restored
        .then(() => model.refresh(visible, visible))
        .finally(() => {
          running = null;
          if (again) {
            again = false;
            void run();
          }
        });
      return running;
    };
    const refreshNow = (): void => {
      push.update();
      if (pushed()) {
        void refresh(); // the poll stands by: refresh directly
      } else {
        void poll.refreshNow();
      }
    };
    const openCapture = (capture: IOpenCapture): void => {
      const tab = new CaptureWidget(capture);
      app.shell.add(tab, 'main');
      app.shell.activateById(tab.id);
    };
    const panel = new JobsPanel(model, refreshNow, openCapture);
    panel.title.icon = jobsIcon;
    const push = new PushStream({
      wanted: () => panel.isVisible || notifications,
      onEvent: event => {
        if (event.kind === 'changed') {
          void refresh(event.source === 'feed' && event.jobIds.length ? event.jobIds : null);
        }
      },
      onState: connected => {
        if (connected) {
          void refresh();
        } else {
          void poll.refreshNow(); // the timer takes over at once
        }
      }
    });
    const pushed = (): boolean =>
      push.connected &&
      model.connectionError === null &&
      (push.source === 'feed' || (push.source === 'poll' && model.open === null));
    // An open job's usage changes without a job change: while it runs and the sidebar shows it, its
    // usage and timeline alone are read every WATCH_INTERVAL_MS, beside the slower refresh of the rest.
    const watchPoll = new Poll({
      name: 'fray-jupyter:watch',
      factory: async () => {
        await model.refreshWatch();
      },
      frequency: { interval: WATCH_INTERVAL_MS, backoff: false },
      standby: () => (panel.isVisible && model.watching ? 'when-hidden' : true)
    });
    panel.disposed.connect(() => watchPoll.dispose());
    const poll = new BackoffPoll({
      refresh: () => refresh(),
      backoff: DEFAULT_BACKOFF,
      paused: () => (!panel.isVisible && !notifications) || pushed()
    });
    panel.visibilityChanged.connect(() => push.update());
    push.update();

    const show = (jobId?: string): void => {
      app.shell.activateById(panel.id);
      if (jobId) {
        void model.openJob(jobId);
      }
      refreshNow();
    };
    model.finished.connect((_, jobs) => {
      if (notifications) {
        jobs.forEach(job => notifyFinished(job, show));
      }
    });
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, 'fray-jobs');
    app.commands.addCommand(COMMAND, {
      label: 'Show Fray Jobs',
      caption: 'Open the Fray Jobs sidebar',
      icon: jobsIcon,
      execute: () => show()
    });
    palette?.addItem({ command: COMMAND, category: 'Fray' });

    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const apply = (): void => {
            notifications = settings.get('notifications').composite as boolean;
            const silence = settings.get('silenceSeconds').composite;
            usageSettings.silenceMs = typeof silence === 'number' ? silence * 1000 : null;
            push.update();
            poll.backoff = backoffFromSettings(
              settings.get('refreshInterval').composite as number,
              settings.get('maxRefreshInterval').composite as number
            );
          };
          apply();
          settings.changed.connect(apply);
        })
        .catch(reason => console.error('fray-jupyter: cannot load settings', reason));
    }
  }
};

export default plugin;
