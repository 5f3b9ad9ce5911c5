"""Child process of ``tests/test_client_clusters.py`` (see ``tests/marin_home.py``): runs one
scenario against named clusters with a private HOME and prints one JSON line of what it saw.

Scenarios:

* ``twin``: the local-kind manifest ``twin`` resolved by name (Iris starts a genuine local
  cluster) and where its dashboard is; a job run, followed and listed, another cancelled; a
  two-host session through the controller's actor proxy; the resolution counted and checked
  closed with the client.
* ``cells``: ``%%fray --cluster twin --wait`` in an IPython shell whose current directory is a uv
  project, with and without ``--no-workspace``; what each task saw, and the request the genuine Iris
  stored for each job (read back with Iris's own RPC client); a coordinator cell whose task submits
  a step through Marin's ``current_client()`` (its lines and final snapshot); then the same from a
  directory over the bundle cap.
* ``race``: resolve ``twin`` when the parent says "go" on stdin (after this process said "ready"),
  print the URL and how many Iris local clusters this process started, close on the next line.
* ``edge``: an IAP-fronted manifest ``edge`` (with a public ``dashboard_url``) whose edge is a recording forwarder to a real Iris
  controller (``$UPSTREAM``). The login record in the credential store holds a refresh token; Google's
  token endpoint is out of reach here, so ``google.oauth2.credentials.Credentials.refresh`` — the
  call rigging's ``IapRefreshTokenProvider`` makes — is replaced: it mints ``idtoken-N`` valid for
  ``$LIFETIME`` seconds, or raises ``RefreshError`` (an expired or revoked login) when ``$EXPIRED``
  is set. ``$REJECT_FIRST``: the edge answers the first call 401, as IAP does for a stale token.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from fray_jupyter.client import FrayError, connect, list_clusters
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from tests.marin_home import iap_manifest
from tests.waiting import until

RESOLUTIONS: list[str] = []


def count_resolutions() -> None:
    """Count Iris's ``connect_controller`` calls (the module looks it up at each resolution)."""
    from iris.cli import connect as iris_connect

    real = iris_connect.connect_controller

    def counting(**kwargs: Any) -> Any:
        RESOLUTIONS.append(str(kwargs.get("cluster_name")))
        return real(**kwargs)

    iris_connect.connect_controller = counting


def job(name: str, *argv: str) -> JobRequest:
    workspace = Path(os.environ["TMPDIR"]) / "workspace"
    workspace.mkdir(exist_ok=True)
    return JobRequest(name=name, entrypoint=Entrypoint.from_binary(argv[0], list(argv[1:])),
                      resources=ResourceConfig(cpu=1, ram="512m", disk="1g"),
                      environment=EnvironmentConfig(workspace=str(workspace), setup_scripts=[]))


def twin() -> dict[str, Any]:
    from fray_jupyter.iris.proto import job_pb2

    client = connect(cluster="twin")
    out: dict[str, Any] = {"name": client.cluster_name, "kind": client.cluster.kind if client.cluster else "",
                           "dashboard_is_url": client.cluster is not None and client.cluster.dashboard_url == client.url}
    done = client.submit(plan(job("hello", "echo", "hello-from-twin"), user="alice"))
    followed = [entry.data for entry in client.follow(done, timeout=120)]
    out["state"] = job_pb2.JobState.Name(client.wait(done, timeout=60).state)
    # a genuine worker reports a task's end before its last log batch is flushed (Iris's TaskAttempt.run), so
    # a follow that ended may miss it under load, as Iris's own `job run` does; the line is there once shipped
    out["lines"] = followed or until(lambda: [entry.data for entry in client.logs(done).entries],
                                     f"the line of {done}")
    long = client.submit(plan(job("sleeper", "sleep", "300"), user="alice"))
    until(lambda: client.state([long])[long] == job_pb2.JOB_STATE_RUNNING, f"{long} running on the twin")
    out["listed"] = sorted(status.job_id for status in client.list(user="alice").jobs)
    client.terminate(long)
    out["cancelled"] = job_pb2.JobState.Name(client.wait(long, timeout=60).state)
    out.update(session_on(client))
    out["clusters"] = [[entry.name, entry.logged_in] for entry in list_clusters() if entry.name == "twin"]
    url = client.url
    out["resolutions"] = list(RESOLUTIONS)
    client.close()
    try:
        httpx.get(url + "/health", timeout=2)
        out["answers_after_close"] = True
    except httpx.TransportError:
        out["answers_after_close"] = False
    return out


