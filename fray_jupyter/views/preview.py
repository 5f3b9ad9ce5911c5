"""The notebook preview of a ``Plan`` as one HTML fragment, and the inline error that replaces it.

Sections, top to bottom: figures as sent (replicas, per-task host and chips, totals) and the Marin
release it follows (``Plan.follows``), the "will it
fit?" line and the budget lines (spend, the user's spent/limit, the band it runs at and the tasks queued
ahead) when the caller has them, the coscheduling diagram (the gangs Iris attempts), errors (why Iris will never place the job, error
styled), warnings (every silent change), constraints as Fray writes them and as sent,
env vars with their source, copyable snippets, and the ``LaunchJobRequest`` (protobuf text or JSON)
with its size, the lines changed since ``previous`` highlighted and the changed fields named.
Every piece of job-provided text is HTML-escaped. Styling uses JupyterLab's theme variables, and
undoes JupyterLab's rendered-HTML table look (right-aligned cells, striped rows) so ``%%fray
--dry-run`` output looks as the picker's preview widget does.
"""

from __future__ import annotations

import difflib
from html import escape
from typing import Final, Literal

from google.protobuf.message import Message

from fray_jupyter.iris.budget import BudgetPicture, band_name, over_budget
from fray_jupyter.planning import Plan
from fray_jupyter.resources.devices import CpuConfig
from fray_jupyter.views.diagram import core_count, render_diagram_svg
from fray_jupyter.views.format import flops, size
from fray_jupyter.views.snippets import iris_command, magic_line, python_snippet

RequestFormat = Literal["text", "json"]
MAX_LINE: Final = 400  # longer request lines (pickled payloads) are cut for display

STYLE: Final = """<style>
.fray-preview{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:var(--jp-ui-font-size1,13px);color:var(--jp-ui-font-color1,#222);line-height:1.4}
.fray-preview h4{margin:12px 0 4px;font-size:var(--jp-ui-font-size2,14px)}
.fray-preview code,.fray-preview pre{font-family:var(--jp-code-font-family,monospace);font-size:12px}
.fray-cards{display:flex;flex-wrap:wrap;gap:6px}
.fray-card{border:1px solid var(--jp-border-color2,#ddd);border-radius:6px;padding:4px 10px;min-width:88px}
.fray-card b{display:block;font-size:18px}
.fray-card span{color:var(--jp-ui-font-color2,#666);font-size:11px}
.fray-preview table{border-collapse:collapse}
.fray-preview td,.fray-preview th{font-size:inherit;padding:1px 10px 1px 0;text-align:left;vertical-align:top}
.fray-preview th{color:var(--jp-ui-font-color2,#666);font-weight:normal}
.fray-env td:nth-child(2) code{word-break:break-all}
.fray-warnings{margin:0;padding-left:18px;color:var(--jp-warn-color0,#a15c00)}
.fray-snippet{user-select:all;white-space:pre-wrap;word-break:break-all;margin:2px 0 6px;padding:4px 6px;
 background:var(--jp-layout-color2,#f3f3f3);border-radius:4px}
.fray-request{max-height:26em;overflow:auto;margin:2px 0;padding:4px 6px;background:var(--jp-layout-color2,#f3f3f3);
 border-radius:4px}
.fray-request mark{background:var(--jp-warn-color3,#fff3c4);color:inherit}
.fray-dim{opacity:.7}
.fray-hint{opacity:.75;line-height:1.35;font-size:12px}
.fray-error{border:1px solid var(--jp-error-color1,#d32f2f);border-left-width:4px;border-radius:4px;padding:6px 10px;
 color:var(--jp-error-color1,#b71c1c);background:var(--jp-error-color3,#fdecea);margin-bottom:8px}
.fray-fit{margin:6px 0 0}
.fray-fit[data-verdict="never"]{color:var(--jp-error-color1,#b71c1c)}
.fray-fit[data-verdict="now"]{color:var(--jp-success-color1,#2e7d32)}
.fray-budget{margin:2px 0 0}
.fray-budget[data-band="batch"],.fray-budget[data-over="true"]{color:var(--jp-warn-color0,#a15c00)}
.fray-budget[data-band="refused"]{color:var(--jp-error-color1,#b71c1c)}
.fray-stale{opacity:.4;filter:grayscale(1);pointer-events:none}
.fray-stale-banner{font-weight:600;color:var(--jp-error-color1,#b71c1c);margin:4px 0}
.fray-invalid input,.fray-invalid textarea,.fray-invalid select{border-color:var(--jp-error-color1,#d32f2f)!important}
.fray-preview-area,.fray-preview-area .widget-html-content{min-width:0;max-width:100%}
.jp-RenderedHTMLCommon .fray-preview table{margin:0;table-layout:auto;border:none;font-size:inherit;color:inherit}
.jp-RenderedHTMLCommon .fray-preview tr,.jp-RenderedHTMLCommon .fray-preview td,.jp-RenderedHTMLCommon .fray-preview th{
 text-align:left;vertical-align:top;padding:1px 10px 1px 0;line-height:inherit;white-space:normal;max-width:none;border:none}
.jp-RenderedHTMLCommon .fray-preview thead,.jp-RenderedHTMLCommon .fray-preview tbody tr:nth-child(odd),
.jp-RenderedHTMLCommon .fray-preview tbody tr:nth-child(even),
.jp-RenderedHTMLCommon .fray-preview tbody tr:hover{background:transparent;border:none}
</style>"""


