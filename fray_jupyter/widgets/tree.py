"""``TreeView``: the jobs below a status panel's job (``views.tree``) and the choice of whose log
rows the panel's log tail follows — stock ipywidgets.

Rules:

* Hidden while the job has no child jobs; then the tree table and a "logs of" choice: the whole
  tree (the default), this job only, or any one job below it (with the jobs below that one, if
  any).
* The choice keeps its value while the tree changes (a new step is added to it, never selected
  for the reader); a chosen job that leaves the tree (replaced) falls back to the whole tree.
* Choosing calls ``on_choose(job_id, include_children)``; redrawing the choices never does.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from fray_jupyter.iris.tree import JobTree
from fray_jupyter.views.tree import relative, tree_html

Choice = tuple[str, bool]
"""Whose rows: a job id, and whether the jobs below it too."""


class TreeView(widgets.VBox):
    """The tree of ``root_id`` and its log choice (see the module rules)."""

    def __init__(self, root_id: str, on_choose: Callable[[str, bool], None]) -> None:
        self.root_id, self._on_choose = root_id, on_choose
        self._redrawing = False
        self.table = widgets.HTML()
        self.table.add_class("fray-status-tree")
        self.choice = widgets.Dropdown(description="logs of", options=self._options(None),
                                       value=(root_id, True), layout=widgets.Layout(width="auto"),
                                       style={"description_width": "initial"})
        self.choice.add_class("fray-status-logs-of")
        self.choice.observe(self._chosen, names="value")
        super().__init__([self.table, self.choice], layout=widgets.Layout(display="none"))

    def _options(self, tree: JobTree | None) -> list[tuple[str, Choice]]:
        options = [("the whole tree", (self.root_id, True)), ("this job only", (self.root_id, False))]
        if tree is not None:
            options += [("\u2003" * (depth - 1) + relative(self.root_id, job.job_id), (job.job_id, True))
                        for depth, job in tree.walk()]
        return options

    def show(self, tree: JobTree, now: int | None = None) -> None:
        """Draw ``tree`` (hidden when nothing is below its root) and refresh the choices."""
        self.table.value = tree_html(tree, now)
        self.layout.display = None if tree.jobs() or tree.unlisted(tree.root.job_id) else "none"
        options = self._options(tree)
        if [value for _, value in options] == [value for _, value in self.choice.options]:
            return
        chosen = self.choice.value
        kept = chosen if any(value == chosen for _, value in options) else (self.root_id, True)
        self._redrawing = True
        try:
            self.choice.options = options
            self.choice.value = kept
        finally:
            self._redrawing = False
        if kept != chosen:
            self._on_choose(*kept)

    def _chosen(self, change: dict[str, object]) -> None:
        if not self._redrawing and isinstance(change["new"], tuple):
            job_id, include_children = change["new"]
            self._on_choose(str(job_id), bool(include_children))
