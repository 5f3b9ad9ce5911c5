"""Every known, deliberate difference between what fray-jupyter sends and what Marin's client sends,
in one place. ``normalize`` removes exactly these from a real request before comparison.

1. Provenance: Marin's client adds ``MARIN_PROVENANCE`` (git state and command line of the
   submitting process). fray-jupyter sends none: a notebook kernel's cwd is rarely the code's repo.
2. Default setup script: with ``setup_scripts=None`` Marin's client generates a uv-sync script
   (``environment.setup_scripts`` and ``entrypoint.setup_commands``). fray-jupyter sends no setup:
   a notebook is not a uv workspace, and the embedded controller runs the job's Python directly.
3. Iris runtime script: when there is setup, Marin's client appends Iris's own runtime-deps script
   to ``entrypoint.setup_commands``. fray-jupyter sends the user's scripts only.
   (2 and 3 are the embedded default, ``plan()``'s. A job for a named cluster gets both, from the
   installed marin-iris: ``client.parity``, compared with Iris's own client in
   ``tests/test_client_parity.py``.)
4. Callable runner: both pickle (fn, args, kwargs) with cloudpickle and run
   ``$IRIS_WORKDIR/_callable_runner.py``; the runner script text is fray-jupyter's own.
5. Secrets forwarded from the submitting machine (HF_TOKEN, W&B, CoreWeave keys): Marin's client
   forwards them when ``secret_behavior`` is inherit; fray-jupyter sends only explicit secrets.
   (The oracle forwards none, so this never shows in a comparison.)

Deliberately stricter validation (inputs Marin's client accepts and fray-jupyter rejects with a
clear error) is listed in ``tests/conformance/test_translation.py::STRICTER``.
"""

from __future__ import annotations

from fray_jupyter.iris.proto import controller_pb2

LaunchJobRequest = controller_pb2.Controller.LaunchJobRequest
PROVENANCE_ENV = "MARIN_PROVENANCE"


def normalize(real: LaunchJobRequest, *, default_setup: bool) -> LaunchJobRequest:
    """A copy of Marin's request with differences 1-3 removed. ``default_setup`` is true when the
    job's ``setup_scripts`` was None (difference 2)."""
    out = LaunchJobRequest()
    out.CopyFrom(real)
    out.environment.env_vars.pop(PROVENANCE_ENV, None)
    if default_setup:
        del out.environment.setup_scripts[:]
        del out.entrypoint.setup_commands[:]
    elif out.entrypoint.setup_commands:
        del out.entrypoint.setup_commands[-1]  # Iris's runtime script, always last
    return out
