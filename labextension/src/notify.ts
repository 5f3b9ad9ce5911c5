/**
 * JupyterLab notifications for jobs that reached a terminal state (see `changes.ts` for which).
 * The message is plain text; "Show" opens the job in the sidebar.
 */
import { Notification } from '@jupyterlab/apputils';

import { badgeFor } from './badges';
import { leafName } from './rows';
import type { IJob } from './types';

/** Auto-close after this many ms (failures stay until dismissed). */
export const NOTIFICATION_MS = 8000;

/** Tell the user `job` ended: a success closes itself after `NOTIFICATION_MS`, any other end
 * (failure, cancel, preemption) stays until dismissed; its "Show" action calls `show(job_id)`. */
export function notifyFinished(job: IJob, show: (jobId: string) => void): string {
  const { label, tone } = badgeFor(job.state);
  const message = `Fray job ${leafName(job.job_id)} ${label}${job.error ? `: ${job.error}` : ''}`;
  const options = {
    autoClose: tone === 'success' ? NOTIFICATION_MS : (false as const),
    actions: [{ label: 'Show', caption: `Show ${job.job_id} in Fray Jobs`, callback: () => show(job.job_id) }]
  };
  if (tone === 'success') {
    return Notification.success(message, options);
  }
  if (tone === 'warning') {
    return Notification.warning(message, options);
  }
  return Notification.error(message, options);
}
