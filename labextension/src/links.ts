/**
 * Web links the sidebar builds or finds. Pure (no DOM), unit-tested.
 *
 * Rules:
 * - `dashboardJobUrl`: a job's page on a cluster's own Iris dashboard is Iris's URL form
 *   (`JobName.dashboard_url`): `<origin>/#/job/<id>`, the whole id percent-encoded as Python's
 *   `quote(id, safe="")` does it (so `!'()*` are escaped too, unlike `encodeURIComponent`). The
 *   vectors in `tests/data/dashboard_links.json` are checked against marin-iris.
 * - `linkParts`: text split into plain parts and bare `http(s)://` addresses (trailing punctuation
 *   left out), so job-provided text can show its W&B or dashboard links while staying text.
 */

/** The page of `jobId` on the Iris dashboard served at `origin`. */
export function dashboardJobUrl(origin: string, jobId: string): string {
  const encoded = encodeURIComponent(jobId).replace(
    /[!'()*]/g,
    char => `%${char.charCodeAt(0).toString(16).toUpperCase()}`
  );
  return `${origin.replace(/\/+$/, '')}/#/job/${encoded}`;
}

export interface ITextPart {
  text: string;
  /** Set when the part is a web address. */
  href?: string;
}

const BARE_URL = /https?:\/\/[^\s<>"'()[\]]+/g;
const TRAILING = /[.,;:!?]+$/;

/** `text` as plain parts and links, in order; concatenated they give `text` back. */
export function linkParts(text: string): ITextPart[] {
  const parts: ITextPart[] = [];
  let at = 0;
  for (const found of text.matchAll(BARE_URL)) {
    const url = found[0].replace(TRAILING, '');
    const start = found.index ?? 0;
    if (!url.includes('://') || url.endsWith('://')) {
      continue;
    }
    if (start > at) {
      parts.push({ text: text.slice(at, start) });
    }
    parts.push({ text: url, href: url });
    at = start + url.length;
  }
  if (at < text.length || parts.length === 0) {
    parts.push({ text: text.slice(at) });
  }
  return parts;
}
