"""Jobs whose logs look like a researcher's: coloured text, a 1,000-step tqdm bar (the real tqdm),
a W&B link and a traceback; and jobs writing very many lines. Shared by the log tests, the browser
tests and ``bench/logview.py``."""

from __future__ import annotations

from typing import Final

from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig

WANDB: Final[str] = "https://wandb.ai/marin/levanter/runs/abc123"
COLOURED: Final[str] = f"\x1b[1;32mgreen bold\x1b[0m then \x1b[38;5;208morange\x1b[0m, run at {WANDB}"
"""The first line the researcher's job prints (bold green, 256-colour orange, a link)."""
TQDM_STEPS: Final[int] = 1000
EXCEPTION_LINE: Final[str] = "ValueError: loss is nan at step 1000"


def researcher_script(*, fail: bool = False, step_s: float = 0.0) -> str:
    """Python for a task that prints ``COLOURED``, runs a ``TQDM_STEPS``-step tqdm bar on stderr
    (every step drawn), prints ``training done`` and, with ``fail``, dies with a traceback ending in
    ``EXCEPTION_LINE``."""
    return "\n".join([
        "import sys, time",
        "from tqdm import tqdm",
        f"print({COLOURED!r}, flush=True)",
        f"for _ in tqdm(range({TQDM_STEPS}), mininterval=0, miniters=1):",
        f"    time.sleep({step_s})",
        "print('training done', flush=True)",
        "def step(n):",
        f"    raise ValueError({EXCEPTION_LINE.split(': ', 1)[1]!r})",
        "step(1000)" if fail else "",
    ])


def collapsing_script(outer: int = 3, inner: int = 500) -> str:
    """Python for a task that prints ``COLOURED``, then draws nested tqdm bars on stderr (``outer``
    steps, each a ``leave=False`` bar of ``inner`` steps: every step drawn, a few thousand redraws)
    and prints a traceback ending in ``EXCEPTION_LINE``: its newest rows collapse into a few lines.
    It exits 0, so every task of a job running it writes its whole log (a failed task would end
    its siblings mid-bar)."""
    return "\n".join([
        "import traceback",
        "from tqdm import tqdm",
        f"print({COLOURED!r}, flush=True)",
        f"for _ in tqdm(range({outer}), position=0, mininterval=0, miniters=1):",
        f"    for _ in tqdm(range({inner}), position=1, leave=False, mininterval=0, miniters=1):",
        "        pass",
        "def step(n):",
        f"    raise ValueError({EXCEPTION_LINE.split(': ', 1)[1]!r})",
        "try:",
        "    step(1000)",
        "except ValueError:",
        "    traceback.print_exc()",
    ])


def many_lines_script(count: int) -> str:
    """Python for a task that prints ``line <i> of <count>`` for i = 1..count, as fast as it can."""
    return (f"import sys\nsys.stdout.writelines(f'line {{i}} of {count}\\n' for i in range(1, {count + 1}))")


def python_job(name: str, script: str, *, user: str = "alice", replicas: int = 1) -> Plan:
    """A job of ``replicas`` tasks running ``script`` with the controller's Python (``python3``
    first on PATH)."""
    return plan(JobRequest(name=name, entrypoint=Entrypoint.from_binary("python3", ["-c", script]),
                           resources=ResourceConfig(cpu=1, ram="512m", disk="1g"), replicas=replicas), user=user)