def session_on(client: Any) -> dict[str, Any]:
    """A two-host session on the named cluster, reached through its controller's actor proxy: a
    variable kept across cells on both hosts, a pushed value pulled back from host 1, then stop."""
    from fray_jupyter.session.session import Session

    session = Session.start("nb", ResourceConfig(cpu=0.5, ram="256m", disk="1g"), client=client, replicas=2,
                            user="alice").wait_ready()
    try:
        session.run("import os\nx = 20")
        values = [v.value.data["text/plain"] for v in session.run("x + 1", values_from="all").values]
        session.push({"sent": [1, 2]})
        session.run("back = sent + [x]")
        pulled = session.pull(["back"], host=1)["back"]
        bases = sorted({handle.connection().where.base.split("/proxy/")[0] == client.url
                        for handle in session.handles})
    finally:
        session.stop()
    return {"session_values": values, "session_pulled": pulled, "session_through_proxy": bases,
            "session_ended": job_pb2_name(client.wait(session.job_id, timeout=60).state)}


def job_pb2_name(state: int) -> str:
    from fray_jupyter.iris.proto import job_pb2

    return job_pb2.JobState.Name(state)


CELL = """\
import os
print("has-helper", os.path.isfile(os.path.join(os.environ["IRIS_WORKDIR"], "helper.py")),
      "bundle-id", bool(os.environ.get("IRIS_BUNDLE_ID")))
"""


COORDINATOR = """\
from fray.current_client import current_client
from fray.types import Entrypoint, JobRequest, ResourceConfig
step = current_client().submit(JobRequest(name="step", entrypoint=Entrypoint.from_binary("sh", ["-c", "echo step ran"]),
                                          resources=ResourceConfig(cpu=1, ram="256m", disk="1g", preemptible=False)))
step.wait()
"""


def task_line(client: Any, job_id: str, prefix: str) -> str:
    """The job's stored log line starting with ``prefix``, once it is stored: a genuine Iris worker
    ships a finished task's last rows a second or more after the job ends, so a loaded machine's
    ``--wait`` can show the job's end before them, as Iris's own CLI would."""
    def stored() -> str | None:
        return next((entry.data for entry in client.logs(job_id).entries if entry.data.startswith(prefix)), None)

    return until(stored, f"a line of {job_id} starting {prefix!r}")


def cells() -> dict[str, Any]:
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from iris.rpc import controller_pb2
    from iris.rpc.controller_connect import ControllerServiceClientSync

    project = Path(os.environ["TMPDIR"]) / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'w'\nversion = '0'\n")
    (project / "helper.py").write_text("VALUE = 42\n")
    os.chdir(project)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "fray_jupyter")
    out: dict[str, Any] = {}
    with capture_output() as captured:
        shell.run_cell_magic("fray", "--cluster twin --wait --name bundled", CELL)
        shell.run_cell_magic("fray", "--cluster twin --wait --no-workspace --name bare", CELL)
    out["stdout"] = captured.stdout
    with capture_output() as captured:
        shell.run_cell_magic("fray", "--cluster twin --wait --no-workspace --non-preemptible --name coord", COORDINATOR)
    out["coord_stdout"] = captured.stdout
    out["coord_snapshot"] = "".join(o.data.get("text/html", "") for o in captured.outputs)
    client = shell.find_magic("fray", "line").__self__.client(cluster="twin")
    out["task_lines"] = {name: task_line(client, f"/alice/{name}", "has-helper") for name in ("bundled", "bare")}
    iris = ControllerServiceClientSync(client.url)
    for name in ("bundled", "bare"):
        stored = iris.get_job_status(controller_pb2.Controller.GetJobStatusRequest(job_id=f"/alice/{name}"),
                                     headers=dict(client.cluster.headers()) if client.cluster else None).request
        out[name] = {"bundle_id": stored.bundle_id, "setup_commands": list(stored.entrypoint.setup_commands),
                     "setup_scripts": list(stored.environment.setup_scripts)}
    big = Path(os.environ["TMPDIR"]) / "big"
    big.mkdir()
    (big / "blob.bin").write_bytes(os.urandom(26 * 2**20))
    os.chdir(big)
    try:
        shell.run_cell_magic("fray", "--cluster twin --name big", "x = 1\n")
    except UsageError as error:
        out["over_cap"] = str(error)
    client.close()
    return out


def race() -> dict[str, Any]:
    from iris.cli import connect as iris_connect

    from fray_jupyter.client.clusters import NamedCluster

    starts: list[str] = []
    real_start = iris_connect.LocalCluster.start

    def counting_start(self: Any) -> Any:
        starts.append("twin")
        return real_start(self)

    iris_connect.LocalCluster.start = counting_start
    print("ready", flush=True)
    sys.stdin.readline()
    cluster = NamedCluster("twin")
    print(json.dumps({"url": cluster.url, "starts": len(starts)}), flush=True)
    sys.stdin.readline()
    cluster.close()
    return {"closed": True}


