"""What a task's output becomes in the log store, on the genuine twin and on the embedded controller:
the same rows, stream by stream (a lone carriage return ends a row, trailing blanks go, an empty row
stays), with the same level on each (Iris's classification: glog prefixes, rank tags, tqdm frames on
stderr). The interleaving of stdout with stderr is each controller's reading order, so each stream
is compared on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fray_jupyter.client.client import FrayClient
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from tests.waiting import until

CHUNKS = [
    (1, "\x1b[32mgreen\x1b[0m plain\n"), (2, "\r  0%|  | 0/3 [00:00<?, ?it/s]"),
    (2, "\r 33%|# | 1/3 [00:01<00:02,  1.00it/s]"), (2, "\r100%|##| 3/3 [00:03<00:00,  1.00it/s]\n"),
    (1, "a\r"), (1, "\nb  \t\n"), (1, "\n"), (1, "x\ry\r\nz\n"), (2, "W0101 careful\n"), (2, "[rank1] I0101 fine\n"),
    (2, "plain error\n"), (1, "no line break at the end"),
]
LAST_OUT, LAST_ERR = "no line break at the end", "plain error"
"""The last row of each stream (the script writes them last)."""
SCRIPT = (
    "import sys, time\n"
    f"for stream, chunk in {CHUNKS!r}:\n"
    "    out = sys.stdout if stream == 1 else sys.stderr\n"
    "    out.write(chunk)\n"
    "    out.flush()\n"
    "    time.sleep(0.05)  # each chunk read on its own: a CR may end one read and its LF start the next\n"
)


def stored(client: FrayClient, workspace: Path) -> dict[str, list[tuple[str, int]]]:
    job = JobRequest(name="log-capture", entrypoint=Entrypoint.from_binary("python", ["-c", SCRIPT]),
                     resources=ResourceConfig(cpu=1, ram="512m", disk="1g"),
                     environment=EnvironmentConfig(workspace=str(workspace), setup_scripts=[]))
    job_id = client.submit(plan(job, user="diff"))
    client.wait(job_id, timeout=120)

    def complete() -> list[Any] | None:  # a genuine Iris worker ships a finished task's last rows a little later
        rows = [entry for page in client.log_pages(job_id) for entry in page.entries]
        last = {entry.source: entry.data for entry in rows}
        return rows if (last.get("stdout"), last.get("stderr")) == (LAST_OUT, LAST_ERR) else None

    rows = until(complete, "the task's last stdout and stderr rows stored")
    return {source: [(entry.data, entry.level) for entry in rows if entry.source == source]
            for source in ("stdout", "stderr")}


def test_output_is_stored_as_the_same_rows_with_the_same_levels(twin: FrayClient, embedded: FrayClient,
                                                                 tmp_path: Path) -> None:
    ours, iris = stored(embedded, tmp_path), stored(twin, tmp_path)
    assert ours == iris
    assert [data for data, _ in ours["stdout"]] == ["\x1b[32mgreen\x1b[0m plain", "a", "b", "", "x", "y", "z",
                                                    "no line break at the end"]
    assert ours["stderr"][0] == ("", 4)  # tqdm's first carriage return leaves an empty row, an ERROR one
