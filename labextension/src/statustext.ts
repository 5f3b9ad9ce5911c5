/**
 * A task's status text (markdown: Levanter's step, loss, ETA, W&B link) as spans: the sidebar's
 * renderer. The status panel's (`fray_jupyter/views/statustext.py`) follows the same rules, and
 * both run `tests/data/status_text_vectors.json` and a randomised comparison on every run
 * (`tests/test_labextension.py`); see that module for the rules in full.
 *
 * In short: a markdown link `[label](https://…)` and a bare `http(s)://` URL are links, `**bold**`
 * is bold; everything else is text as written. Pure: no DOM (`dom.ts` `spanNode` draws a span).
 */
import type { ISpan } from './ansi';
import { SPACES, URL_PATTERN } from './terminal';

// 'u': by code point, as Python counts a label's 500 characters
const LINK = new RegExp(
  String.raw`\[(?<label>[^\]\n]{1,500})\]\((?<target>https?:\/\/[^${SPACES}()<>]+)\)|(?<bare>${URL_PATTERN})`,
  'gu'
);
const BOLD = /\*\*([^*\n]+)\*\*/gu;
const TRAILING = /[.,;:!?]+$/u;

function span(text: string, href: string, bold = false): ISpan {
  return { text, classes: bold ? ['bold'] : [], style: '', href };
}

/** `text` with its `**bold**` runs, each span linking to `href` ('' for none). */
function marked(text: string, href: string, out: ISpan[]): void {
  let last = 0;
  for (const match of text.matchAll(BOLD)) {
    const at = match.index ?? 0;
    out.push(span(text.slice(last, at), href), span(match[1], href, true));
    last = at + match[0].length;
  }
  out.push(span(text.slice(last), href));
}

/** The spans of a status text: links and bold alive, the rest as written. */
export function statusSpans(text: string): ISpan[] {
  const pieces: ISpan[] = [];
  let last = 0;
  for (const match of text.matchAll(LINK)) {
    const at = match.index ?? 0;
    const groups = match.groups ?? {};
    marked(text.slice(last, at), '', pieces);
    if (groups.bare) {
      const url = groups.bare.replace(TRAILING, '');
      pieces.push(span(url, url), span(groups.bare.slice(url.length), ''));
    } else {
      marked(groups.label, groups.target, pieces);
    }
    last = at + match[0].length;
  }
  marked(text.slice(last), '', pieces);
  const spans: ISpan[] = [];
  for (const piece of pieces) {
    const before = spans[spans.length - 1];
    if (!piece.text) {
      continue;
    }
    if (before && before.href === piece.href && before.classes.join() === piece.classes.join()) {
      before.text += piece.text;
    } else {
      spans.push(piece);
    }
  }
  return spans;
}
