"""What was sent, read back after submit: a job's stored ``LaunchJobRequest`` (``GetJobStatus``
answers with it) as the status panel and ``%fray status JOB --request`` show it.

Rules:

* Shown, in this order: the submit command (``submit_argv``, when the submitter recorded one), the
  command (``run_command.argv``) and its setup (``setup_commands``, then the environment's
  ``setup_scripts``), the resources of each task and the replicas, the constraints as sent, the
  coscheduling key, the priority band, the retry limits and timeouts, the image, the ports, and the
  environment: each env var and secret as Iris shows a stored request (``iris.redaction``: secrets
  and credential-looking values read ``[REDACTED]``), whichever controller answered (Iris and the
  embedded controller answer them redacted already; a peer that did not is shown the same). A field
  left at its default is left out.
* Argv are joined as a POSIX shell would read them (``shlex.join``); the submit command also passes
  through Iris's text redaction (prefixed and high-entropy secrets).
* HTML escapes every value; the text form is for a terminal (``%fray status --request``).
"""

from __future__ import annotations

import shlex
from html import escape

from fray_jupyter.iris.budget import band_name
from fray_jupyter.iris.constraints import Constraint
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.redaction import redact_env, redact_text
from fray_jupyter.vocabulary import byte_size, cores, counted, duration_ms


def request_fields(request: Controller.LaunchJobRequest) -> list[tuple[str, str]]:
    """(label, value) of each field shown, in the module's order (env and secrets excluded)."""
    entry, resources = request.entrypoint, request.resources
    fields = [("submitted with", redact_text(shlex.join(request.submit_argv))) if request.submit_argv else None,
              ("command", shlex.join(entry.run_command.argv)),
              *((f"setup {i + 1}", command) for i, command in
                enumerate([*entry.setup_commands, *request.environment.setup_scripts])),
              ("per task", ", ".join(part for part in (
                  cores(resources.cpu_millicores) if resources.cpu_millicores else "",
                  f"{byte_size(resources.memory_bytes)} RAM" if resources.memory_bytes else "",
                  f"{byte_size(resources.disk_bytes)} disk" if resources.disk_bytes else "",
                  _device(resources.device))
                  if part)),
              ("replicas", str(request.replicas)) if request.replicas else None,
              *(("constraint", str(Constraint.from_proto(c))) for c in request.constraints),
              ("coscheduled by", request.coscheduling.group_by) if request.coscheduling.group_by else None,
              ("priority band", band_name(request.priority_band)),
              ("retries", (f"max_task_failures {request.max_task_failures}, max_retries_failure "
                           f"{request.max_retries_failure}, max_retries_preemption {request.max_retries_preemption}")),
              ("timeout", duration_ms(request.timeout.milliseconds)) if request.timeout.milliseconds else None,
              ("scheduling timeout", duration_ms(request.scheduling_timeout.milliseconds))
              if request.scheduling_timeout.milliseconds else None,
              ("image", request.task_image) if request.task_image else None,
              ("ports", ", ".join(request.ports)) if request.ports else None]
    return [field for field in fields if field is not None and field[1]]


def _device(device: job_pb2.DeviceConfig) -> str:
    """``tpu v5p-8 (4 chips)``, ``gpu H100 (8 chips)``; "" for none or a plain CPU."""
    kind = device.WhichOneof("device")
    if kind not in ("tpu", "gpu"):
        return ""
    chosen = device.tpu if kind == "tpu" else device.gpu
    return f"{kind} {chosen.variant} ({counted(chosen.count, 'chip')})" if chosen.count else f"{kind} {chosen.variant}"


def shown_env(request: Controller.LaunchJobRequest) -> list[tuple[str, str, str]]:
    """(name, value as shown, ``env`` or ``secret``) of every variable, env vars then secrets, by name."""
    env, secrets = redact_env(request.environment.env_vars, request.environment.secrets)
    return ([(name, env[name], "env") for name in sorted(env)]
            + [(name, secrets[name], "secret") for name in sorted(secrets)])


def request_html(request: Controller.LaunchJobRequest, *, open_: bool = False) -> str:
    """The request as a collapsible table (see the module rules)."""
    rows = "".join(f"<tr><th>{escape(label)}</th><td><code>{escape(value)}</code></td></tr>"
                   for label, value in request_fields(request))
    env = "".join(f"<tr><th>{escape(kind)}</th><td><code>{escape(name)}={escape(value)}</code></td></tr>"
                  for name, value, kind in shown_env(request))
    return (f'<details class="fray-status fray-request"{" open" if open_ else ""}><summary>request as sent '
            f'<span class="fray-dim">({escape(request.name)})</span></summary><table>{rows}{env}</table></details>')


def request_text(request: Controller.LaunchJobRequest) -> list[str]:
    """The request as lines for a terminal (see the module rules)."""
    width = max((len(label) for label, _ in request_fields(request)), default=0)
    lines = [f"request of {request.name}:"]
    lines += [f"  {label:<{width}}  {value}" for label, value in request_fields(request)]
    lines += [f"  {kind:<{width}}  {name}={value}" for name, value, kind in shown_env(request)]
    return lines
