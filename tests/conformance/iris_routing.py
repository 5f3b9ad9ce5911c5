"""Iris's own LaunchJob gate and autoscaler routing, run on ``ScalingGroup`` objects Iris builds from a
cluster manifest (nothing is started): what ``test_placement`` compares ``iris.placement`` with, and
what the version matrix asks each Marin release (``matrix_probe``)."""

from __future__ import annotations

from typing import Any

import yaml
from iris.cluster import config, constraints
from iris.cluster.controller import jobs
from iris.cluster.controller.autoscaler import models, routing, scaling_group
from iris.rpc import controller_pb2 as theirs_controller

from fray_jupyter.cluster.profile import BUILT_IN
from fray_jupyter.iris.proto import controller_pb2


def their_groups(name: str) -> list[Any]:
    """Iris's scaling groups for profile ``name``: ``marin`` (marin-iris's manifest) or the built-in one."""
    if name == "marin":
        from fray_jupyter.cluster.profile import marin_manifest

        parsed = config.load_config(marin_manifest()).scale_groups.values()
    else:
        data = yaml.safe_load(BUILT_IN.read_text())
        for group_name, group in data["scale_groups"].items():  # load_config names groups; parse_config does not
            group["name"] = group_name
        parsed = config.parse_config(data).scale_groups.values()
    return [scaling_group.ScalingGroup(sg, platform=None) for sg in parsed]


def _their_request(request: controller_pb2.Controller.LaunchJobRequest) -> Any:
    return jobs._inject_resource_constraints(theirs_controller.Controller.LaunchJobRequest.FromString(
        request.SerializeToString()))


def their_launch(request: controller_pb2.Controller.LaunchJobRequest, groups: list[Any]) -> str | None:
    """LaunchJob's refusal (``code: reason``) of ``request`` on ``groups``, or None when it accepts it."""
    theirs = _their_request(request)
    cs = [constraints.Constraint.from_proto(c) for c in theirs.constraints]
    if error := constraints.validate_tpu_request(theirs.resources, cs):
        return f"invalid_argument: {error}"
    result = routing.job_feasibility(groups, cs, replicas=theirs.replicas if theirs.HasField("coscheduling") else None,
                                     resources=theirs.resources)
    return None if result.reason is None else f"failed_precondition: {result.reason}"


def their_route(request: controller_pb2.Controller.LaunchJobRequest, groups: list[Any]) -> str | None:
    """Why the autoscaler cannot route one unit of ``request``'s demand on ``groups``, or None when it can."""
    theirs = _their_request(request)
    cs = [constraints.Constraint.from_proto(c) for c in theirs.constraints]
    gang = theirs.HasField("coscheduling")
    ids = tuple(f"/u/c/{i}" for i in range(theirs.replicas if gang else 1))
    entry = models.DemandEntry(task_ids=ids, coschedule_group_id="/u/c" if gang else None,
                               normalized=constraints.extract_placement_requirements(cs), constraints=cs,
                               resources=theirs.resources)
    decision = routing.route_demand(groups, [entry])
    return decision.unmet_entries[0].reason if decision.unmet_entries else None