def changed_fields(old: Message, new: Message, prefix: str = "") -> list[str]:
    """Dotted names of the fields whose values differ between two messages of one type, in field
    order; nested messages are compared field by field, repeated and map fields as a whole."""
    changed: list[str] = []
    for field in new.DESCRIPTOR.fields:
        before, after = getattr(old, field.name), getattr(new, field.name)
        if before == after:
            continue
        nested = field.message_type is not None and not field.is_repeated
        if nested and old.HasField(field.name) and new.HasField(field.name):
            changed += changed_fields(before, after, f"{prefix}{field.name}.")
        else:
            changed.append(prefix + field.name)
    return changed


def _request_text(plan: Plan, request_format: RequestFormat) -> str:
    return plan.request_json if request_format == "json" else plan.request_text


def _highlighted(text: str, before: str | None) -> str:
    """``text`` escaped, line by line, with lines that are new or changed since ``before`` in <mark>."""
    lines = text.splitlines()
    changed: set[int] = set()
    if before is not None:
        matcher = difflib.SequenceMatcher(None, before.splitlines(), lines, autojunk=False)
        for tag, _, _, j1, j2 in matcher.get_opcodes():
            if tag in ("replace", "insert"):
                changed.update(range(j1, j2))
    out = []
    for i, line in enumerate(lines):
        shown = escape(line if len(line) <= MAX_LINE else f"{line[:MAX_LINE]}… ({len(line)} characters)")
        out.append(f"<mark>{shown}</mark>" if i in changed else shown)
    return "\n".join(out)


def _card(value: str, label: str, css: str = "") -> str:
    return f'<div class="fray-card"><b class="{css}">{escape(value)}</b><span>{escape(label)}</span></div>'


def _figures(plan: Plan) -> str:
    device = plan.device
    chips = "" if isinstance(device, CpuConfig) else f" · {plan.chips_per_task} × {device.variant}"
    per_task = (f"{core_count(plan.cpu_millicores)} · {size(plan.memory_bytes)} RAM · "
                f"{size(plan.disk_bytes)} disk{chips}")
    cards = [_card(str(plan.replicas), "replicas (tasks), as sent", "fray-replicas"),
             _card(str(plan.total_chips), "chips in total", "fray-chips")]
    if plan.hbm_bytes is not None:
        cards.append(_card(size(plan.hbm_bytes), "HBM in total"))
    if plan.peak_flops is not None:
        cards.append(_card(flops(plan.peak_flops), "peak bf16"))
    cards.append(_card(plan.group_by or "none", f"coscheduling · {len(plan.groups)} group(s)", "fray-group-by"))
    return (f'<div><code class="fray-job-id">{escape(plan.job_id)}</code></div>'
            f'<div class="fray-cards">{"".join(cards)}</div>'
            f'<div class="fray-per-task">Per task, as sent: {escape(per_task)}</div>'
            f'<div class="fray-follows fray-dim">Marin: {escape(plan.follows)}</div>')


def _constraints(plan: Plan) -> str:
    def cell(constraints: tuple[object, ...]) -> str:
        return "<br>".join(escape(str(c)) for c in constraints) or '<span class="fray-dim">(none)</span>'

    return (f'<table class="fray-constraints"><tr><th>Fray</th><th>on the wire</th></tr>'
            f"<tr><td>{cell(plan.fray_constraints)}</td><td>{cell(plan.wire_constraints)}</td></tr></table>")


def _env(plan: Plan) -> str:
    rows = "".join(f"<tr><td><code>{escape(v.name)}</code></td><td><code>{escape(repr(v.value))}</code></td>"
                   f'<td class="fray-dim">{escape(v.source)}</td></tr>' for v in plan.env)
    return f'<table class="fray-env"><tr><th>name</th><th>value</th><th>source</th></tr>{rows}</table>'


