"""A thread dump as the sidebar's thread view reads it (``GET …/profiles/<id>?view=lines``): its lines
with their kinds, as ``client.thread_dump`` tells them."""

from __future__ import annotations

from fray_jupyter.client.thread_dump import line_kinds
from fray_jupyter.server import contract


def dump_json(text: str) -> contract.ThreadDump:
    """The dump's lines with their kinds (``client.thread_dump.line_kinds``), and how many are the task's
    own frames."""
    kinds = line_kinds(text)
    return contract.ThreadDump(lines=text.splitlines(), kinds=kinds, own_frames=kinds.count("own"))
