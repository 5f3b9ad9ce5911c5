/**
 * The `fray-jupyter` JupyterLab plugin: the Fray Jobs sidebar (left area), its auto-refresh,
 * notifications when a job of the user finishes, the command "Show Fray Jobs", and the settings
 * `refreshInterval` / `maxRefreshInterval` (seconds) and `notifications`.
 *
 * Refresh rule: refresh every `refreshInterval` seconds, backing off to `maxRefreshInterval` while
 * nothing changes; stand by while the browser tab is hidden, and while the sidebar is hidden unless
 * notifications are on. Only a refresh of the open sidebar may start the embedded controller; the
 * background ones (for notifications) just look for a running one.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';

import { backoffFromSettings, DEFAULT_BACKOFF } from './backoff';
import { JobsModel } from './model';
import { notifyFinished } from './notify';
import { JobsPanel } from './panel';
import { BackoffPoll } from './poll';

const PLUGIN_ID = 'fray-jupyter:plugin';
const COMMAND = 'fray-jupyter:show-jobs';

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
  optional: [ISettingRegistry, ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    settingRegistry: ISettingRegistry | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const model = new JobsModel();
    let notifications = true;
    const refreshNow = (): void => void poll.refreshNow();
    const panel = new JobsPanel(model, refreshNow);
    panel.title.icon = jobsIcon;
    const poll = new BackoffPoll({
      refresh: () => model.refresh(panel.isVisible),
      backoff: DEFAULT_BACKOFF,
      paused: () => !panel.isVisible && !notifications
    });

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
