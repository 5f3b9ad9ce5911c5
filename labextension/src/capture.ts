/**
 * One profile capture in a JupyterLab main-area tab: a CPU flamegraph (py-spy's own SVG) or memray's
 * HTML report as an interactive document, a thread dump as text with the task's own frames picked
 * out, or — when the capture holds no profile — the reason the controller gave, and a Download link.
 *
 * Rules:
 * - A flamegraph or a report runs as a document of its own in a sandboxed iframe (`allow-scripts
 *   allow-modals`: its zoom on click, and its search prompt on Ctrl-F or its Search button; never
 *   `allow-same-origin`, so its scripts reach neither JupyterLab nor the server), loaded from a blob.
 *   py-spy's script records the zoom and search in the page's address (`history.replaceState`),
 *   which an opaque origin refuses: `viewerSvg` lets that call fail quietly, and changes nothing else.
 * - A thread dump's lines come with their kind from the server (`server/threads.py`): the task's own
 *   frames are bold in the brand colour, library frames dimmed, thread headers bold.
 * - Everything a capture holds is data: text set as text, documents only inside the sandbox.
 */
import { Widget } from '@lumino/widgets';

import type { ICaptureData } from './api';
import { el } from './dom';
import { formatBytes } from './format';
import type { IThreadDump } from './types';

/** What a kind of capture is called on its tab and buttons, and at the head of its tab. */
export const KIND_LABELS: Readonly<Record<string, string>> = { cpu: 'CPU', memory: 'Memory', threads: 'Threads' };
const HEADINGS: Readonly<Record<string, string>> = {
  cpu: 'CPU profile',
  memory: 'Memory profile',
  threads: 'Thread dump'
};

/** The sandbox a capture's document runs in (module rules). */
export const CAPTURE_SANDBOX = 'allow-scripts allow-modals';

const QUIET_REPLACE_STATE =
  '<script type="text/ecmascript"><![CDATA[(function () { var keep = history.replaceState;' +
  ' history.replaceState = function () { try { return keep.apply(history, arguments); } catch (e) { return undefined; } };' +
  ' })();]]></script>';

/** py-spy's SVG with `history.replaceState` made to fail quietly, first thing in the document. */
export function viewerSvg(svg: string): string {
  const open = /<svg\b[^>]*>/.exec(svg);
  if (!open) {
    return svg;
  }
  const at = open.index + open[0].length;
  return svg.slice(0, at) + QUIET_REPLACE_STATE + svg.slice(at);
}

/** What a tab shows: the capture, which task it is of, when it was made, its window (s), its dump's lines. */
export interface IOpenCapture {
  jobId: string;
  taskIndex: number;
  capture: ICaptureData;
  capturedMs: number;
  seconds: number;
  /** A thread dump's lines with their kinds (null for other kinds). */
  dump: IThreadDump | null;
}

let tabs = 0;

/** The file name a capture downloads as: `alice-train-0-cpu.svg`. */
function fileName(open: IOpenCapture): string {
  const extension = open.capture.mediaType.split(';')[0].split('/')[1]?.replace('svg+xml', 'svg') ?? 'bin';
  const stem = [...open.jobId.split('/').filter(Boolean), String(open.taskIndex), open.capture.kind].join('-');
  return `${stem}.${extension === 'plain' ? 'txt' : extension === 'octet-stream' ? 'bin' : extension}`;
}

/** The tab of one capture (module rules); its blob URLs are revoked when it closes. */
export class CaptureWidget extends Widget {
  constructor(open: IOpenCapture) {
    super();
    const { capture } = open;
    const kind = KIND_LABELS[capture.kind] ?? capture.kind;
    const task = `${open.jobId}/${open.taskIndex}`;
    const when = new Date(open.capturedMs).toLocaleTimeString();
    this.id = `fray-capture-${++tabs}`;
    this.addClass('fj-CaptureTab');
    this.title.label = `${kind} · ${open.jobId.slice(open.jobId.lastIndexOf('/') + 1)}/${open.taskIndex}`;
    const heading = `${HEADINGS[capture.kind] ?? kind} of ${task}`;
    this.title.caption = `${heading} at ${when}`;
    this.title.closable = true;
    this.node.dataset.kind = capture.kind;
    const download = this._url(new Blob([capture.bytes], { type: capture.mediaType }));
    const span = capture.kind === 'threads' ? '' : ` · ${open.seconds} s`;
    this.node.append(
      el('div', {
        className: 'fj-CaptureHead',
        children: [
          el('strong', { text: heading }),
          el('span', { className: 'fj-Muted', text: ` · ${when}${span} · ${formatBytes(capture.bytes.byteLength)}` }),
          el('a', { className: 'fj-Link', text: 'Download', attrs: { href: download, download: fileName(open) } })
        ]
      }),
      this._body(open)
    );
  }

  dispose(): void {
    this._urls.forEach(url => URL.revokeObjectURL(url));
    this._urls = [];
    super.dispose();
  }

  private _body(open: IOpenCapture): HTMLElement {
    const { capture } = open;
    if (capture.empty) {
      return el('div', {
        className: 'fj-CaptureEmpty',
        attrs: { role: 'status' },
        children: [
          el('strong', { text: 'No profile: the controller could not read the task.' }),
          el('p', { text: capture.empty })
        ]
      });
    }
    const text = new TextDecoder().decode(capture.bytes);
    if (open.dump) {
      return dumpView(open.dump);
    }
    const type = capture.mediaType.split(';')[0];
    if (type === 'image/svg+xml' || type === 'text/html') {
      const source = type === 'image/svg+xml' ? viewerSvg(text) : text;
      const frame = el('iframe', {
        className: 'fj-CaptureFrame',
        attrs: { sandbox: CAPTURE_SANDBOX, title: this.title.caption, referrerpolicy: 'no-referrer' }
      });
      frame.src = this._url(new Blob([source], { type }));
      return frame;
    }
    return el('pre', { className: 'fj-CaptureText', text });
  }

  private _url(blob: Blob): string {
    const url = URL.createObjectURL(blob);
    this._urls.push(url);
    return url;
  }

  private _urls: string[] = [];
}

/** A thread dump, line by line, each styled by its kind (module rules), under a line saying how. */
export function dumpView(dump: IThreadDump): HTMLElement {
  const pre = el('pre', { className: 'fj-Dump', attrs: { 'aria-label': 'Thread dump' } });
  dump.lines.forEach((line, index) => {
    pre.append(el('span', { className: `fj-Dump-line fj-Dump-${dump.kinds[index] ?? 'other'}`, text: line }), '\n');
  });
  const legend =
    dump.own_frames > 0
      ? `${dump.own_frames} of the frames are the task's own code (bold); library frames (site-packages, the standard library, <frozen …>) are dimmed.`
      : 'Every frame is library code (site-packages, the standard library, <frozen …>): the task waits inside a library.';
  return el('div', { className: 'fj-DumpView', children: [el('p', { className: 'fj-Muted', text: legend }), pre] });
}