def fake_google_refresh(lifetime: float, expired: bool) -> list[str]:
    """Replace the OAuth refresh rigging's IAP provider makes (see the module docstring)."""
    import google.auth.exceptions
    import google.oauth2.credentials

    minted: list[str] = []

    def refresh(self: Any, request: Any) -> None:
        if expired:
            raise google.auth.exceptions.RefreshError("invalid_grant: Token has been expired or revoked.")
        minted.append(f"idtoken-{len(minted) + 1}")
        self.token = f"access-{len(minted)}"
        self._id_token = minted[-1]
        self.expiry = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + datetime.timedelta(seconds=lifetime)

    google.oauth2.credentials.Credentials.refresh = refresh
    return minted


def start_edge(upstream: str, reject_first: bool,
               reject_proxy: bool = False) -> tuple[ThreadingHTTPServer, list[dict[str, str | None]]]:
    """A recording forwarder standing in for the IAP edge in front of a real Iris controller; with
    ``reject_first`` it refuses the first call as IAP refuses a stale token (with ``reject_proxy``,
    also the first call to the actor proxy)."""
    seen: list[dict[str, str | None]] = []

    class Edge(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            seen.append({"proxy-authorization": self.headers.get("proxy-authorization"),
                         "authorization": self.headers.get("authorization"), "path": self.path})
            proxied = [call for call in seen if str(call["path"]).startswith("/proxy/")]
            if reject_first and (len(seen) == 1 or reject_proxy and proxied == [seen[-1]]):
                status, content, kind = 401, b'{"code":"unauthenticated","message":"IAP: stale token"}', "application/json"
            else:
                reply = httpx.post(upstream + self.path, content=body, headers={
                    "content-type": self.headers["content-type"], "connect-protocol-version": "1"})
                status, content, kind = reply.status_code, reply.content, reply.headers["content-type"]
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Edge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def edge() -> dict[str, Any]:
    minted = fake_google_refresh(float(os.environ.get("LIFETIME", "3600")), bool(os.environ.get("EXPIRED")))
    server, seen = start_edge(os.environ["UPSTREAM"], bool(os.environ.get("REJECT_FIRST")))
    clusters = Path.home() / ".config" / "marin" / "clusters"
    (clusters / "edge.yaml").write_text(iap_manifest("edge", f"http://127.0.0.1:{server.server_address[1]}"))
    out: dict[str, Any] = {}
    with connect(cluster="edge") as client:
        out["url_is_edge"] = client.url == f"http://127.0.0.1:{server.server_address[1]}"
        out["dashboard"] = client.cluster.dashboard_url if client.cluster is not None else ""
        try:
            for _ in range(3):
                client.list(limit=1)
        except FrayError as error:
            out["error"] = [type(error).__name__, str(error)]
    server.shutdown()
    out.update(seen=seen, minted=minted, resolutions=list(RESOLUTIONS))
    return out


def edge_session() -> dict[str, Any]:
    """A one-host session on the IAP-fronted cluster: its calls go through the edge to the
    controller's actor proxy, each with the credentials of that moment."""
    from fray_jupyter.session.session import Session

    minted = fake_google_refresh(float(os.environ.get("LIFETIME", "3600")), False)
    server, seen = start_edge(os.environ["UPSTREAM"], bool(os.environ.get("REJECT_FIRST")), reject_proxy=True)
    clusters = Path.home() / ".config" / "marin" / "clusters"
    (clusters / "edge.yaml").write_text(iap_manifest("edge", f"http://127.0.0.1:{server.server_address[1]}"))
    with connect(cluster="edge") as client:
        session = Session.start("edge-nb", ResourceConfig(cpu=0.5, ram="256m", disk="1g"), client=client,
                                user="alice").wait_ready()
        try:
            session.run("x = 20")
            values = [session.run(cell).values[0].value.data["text/plain"] for cell in ("x + 1", "x + 2")]
        finally:
            session.stop()
    server.shutdown()
    return {"values": values, "minted": minted,
            "proxied": [[call["path"].split("/")[-1], call["proxy-authorization"]] for call in seen
                        if str(call["path"]).startswith("/proxy/")]}


if __name__ == "__main__":
    count_resolutions()
    print(json.dumps({"twin": twin, "cells": cells, "race": race, "edge": edge,
                      "edge_session": edge_session}[sys.argv[1]]()), flush=True)
