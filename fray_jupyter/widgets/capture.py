"""How a capture of a task (``client.inspection.Profile``) is shown in a notebook: the status
panel's inspect buttons (``widgets.look_inside``), ``%fray profile`` and ``%fray session profile`` show
it alike, as one mime bundle (``bundle``).

Rules:

* A flamegraph (py-spy's SVG, memray's HTML) is shown as the document it is, so that its own script
  runs (py-spy's zoom and search, memray's controls): in an ``<iframe>`` whose ``srcdoc`` holds it,
  sandboxed to ``allow-scripts allow-modals``. The document gets an origin of its own: it cannot
  read the notebook, its cookies or the Jupyter server's API; search's prompt may open. py-spy's
  script records zoom and search in the page's URL (``history.replaceState``), which a ``srcdoc``
  document may not do: a shim ahead of it drops that call's refusal, so zoom and search still work.
* A flamegraph without a ``<script>`` is the profiler's stub (the embedded controller's and Iris's
  answer when the profiler could not read the task): its text is the reason, shown as one line.
* A thread dump is plain text (its colour escapes, if any, dropped); each frame of the task's own
  code is in bold, told from library frames by the rule the sidebar shows too
  (``client.thread_dump``).
* Everything the task or the profiler wrote is escaped where it is shown as HTML; the bundle's
  ``text/plain`` says what was captured, where it was written, and the dump or the stub's reason.
"""

from __future__ import annotations

import re
from html import escape, unescape
from pathlib import Path
from typing import Final

from fray_jupyter.client.inspection import Profile
from fray_jupyter.client.thread_dump import line_kinds
from fray_jupyter.views.ansi import line_spans
from fray_jupyter.vocabulary import byte_size

SANDBOX: Final[str] = "allow-scripts allow-modals"
HISTORY_SHIM: Final[str] = ("<script>{const keep=history.replaceState.bind(history);"
                            "history.replaceState=(...a)=>{try{keep(...a)}catch(e){}}}</script>")
"""Ahead of a flamegraph's own script: its ``history.replaceState`` may fail in a ``srcdoc``
document without stopping the zoom or search that called it."""
SVG_HEIGHT: Final[re.Pattern[str]] = re.compile(r"<svg\b[^>]*?\bheight=\"(?P<height>\d+)")
HTML_HEIGHT_PX: Final[int] = 640
"""The frame's height for an HTML capture (memray's page scrolls inside it)."""


def plain_text(text: str) -> str:
    """``text`` as a terminal shows it, line by line, without its escapes (py-spy colours a dump when
    the environment asks it to: ``CLICOLOR_FORCE``)."""
    return "\n".join("".join(span.text for span in line_spans(line)) for line in text.splitlines())


def dump_html(text: str) -> str:
    """A thread dump as preformatted plain text, escaped, each frame of the task's own code in bold."""
    plain = plain_text(text)
    lines = [f'<b class="fray-own-frame">{escape(line)}</b>' if kind == "own" else escape(line)
             for line, kind in zip(plain.splitlines(), line_kinds(plain), strict=True)]
    return '<pre class="fray-status fray-thread-dump">' + "\n".join(lines) + "</pre>"


def stub_reason(profile: Profile) -> str | None:
    """The reason a flamegraph capture holds nothing (its text, when it carries no script: the
    profiler's stub), else None."""
    if profile.extension not in ("svg", "html"):
        return None
    text = profile.text()
    if "<script" in text.lower():
        return None
    start = max(text.find("<body"), text.find("<svg"), 0)  # not a page's <title>
    words = " ".join(unescape(re.sub(r"<[^>]*>", " ", text[start:])).split())
    return words or f"the {profile.kind} profile is empty"


def document_html(profile: Profile) -> str:
    """The flamegraph as an interactive document in a sandboxed frame (the module rules)."""
    text = profile.text()
    if profile.extension == "svg":
        svg = text[text.find("<svg"):] if "<svg" in text else text
        document = (f'<!DOCTYPE html><html><head><meta charset="utf-8">{HISTORY_SHIM}</head>'
                    f'<body style="margin:0">{svg}</body></html>')
        found = SVG_HEIGHT.search(svg)
        height = int(found["height"]) + 24 if found else HTML_HEIGHT_PX
    else:
        document, height = text, HTML_HEIGHT_PX
    return (f'<iframe class="fray-capture-frame" sandbox="{SANDBOX}" srcdoc="{escape(document, quote=True)}" '
            f'style="width:100%;height:{height}px;border:0"></iframe>')


def body(profile: Profile) -> tuple[str, str]:
    """What shows the capture itself, as (HTML, plain text): the dump with the task's own frames
    in bold, the stub's reason, or the flamegraph's document (no plain text: its file is the way to
    it without a browser); nothing for the other formats (speedscope, raw stacks, memray's table or
    stats: they are read from the file, never copied into the notebook)."""
    reason = stub_reason(profile)
    if profile.kind == "threads":
        return dump_html(profile.text()), plain_text(profile.text())
    if reason is not None:
        return f'<div class="fray-status fray-capture-stub">{escape(reason)}</div>', reason
    if profile.extension in ("svg", "html"):
        return document_html(profile), ""
    return "", ""


def bundle(profile: Profile, label: str, saved: Path | None) -> dict[str, str]:
    """The mime bundle (``text/html``, ``text/plain``) showing ``profile`` under ``label`` ("task
    0", "host 1 (task /alice/dev/1)"), saying where it was ``saved`` (the module rules)."""
    where = f"written to {saved}" if saved is not None else "not written"
    caption = f"{label}: {profile.kind} profile ({profile.format}, {byte_size(len(profile.data))}), {where}"
    if profile.kind == "threads":
        caption += "; the task's own frames in bold"
    html, plain = body(profile)
    head = f'<div class="fray-status fray-capture-caption"><b>{escape(caption)}</b></div>'
    return {"text/html": f'<div class="fray-capture">{head}{html}</div>',
            "text/plain": "\n".join(filter(None, (caption, plain)))}
