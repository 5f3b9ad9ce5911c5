"""Who owns the other end of a loopback TCP connection (``controller.runtime.peer``), and the tokenless
rule built on it: the controller's own OS user is let in without a token on both transports,
any other OS user is refused (a probe process run as another user with ``setpriv``)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.controller.runtime.peer import is_loopback, parse_grpc_peer, socket_owner
from fray_jupyter.iris.proto import controller_pb2
from tests.controller_harness import ControllerProcess, start_controller, stop_quietly

C = controller_pb2.Controller
PROBE_USER = "fray-probe"
HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"


def _row(local: str, remote: str, state: str, uid: int) -> str:
    return f"   0: {local} {remote} {state} 00000000:00000000 00:00000000 00000000  {uid}        0 1 1\n"


def test_the_owner_of_a_real_loopback_connection_is_this_process_user() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, peer = server.accept()
            with accepted:
                assert peer == client.getsockname()
                assert socket_owner(peer, port) == os.geteuid()
                assert socket_owner(peer, port + 1 if port < 65535 else port - 1) is None  # not a connection to us


def test_the_owner_is_read_from_the_kernel_table(tmp_path: Path) -> None:
    """127.0.0.1:40000 → :8080 owned by uid 1234 (v4 table), ::1 and v4-mapped rows (v6 table);
    TIME_WAIT rows have no owner; the row must name our port as its remote end."""
    tcp, tcp6 = tmp_path / "tcp", tmp_path / "tcp6"
    tcp.write_text(HEADER + _row("0100007F:1F90", "0100007F:9C40", "01", 0)  # the server's end
                   + _row("0100007F:9C41", "0100007F:1F90", "06", 0)  # TIME_WAIT
                   + _row("0100007F:9C40", "0100007F:1F90", "01", 1234))
    mapped = "0000000000000000FFFF00000100007F"
    tcp6.write_text(HEADER + _row("00000000000000000000000001000000:9C42", f"{mapped}:1F90", "01", 4321)
                    + _row(f"{mapped}:9C43", f"{mapped}:1F90", "01", 777))
    tables = (tcp, tcp6)
    assert socket_owner(("127.0.0.1", 40000), 8080, tables) == 1234
    assert socket_owner(("127.0.0.1", 40001), 8080, tables) is None
    assert socket_owner(("127.0.0.1", 40000), 8081, tables) is None
    assert socket_owner(("::1", 40002), 8080, tables) == 4321
    assert socket_owner(("::ffff:127.0.0.1", 40003), 8080, tables) == 777
    assert socket_owner(("127.0.0.1", 40003), 8080, tables) == 777
    assert socket_owner(("not-an-address", 1), 8080, tables) is None
    assert socket_owner(("127.0.0.1", 40000), 8080, (tmp_path / "missing",)) is None


def test_loopback_and_grpc_peer_parsing() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.9.9.9", "::1", "[::1]", "::ffff:127.0.0.1"]))
    assert not any(map(is_loopback, ["10.0.0.1", "::ffff:10.0.0.1", "example.com", ""]))
    assert parse_grpc_peer("ipv4:127.0.0.1:5000") == ("127.0.0.1", 5000)
    assert parse_grpc_peer("ipv6:[::1]:6000") == ("::1", 6000)
    assert parse_grpc_peer("unix:/tmp/socket") is None
    assert parse_grpc_peer("ipv4:nonsense:1") is None


# -- the rule, end to end: the real controller, a probe as this user and as another ---------------------
PROBE = r"""
import json, sys
import grpc, httpx
url, grpc_target = sys.argv[1], sys.argv[2]
results = {}
reply = httpx.post(url + "/iris.cluster.ControllerService/ListJobs", content=b"{}",
                   headers={"content-type": "application/json"}, timeout=30)
results["connect"] = "ok" if reply.status_code == 200 else reply.json()["code"]
reply = httpx.post(url + "/proxy/system.log-server/finelog.logging.LogService/FetchLogs",
                   content=b'{"source": "/", "matchScope": "MATCH_SCOPE_PREFIX"}',
                   headers={"content-type": "application/json"}, timeout=30)
results["fetch_logs"] = "ok" if reply.status_code == 200 else reply.json()["code"]
with grpc.insecure_channel(grpc_target) as channel:
    try:
        channel.unary_unary("/iris.cluster.ControllerService/ListJobs")(b"", timeout=30)
        results["grpc"] = "ok"
    except grpc.RpcError as error:
        results["grpc"] = error.code().name.lower()
from fray.iris_backend import FrayIrisClient
from fray.types import Entrypoint, JobRequest, ResourceConfig
try:
    handle = FrayIrisClient(url).submit(JobRequest(name="probe-" + sys.argv[3], resources=ResourceConfig(
        cpu=1, ram="1g", disk="1g"), entrypoint=Entrypoint.from_binary("true", [])))
    results["fray"] = "ok"
except Exception as error:
    results["fray"] = str(error)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    started = start_controller(tmp_path_factory.mktemp("peer") / "state")
    yield started
    stop_quietly(started)


def _other_user() -> list[str]:
    """``setpriv`` arguments running a command as ``PROBE_USER`` (created if missing). It keeps
    one capability, reading any file (CAP_DAC_READ_SEARCH), so the probe can load Python from a
    venv under a private home; the sockets it opens are still owned by ``PROBE_USER``."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("running a probe as another OS user needs root and setpriv (util-linux)")
    try:
        entry = pwd.getpwnam(PROBE_USER)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            pytest.skip("no useradd to create the probe user")
        subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PROBE_USER],
                       check=True, capture_output=True)
        entry = pwd.getpwnam(PROBE_USER)
    return [setpriv, f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups",
            "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]


def _probe(controller: ControllerProcess, tmp_path: Path, prefix: list[str], name: str) -> dict[str, str]:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = {key: value for key, value in os.environ.items() if key not in ("MARIN_CLUSTER_TOKEN", "FRAY_CONTROLLER_TOKEN")}
    env.update({"HOME": str(tmp_path), "IRIS_USER": "probe"})
    done = subprocess.run([*prefix, sys.executable, str(script), controller.info.url,
                           controller.info.grpc_url.removeprefix("grpc://"), name],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    results: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


def test_the_controllers_own_user_needs_no_token(controller: ControllerProcess, tmp_path: Path) -> None:
    assert _probe(controller, tmp_path, [], "same") == {"connect": "ok", "fetch_logs": "ok", "grpc": "ok",
                                                        "fray": "ok"}


def test_another_os_user_without_a_token_is_refused_on_both_transports(controller: ControllerProcess,
                                                                       tmp_path: Path) -> None:
    prefix = _other_user()
    tmp_path.chmod(0o755)
    results = _probe(controller, tmp_path, prefix, "other")
    assert {key: results[key] for key in ("connect", "fetch_logs", "grpc")} == {
        "connect": "unauthenticated", "fetch_logs": "unauthenticated", "grpc": "unauthenticated"}
    assert "missing 'authorization: Bearer <token>' header" in results["fray"]
    wire = controller.wire()
    assert wire.call("GetJobState", C.GetJobStateRequest(job_ids=["/probe/probe-other"])).states == {}
    wire.close()
