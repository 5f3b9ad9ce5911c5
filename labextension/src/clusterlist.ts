/**
 * What the cluster switcher offers (pure, unit-tested): the embedded controller first, then the
 * named clusters the server listed, with the current one kept even when the listing lacks it.
 */
import type { IClusterList } from './types';

export const EMBEDDED_LABEL = 'Embedded controller';

/** The `<select>`'s options for a listing: `[value, label]`, the embedded controller first. */
export function clusterOptions(list: IClusterList): [string, string][] {
  const options: [string, string][] = [['', EMBEDDED_LABEL]];
  const names = list.clusters.map(cluster => cluster.name);
  if (list.current && !names.includes(list.current)) {
    names.unshift(list.current);
  }
  for (const name of names) {
    options.push([name, `Cluster: ${name}`]);
  }
  return options;
}
