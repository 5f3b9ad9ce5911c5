"""The endpoints a running job's tasks registered (its actors, a trace viewer), as the status panel
lists them: a name with a link through the cluster's proxy opens there.

Rule: every value (name, address, task id, link) is HTML-escaped.
"""

from __future__ import annotations

import html


def _name_cell(name: str, link: str) -> str:
    code = f"<code>{html.escape(name)}</code>"
    if not link:
        return f"<td>{code}</td>"
    return (f'<td><a href="{html.escape(link)}" target="_blank" rel="noopener noreferrer" '
            f'title="Open it through the cluster\'s proxy">{code}</a></td>')


def endpoints_html(endpoints: tuple[tuple[str, str, str, str], ...]) -> str:
    """The panel's endpoints table of (name, address, task, link) (``""`` when there are none), every
    value escaped; a name with a link (``iris.wire.proxy_link``) is one."""
    if not endpoints:
        return ""
    rows = "".join("<tr>" + _name_cell(name, link) + "".join(f"<td><code>{html.escape(value)}</code></td>"
                                                            for value in (address, task)) + "</tr>"
                   for name, address, task, link in endpoints)
    return (f"<details open><summary>endpoints ({len(endpoints)})</summary><table>"
            f"<tr><th>name</th><th>address</th><th>task</th></tr>{rows}</table></details>")
