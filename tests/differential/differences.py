"""Every difference the differential suite keeps between the embedded controller and the genuine Iris
scheduler (the twin), each with why. Filled in from the suite's own findings."""

from __future__ import annotations

CONSTRAINTS_TAIL = " (constraints: "
"""LaunchJob refusals end with the job's constraints. Iris writes them as Python reprs
(``Constraint(key='device-type', op=<ConstraintOp.EQ: 0>, …)``), the embedded controller as
``device-type==tpu``: readable, and the same constraints. The suite compares messages up to this tail.
Kept: the embedded controller's form is meant for people; nothing parses either."""

ENV_ONLY_ON_TWIN: dict[str, str] = {}
ENV_ONLY_ON_EMBEDDED: dict[str, str] = {}
CASE_DIFFERENCES: dict[tuple[str, str], str] = {}
