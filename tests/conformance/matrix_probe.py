"""Run with a Python holding some Marin release (``tests/marin_envs.py``): print, as one JSON line, what
that release's real client sends for every ``CASES`` job and what its Iris decides for every
``PLACEMENT_CASES`` request; ``version_matrix`` compares it with fray-jupyter in the test process.

Each case is ``["ok", <base64 LaunchJobRequest>]``, ``["error", <message>]`` (the client refused it) or
``["unbuildable", <message>]`` (that release's ``fray.types`` cannot express the job). Each placement
case is ``[<LaunchJob refusal or null>, <autoscaler's unmet reason or null>]`` on the built-in profile.
"""

from __future__ import annotations

import base64
import importlib.metadata
import json
from typing import Any

from tests.conformance.specs import WORKED_EXAMPLES, Spec

USER = "alice"
CASES: dict[str, Spec] = {
    **WORKED_EXAMPLES,
    "secrets": Spec("cpu", env={"workspace": "/tmp/ws", "secrets": {"HF_TOKEN": "hf-token"}, "setup_scripts": []}),
}


def placement_requests() -> dict[str, Any]:
    """The requests whose placement is compared, planned by fray-jupyter (its ``iris.placement`` is
    what the preview shows): a preferred region that no scale group has."""
    from fray_jupyter import Entrypoint, JobRequest, plan
    from fray_jupyter import ResourceConfig as RC
    from fray_jupyter.iris.proto import job_pb2

    request = plan(JobRequest(name="c", entrypoint=Entrypoint.from_binary("true"), resources=RC.with_tpu("v5p-8")),
                   user="u", marin=None).request
    constraint = request.constraints.add(key="region", op=job_pb2.CONSTRAINT_OP_EQ,
                                         mode=job_pb2.CONSTRAINT_MODE_PREFERRED)
    constraint.value.string_value = "mars"
    return {"soft region nowhere": request}


def main() -> None:
    import fray.types as real_types
    from rigging.timing import Duration

    from tests.conformance.iris_routing import their_groups, their_launch, their_route
    from tests.conformance.oracle import Oracle
    from tests.conformance.specs import build

    requests: dict[str, list[str]] = {}
    with Oracle() as oracle:
        for name, spec in CASES.items():
            try:
                job = build(real_types, spec, Duration.from_seconds)
            except TypeError as error:  # a field this release's fray.types does not have
                requests[name] = ["unbuildable", str(error)]
                continue
            except ValueError as error:
                requests[name] = ["error", str(error)]
                continue
            try:
                requests[name] = ["ok", base64.b64encode(oracle.capture(job, user=USER)).decode()]
            except ValueError as error:
                requests[name] = ["error", str(error)]
    groups = their_groups("default")
    placement = {name: [their_launch(request, groups), their_route(request, groups)]
                 for name, request in placement_requests().items()}
    print(json.dumps({"version": importlib.metadata.version("marin-iris"), "requests": requests,
                      "placement": placement}))


if __name__ == "__main__":
    main()