def _snippets(plan: Plan) -> str:
    python = python_snippet(plan.job.resources)
    imports = ", ".join(n for n in ("ANY_REGION", "ResourceConfig", "TpuConfig") if n in python)
    blocks = (("Python", f"from fray_jupyter import {imports}\n\nresources = {python}", "fray-python"),
              ("%%fray line", magic_line(plan.job), "fray-magic"),
              ("iris job run", iris_command(plan.job), "fray-iris"))
    return "".join(f'<div class="fray-dim">{title} (click to select)</div><pre class="fray-snippet {css}">'
                   f"{escape(code)}</pre>" for title, code, css in blocks)


def _request(plan: Plan, previous: Plan | None, request_format: RequestFormat) -> str:
    label = "JSON" if request_format == "json" else "protobuf text"
    before = _request_text(previous, request_format) if previous is not None else None
    changes = ""
    if previous is not None:
        names = changed_fields(previous.request, plan.request)
        changes = (f'<div class="fray-changes">Changed by the last edit: <code>{escape(", ".join(names))}</code></div>'
                   if names else '<div class="fray-changes fray-dim">No change to the request.</div>')
    return (f'<h4>LaunchJobRequest <span class="fray-dim">· {label} · '
            f'<span class="fray-size">{plan.request_size}</span> bytes</span></h4>{changes}'
            f'<pre class="fray-request" data-format="{request_format}">'
            f"{_highlighted(_request_text(plan, request_format), before)}</pre>")


def render_fit(line: str) -> str:
    """The "will it fit?" line (``fit: <verdict> — <reason>``), styled by its verdict."""
    verdict = line.removeprefix("fit: ").split(" ", 1)[0]
    return f'<div class="fray-fit" data-verdict="{escape(verdict)}"><code>{escape(line)}</code></div>'


def render_budget(picture: BudgetPicture) -> str:
    """The budget and band lines (``BudgetPicture.lines``), marked with the band the job runs at
    (``data-band``: a band name, ``refused``, or ``unknown`` without a budget answer) and whether its
    user is over the limit now or once it runs (``data-over``)."""
    band = picture.effective_band
    marked = "refused" if picture.refusal is not None else band_name(band) if band is not None else "unknown"
    over = picture.known and (picture.over_after or over_budget(picture.spent or 0, picture.limit or 0))
    lines = "<br>".join(f"<code>{escape(line)}</code>" for line in picture.lines)
    return f'<div class="fray-budget" data-band="{marked}" data-over="{str(over).lower()}">{lines}</div>'


def render_preview_html(plan: Plan, *, previous: Plan | None = None, request_format: RequestFormat = "text",
                        style: bool = True, fit: str | None = None, budget: BudgetPicture | None = None) -> str:
    """The whole preview for ``plan``; ``previous`` (the plan shown before the last edit) turns on
    change highlighting; ``request_format`` picks protobuf text or JSON for the request; ``fit`` (a
    ``fit: …`` line) and ``budget`` (what it costs its user's budget, at which band it runs) are shown
    under the figures. ``style=False`` leaves out the ``STYLE`` sheet, for a page that already has it
    (a new sheet restyles the page)."""
    if request_format not in ("text", "json"):
        raise ValueError(f"request_format {request_format!r} must be 'text' or 'json'")
    errors = "".join(f'<div class="fray-error fray-placement-error" role="alert">{escape(e)}</div>'
                     for e in plan.errors)
    warnings = ("<h4>Warnings</h4><ul class=\"fray-warnings\">"
                + "".join(f"<li>{escape(w)}</li>" for w in plan.warnings) + "</ul>") if plan.warnings else ""
    return (f'{STYLE if style else ""}<div class="fray-preview">{_figures(plan)}'
            f'{render_fit(fit) if fit else ""}{render_budget(budget) if budget is not None else ""}'
            f"<h4>Coscheduling</h4>{render_diagram_svg(plan)}{errors}{warnings}"
            f"<h4>Constraints</h4>{_constraints(plan)}<h4>Environment</h4>{_env(plan)}"
            f"<h4>Snippets</h4>{_snippets(plan)}{_request(plan, previous, request_format)}</div>")


def render_error_html(message: str, *, control: str | None, stale_html: str | None = None, style: bool = True) -> str:
    """An inline error naming ``control`` (None when no single control is at fault). ``stale_html``,
    the last valid preview, is shown greyed out under a banner saying it is not what would be sent.
    ``style`` as for ``render_preview_html``."""
    where = f"<b>{escape(control)}</b>: " if control else ""
    stale = ""
    if stale_html:
        stale = ('<div class="fray-stale-banner">Stale: the preview below is from the last valid settings '
                 f'and is NOT what would be sent.</div><div class="fray-stale">{stale_html}</div>')
    return (f'{STYLE if style else ""}<div class="fray-preview"><div class="fray-error" role="alert">{where}{escape(message)}</div>'
            f"{stale}</div>")
