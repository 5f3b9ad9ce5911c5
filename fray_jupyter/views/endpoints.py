"""The endpoints a running job's tasks registered (its actors), as the status panel lists them.

Rule: every value (name, address, task id) is HTML-escaped.
"""

from __future__ import annotations

import html


def endpoints_html(endpoints: tuple[tuple[str, str, str], ...]) -> str:
    """The panel's endpoints table (``""`` when there are none), every value escaped."""
    if not endpoints:
        return ""
    rows = "".join("<tr>" + "".join(f"<td><code>{html.escape(value)}</code></td>" for value in row) + "</tr>"
                   for row in endpoints)
    return (f"<details open><summary>endpoints ({len(endpoints)})</summary><table>"
            f"<tr><th>name</th><th>address</th><th>task</th></tr>{rows}</table></details>")
