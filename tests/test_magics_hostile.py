"""Hostile ``%%fray`` / ``%fray`` lines beyond ``test_magics``'s corpus (same pattern): each is ONE
plain ``UsageError`` line naming the value, raised before any controller is looked for or started."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing import globalipapp

from fray_jupyter.runtime_file import RUNTIME_FILE_NAME
from tests.assertions import one_usage_line
from tests.jupyter_isolation import isolated_jupyter

BAD_CELLS: list[tuple[str, str]] = [
    # (line, a fragment the one line must contain); none of these is in test_magics.BAD_CELLS
    ("--memory ''", "ram ''"),
    ("--memory 1e3", "'1e3'"),
    ("--memory -1g", "--memory: expected one argument"),
    ("--disk 9999999t", "'9999999t' is out of range"),
    ("--gpu H100x0", "GPU count 0"),
    ("--gpu H100x65", "GPU count 65"),
    ("--cpu nan", "cpu nan"),
    ("--cpu inf", "cpu inf"),
    ("--cpu 1e400", "cpu inf"),
    ("--timeout inf", "timeout inf"),
    ("--timeout nan", "timeout nan"),
    ("--timeout 1e30", "timeout 1e+30"),
    ("--timeout 0", "timeout 0"),
    ("--tpu v5p-8 --slices 99999999", "replicas 99999999"),
    ("--replicas 99999999999999999999", "replicas 99999999999999999999"),
    ("--priority 9", "priority 9"),
    ("--priority -1", "priority -1"),
    ("--max-task-failures -1", "max_task_failures -1"),
    ("--max-retries 99999999999", "max_retries_failure 99999999999"),
    ("--region ''", "got ''"),
    ("--region us-east1 --region ' '", "got ' '"),
    ("--tpu v5p-8 --alternative v5p-16", "v5p-16 (2 VM"),
    ("--tpu v5p-8 --alternative H100", "'H100'"),
    ("--gpu GB200x4 --replicas 20 --alternative H100", "GB200="),
    ("-e A=B x", "'A=B'"),
    ("-e '' x", "name ''"),
    ("--name " + "x" * 300, "x" * 300),
    ("--controller grpc://", "'grpc://' names no host"),
    ("--controller http://", "'http://' names no host"),
    ("--controller 'http://[::1'", "'http://[::1' is not a URL"),
    ("--controller http://127.0.0.1:port", "'http://127.0.0.1:port' is not a URL"),
    ("--controller 127.0.0.1:8080", "'127.0.0.1:8080' must start with one of"),
]
BAD_LINES: list[tuple[str, str]] = [
    ("jobs --limit -5", "--limit must be from 1 to 500, got -5"),
    ("logs some-job --tail many", "invalid int value: 'many'"),
    ("status some-job --controller 'http://[::1'", "'http://[::1' is not a URL"),
    ("cancel some-job --controller grpc://", "'grpc://' names no host"),
    ("config controller_url 'http://[::1'", "'http://[::1' is not a URL"),
    ("config controller_url http://", "'http://' names no host"),
    ("config controller_url http:/127.0.0.1", "must start with one of"),
    ("config user ''/''", "'/'"),
    ("status 'unclosed", "No closing quotation"),
]


@pytest.fixture(scope="module")
def ip(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InteractiveShell]:
    """The test shell with the magics, in Jupyter dirs of its own (no controller anywhere)."""
    root = tmp_path_factory.mktemp("hostile-magics")
    with isolated_jupyter(root) as runtime, pytest.MonkeyPatch.context() as patch:
        patch.setenv("IRIS_USER", "tester")
        # the one global test shell, whether or not test_magics started it already (start_ipython
        # returns None after the first call, and get_ipython is rebound to the shell's own)
        shell = globalipapp.start_ipython() or globalipapp.get_ipython()
        shell.run_line_magic("load_ext", "fray_jupyter.magics")
        yield shell
        assert not (Path(runtime) / RUNTIME_FILE_NAME).exists(), "a hostile line started a controller"




@pytest.mark.parametrize(("line", "fragment"), BAD_CELLS, ids=[line[:40] for line, _ in BAD_CELLS])
def test_hostile_cell_lines_are_one_usage_error(ip: InteractiveShell, line: str, fragment: str) -> None:
    with pytest.raises(UsageError) as raised:
        ip.run_cell_magic("fray", line, "print('never runs')\n")
    one_usage_line(raised, fragment, "%%fray")


@pytest.mark.parametrize(("line", "fragment"), BAD_LINES, ids=[line[:40] for line, _ in BAD_LINES])
def test_hostile_line_magics_are_one_usage_error(ip: InteractiveShell, line: str, fragment: str) -> None:
    with pytest.raises(UsageError) as raised:
        ip.run_line_magic("fray", line)
    one_usage_line(raised, fragment, "%fray")
