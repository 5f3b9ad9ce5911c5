/**
 * A job's page on a cluster's own Iris dashboard. Pure, unit-tested.
 *
 * Rule: Iris's URL form (`JobName.dashboard_url`): `<origin>/#/job/<id>`, the whole id
 * percent-encoded as Python's `quote(id, safe="")` does it (so `!'()*` are escaped too, unlike
 * `encodeURIComponent`). The vectors in `tests/data/dashboard_links.json` are checked against
 * marin-iris. (Web addresses inside job text become links through `ansi.ts`.)
 */

/** The page of `jobId` on the Iris dashboard served at `origin`. */
export function dashboardJobUrl(origin: string, jobId: string): string {
  const encoded = encodeURIComponent(jobId).replace(
    /[!'()*]/g,
    char => `%${char.charCodeAt(0).toString(16).toUpperCase()}`
  );
  return `${origin.replace(/\/+$/, '')}/#/job/${encoded}`;
}
