"""The server extension's profile and exec routes (``fray_jupyter.server.look_inside``) through a real
Jupyter server (pytest-jupyter) against a real embedded controller: what they answer, and that
only the job's owner gets in (an unauthenticated request, or a server holding another user's
token, is refused). pytest-jupyter's fixtures are imported into this module only."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from pytest_jupyter.jupyter_server import *

from fray_jupyter.controller.runtime import profiling
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.runtime_file import ControllerInfo, runtime_file_path, write_runtime_file
from tests.controller_harness import ControllerProcess, launch_request, start_controller, stop_quietly
from tests.fray_rest import Reply, fetch, job_path, jp_server_config, no_controller_env  # noqa: F401 - fixtures

BOB_TOKEN = "bobs-rest-token"
SLEEPER = ("exec python -c 'import time\ndef stuck_waiting():\n    while True: time.sleep(0.001); sum(range(200000))\n"
           "stuck_waiting()'")
pytestmark = pytest.mark.skipif(profiling.tool("py-spy") is None, reason="py-spy is not installed")


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    process = start_controller(tmp_path_factory.mktemp("server-inspect") / "state",
                               env={"FRAY_CONTROLLER_USER_TOKENS": f"bob={BOB_TOKEN}"})
    yield process
    stop_quietly(process)


@pytest.fixture(scope="module")
def task(controller: ControllerProcess) -> Iterator[tuple[str, int]]:
    """alice's running Python task: (job id, index)."""
    wire = controller.wire()
    job_id = wire.launch(launch_request(f"rest-{time.monotonic_ns()}", SLEEPER))
    wire.wait(job_id, {job_pb2.JOB_STATE_RUNNING})
    yield job_id, 0
    wire.call("TerminateJob", controller_pb2.Controller.TerminateJobRequest(job_id=job_id))
    wire.close()


def announce(controller: ControllerProcess, token: str) -> None:
    """Announce the controller in this server's runtime dir with ``token`` (whose caller it is)."""
    info = controller.info
    write_runtime_file(ControllerInfo(url=info.url, grpc_url=info.grpc_url, token=token, pid=info.pid,
                                      instance=info.instance), runtime_file_path())


@pytest.fixture
def api(http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str], jp_asyncio_loop: Any,
        jp_environ: Any) -> Callable[..., Reply]:
    def call(path: str, *, params: dict[str, Any] | None = None, body: Any = None, auth: bool = True) -> Reply:
        return fetch(http_server_client, jp_asyncio_loop, jp_base_url,
                     path + (f"?{urlencode(params)}" if params else ""), method="POST",
                     headers=dict(jp_auth_header) if auth else None,
                     content=json.dumps(body).encode() if body is not None else b"")
    return call


def test_profile_and_exec_answer_for_the_owner(api: Callable[..., Reply], controller: ControllerProcess,
                                               task: tuple[str, int]) -> None:
    announce(controller, controller.info.token)
    job_id, index = task
    deadline = time.monotonic() + 20
    while "stuck_waiting" not in str((dumped := api(job_path(job_id, "tasks", str(index), "profile"),
                                                    params={"kind": "threads"})).body):
        assert time.monotonic() < deadline, dumped
    assert dumped.code == 200
    flame = api(job_path(job_id, "tasks", str(index), "profile"), params={"kind": "cpu", "seconds": 1})
    assert flame.code == 200 and "<svg" in flame.body and "stuck_waiting" in flame.body
    ran = api(job_path(job_id, "tasks", str(index), "exec"), body={"argv": ["sh", "-c", "echo $IRIS_TASK_ID"]})
    assert ran.code == 200 and ran.body == {"exit_code": 0, "stdout": f"{job_id}/0:0\n", "stderr": "", "error": ""}


@pytest.mark.parametrize(("params", "body", "message"), [
    ({"kind": "gpu"}, None, "kind='gpu' must be one of"),
    ({"kind": "cpu", "format": "png"}, None, "format='png' must be one of"),
    ({"seconds": "99999"}, None, "seconds='99999' must be a whole number from 0 to 3600"),
    (None, {"argv": "rm -rf /"}, "argv must be a non-empty list of strings"),
    (None, {"argv": ["ls"], "timeout": "soon"}, "timeout='soon' must be a whole number"),
])
def test_bad_requests_are_400(api: Callable[..., Reply], controller: ControllerProcess, task: tuple[str, int],
                              params: dict[str, str] | None, body: Any, message: str) -> None:
    announce(controller, controller.info.token)
    verb = "exec" if body is not None else "profile"
    refused = api(job_path(task[0], "tasks", "0", verb), params=params, body=body)
    assert refused.code == 400 and message in refused.body["message"]


def test_another_user_or_nobody_is_refused(api: Callable[..., Reply], controller: ControllerProcess,
                                           task: tuple[str, int]) -> None:
    job_id, _ = task
    announce(controller, controller.info.token)
    for verb, body in (("profile", None), ("exec", {"argv": ["touch", "pwned"]})):
        assert api(job_path(job_id, "tasks", "0", verb), body=body, auth=False).code == 403
    announce(controller, BOB_TOKEN)
    for verb, body in (("profile", None), ("exec", {"argv": ["touch", "pwned"]})):
        refused = api(job_path(job_id, "tasks", "0", verb), params={"kind": "threads"}, body=body)
        assert (refused.code, refused.body["code"]) == (403, "permission_denied")
        assert "User 'bob' cannot access resources owned by 'alice'" in refused.body["message"]
    assert not list(controller.state_dir.glob("work/*/*/pwned"))
