"""The docs build with no warning, every internal link of the built site lands, and the README stays
a page a newcomer reads in five minutes, pointing only at files that exist."""

from __future__ import annotations

import functools
import json
import re
import shlex
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

import pytest

from tests.docs_build import DocsBuild

REPO: Final = Path(__file__).resolve().parents[1]
DOCS: Final = REPO / "docs"
README: Final = REPO / "README.md"
README_MAX_LINES: Final = 150
SETUP_COMMANDS: Final = (
    "scripts/lab     # installs everything into .venv and opens JupyterLab on examples/ (127.0.0.1)",
    ("scripts/test    # installs the test dependencies (Marin's packages, Chromium), runs ruff, mypy --strict "
     "and every test"),
)
class _Links(HTMLParser):
    """Every href/src of a page, and every id it defines."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)
            elif name == "id" and value:
                self.ids.add(value)


@functools.cache
def _parse(page: Path) -> _Links:
    """A built page's links and ids, parsed once (a page is the target of many links)."""
    parser = _Links()
    parser.feed(page.read_text())
    return parser


@pytest.fixture(scope="module")
def site(docs_build: DocsBuild) -> Path:
    """The docs built as ``scripts/docs`` builds them (warnings are errors), once per run (``tests/docs_build.py``)."""
    assert docs_build.build_failure is None, docs_build.build_failure
    return docs_build.site


def test_the_docs_build_without_a_warning_and_every_internal_link_lands(site: Path) -> None:
    """Every relative link and image of every built page names a file that exists, and its
    ``#fragment`` an id on that page (a renamed heading or a moved page fails here)."""
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    broken = []
    for page in pages:
        for link in _parse(page).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "data:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {link} (no such file)")
            elif parts.fragment and target.suffix == ".html" and parts.fragment not in _parse(target).ids:
                broken.append(f"{page.relative_to(site)}: {link} (no such anchor)")
    assert broken == []


def test_the_docs_are_offline(site: Path) -> None:
    """No page loads a script, style sheet, font or image from another host (links to read are fine)."""
    remote = re.compile(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=\"(https?:)?//", re.IGNORECASE)
    assert [page.name for page in site.rglob("*.html") if remote.search(page.read_text())] == []


def _text(page: Path) -> str:
    """What a reader sees of a page: its text, tags removed, entities decoded, spaces collapsed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", "", page.read_text())).split())


def test_the_reference_pages_are_generated_from_the_code(site: Path) -> None:
    """The flag tables, the CLI, the settings, the REST contract and the API are on their pages."""
    magic = _text(site / "reference" / "magic.html")
    assert "--resources VAR" in magic and "--tpu TYPE" in magic and "%fray logs" in magic
    assert "fray-jupyter controller status" in _text(site / "reference" / "cli.html")
    settings = _text(site / "reference" / "settings.html")
    assert "c.FrayMagics.controller_url" in settings and "$FRAY_CONTROLLER_MAX_LOG_LINES" in settings
    rest = _text(site / "reference" / "rest.html")
    assert "<base_url>/fray/jobs/<job_id>/logs" in rest and "has_more" in rest
    assert "ResourceConfig" in _text(site / "reference" / "api.html")
    assert "MARIN_PROVENANCE" in _text(site / "differences.html")


def test_the_examples_are_shown_with_their_outputs(site: Path) -> None:
    """The example notebooks ran during the build: a job's final state is on the quickstart page."""
    quickstart = _text(site / "examples" / "quickstart.html")
    assert "/alice/quickstart succeeded" in quickstart
    assert "an interactive widget" in quickstart  # the picker, named, not ipywidgets' repr
    assert "ResourcePicker(children=" not in quickstart


def test_the_readme_is_short_and_keeps_the_two_set_up_commands() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES
    for command in SETUP_COMMANDS:
        assert command in lines


def test_the_readme_links_only_to_files_that_exist() -> None:
    """Every relative link and image of the README names a file of the repo."""
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [target for target in targets if not urlsplit(target).scheme]
    assert {"docs/images/picker.png", "docs/images/sidebar.png"} <= set(local)
    assert [target for target in local if not (REPO / target).exists()] == []


def test_guide_pages_start_with_a_title() -> None:
    """Each guide page (they are globbed into the docs' table of contents) starts with ``# Title``."""
    untitled = [page.name for page in (DOCS / "guide").glob("*.md") if not page.read_text().startswith("# ")]
    assert untitled == []


def _shown_plan_commands() -> list[str]:
    """The whole ``fray-jupyter plan`` commands the README and the guide show: inline code (which
    may wrap) and lines of code blocks, those with ``...`` or ``…`` (a command's outline) aside."""
    commands = []
    for page in [README, *sorted((DOCS / "guide").glob("*.md"))]:
        text = page.read_text()
        shown = [*re.findall(r"`(fray-jupyter plan [^`]+)`", text),
                 *re.findall(r"^(fray-jupyter plan .+)$", text, re.MULTILINE)]
        commands += [" ".join(command.split()) for command in shown if "..." not in command and "…" not in command]
    return commands


def test_the_plan_commands_the_docs_show_plan_without_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A newcomer copies the README's and the guide's commands first: each one plans, with no error
    in its preview (a job Iris could never place belongs in placement.md, said as such)."""
    from fray_jupyter.cli import main

    commands = _shown_plan_commands()
    assert len(commands) >= 3 and any("--slices" in command for command in commands)
    for command in commands:
        assert main(shlex.split(command)[1:]) == 0, command
        shown = capsys.readouterr().out
        errors = (json.loads(shown)["errors"] if "--json" in command
                  else re.findall(r"^Errors .*", shown, re.MULTILINE))
        assert shown and errors == [], (command, errors)
