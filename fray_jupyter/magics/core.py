"""``FrayMagics``: ``%%fray`` submits the cell as a job; ``%fray <command>`` looks after jobs.

Errors follow IPython's conventions (see ``parsers`` and ``errors``): what the user typed is a
plain one-line ``UsageError``; the controller's and the job's failures raise errors with
``_render_traceback_``. Nothing is printed-and-returned: a failure always fails the cell.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display
from traitlets import TraitError, Unicode, validate

from fray_jupyter.client.discovery import TOKEN_ENV, resolve
from fray_jupyter.client.errors import JobNotFound
from fray_jupyter.iris.user import resolve_user
from fray_jupyter.magics import settings
from fray_jupyter.magics.errors import controller_errors
from fray_jupyter.magics.fitting import check_before_submit
from fray_jupyter.magics.look_inside_flags import INSPECT_COMMANDS
from fray_jupyter.magics.parsers import CELL_PARSER, LINE_PARSER, usage
from fray_jupyter.magics.session_flags import SESSION_COMMANDS
from fray_jupyter.views.words import state_word

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient
    from fray_jupyter.magics.submission import CellPlan
    from fray_jupyter.widgets.status import JobStatusPanel

# Rule: this module imports only what registering the magics needs (the class, its traits and the
# argument parsers): `%load_ext fray_jupyter` must stay cheap (bench/loadext.py; a test checks that
# pydantic, httpx, grpc and fray_jupyter.planning stay unloaded). The client, the planning code, the
# views and the widgets are imported by the magic call that first needs them.

LINE: str = "%fray"
F = TypeVar("F", bound=Callable[..., Any])


def _magic(kind: Callable[[str], object], name: str) -> Callable[[F], F]:
    """IPython's ``cell_magic(name)`` / ``line_magic(name)`` as the decorator it is (IPython types
    it as "a function or a decorator")."""
    return cast(Callable[[F], F], kind(name))


@magics_class
class FrayMagics(Magics):
    """The ``%%fray`` cell magic and the ``%fray`` line magic; settings are its traits."""

    cluster = Unicode(
        "", help="Named Marin cluster to use (resolved by Iris's own code; needs fray-jupyter[marin]). Empty: "
                 "controller_url, else $FRAY_CONTROLLER_URL, else $FRAY_CLUSTER, else $MARIN_CLUSTER, else the "
                 "embedded controller.").tag(config=True)
    controller_url = Unicode(
        "", help="Controller to use (http(s):// Connect or grpc://). Empty: $FRAY_CONTROLLER_URL, else the "
                 "embedded controller (started on first use).").tag(config=True)
    user = Unicode("", help="Submitting user (job ids are /<user>/<name>). Empty: $IRIS_USER, else your "
                            "login.").tag(config=True)
    token_env = Unicode(TOKEN_ENV, help="Environment variable holding the controller's bearer token; "
                                        "without it, the embedded controller's token.").tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell, **kwargs)
        self._clients: dict[tuple[str, str | None], FrayClient] = {}
        self._cluster_clients: dict[str, FrayClient] = {}

    @validate("cluster", "controller_url", "user", "token_env")
    def _check_setting(self, proposal: Any) -> str:
        try:
            return settings.validate(proposal["trait"].name, proposal["value"])
        except ValueError as error:
            raise TraitError(str(error)) from None

    @property
    def namespace(self) -> dict[str, Any]:
        """The notebook's variables (``--resources`` reads them, ``-o`` writes one)."""
        assert self.shell is not None, "FrayMagics needs a shell"
        user_ns: dict[str, Any] = self.shell.user_ns
        return user_ns

    # -- the controller -----------------------------------------------------------------------------
    def client(self, url: str | None = None, cluster: str | None = None) -> FrayClient:
        """A client of the controller the settings choose (``cluster`` or ``url`` overrides them):
        a named cluster's is resolved once per kernel and kept (``settings.cluster``); a URL's is
        kept per URL and token; starts the embedded controller if that is the choice and none runs."""
        from fray_jupyter.client.client import FrayClient

        if cluster is not None:
            try:
                settings.validate("cluster", cluster)
            except ValueError as error:
                raise usage(f"--cluster: {error}") from None
        name = cluster or (None if url else settings.cluster(self))
        if name is not None:
            if name not in self._cluster_clients:
                from fray_jupyter.client.clusters import connect_cluster

                with controller_errors(f"connecting to cluster {name}"):
                    self._cluster_clients[name] = connect_cluster(name)
                atexit.register(self._cluster_clients[name].close)  # its tunnel / local cluster
            return self._cluster_clients[name]
        with controller_errors("looking for the controller"):
            resolved = resolve(url or settings.effective(self, "controller_url"), settings.token(self))
        if resolved not in self._clients:
            self._clients[resolved] = FrayClient(*resolved)
        return self._clients[resolved]

    def _existing_client(self, url: str | None, cluster: str | None = None) -> FrayClient | None:
        """A client of the chosen controller if one is configured or running (never starts one; a
        named cluster's only if this kernel has already resolved it)."""
        from fray_jupyter.client.client import FrayClient
        from fray_jupyter.client.errors import FrayError

        if (name := cluster or (None if url else settings.cluster(self))) is not None:
            return self._cluster_clients.get(name)

        try:
            resolved = resolve(url or settings.effective(self, "controller_url"), settings.token(self), start=False)
        except FrayError:
            return None
        if resolved not in self._clients:
            self._clients[resolved] = FrayClient(*resolved)
        return self._clients[resolved]

    def job_id(self, given: str) -> str:
        """A job id as typed: ``/user/name`` as is, a bare name as one of the configured user's jobs."""
        if given.startswith("/"):
            return given.rstrip("/")
        try:
            return f"/{resolve_user(self.user or None)}/{given}"
        except ValueError as error:
            raise usage(str(error), LINE) from None

    # -- %%fray -------------------------------------------------------------------------------------
    @_magic(cell_magic, "fray")
    def fray_cell(self, line: str, cell: str) -> object:
        from fray_jupyter.client.handle import JobHandle
        from fray_jupyter.client.parity import parity_for
        from fray_jupyter.magics.submission import cell_plan

        args = CELL_PARSER.parse_line(line)
        if args.session is not None:
            from fray_jupyter.magics import session

            return session.cell(args, cell)
        named = args.cluster or (None if args.controller else settings.cluster(self))
        # every controller gets the current directory, as `iris job run` sends it; a real Iris also
        # gets Iris's setup and its revision date
        prepared = cell_plan(args, cell, self.namespace, user=self.user or None,
                             parity=parity_for(named), default_workspace=os.getcwd())
        if args.dry_run:
            self._show_plan(prepared, args.output, args.controller, args.cluster)
            return None
        client = self.client(args.controller, args.cluster)
        plan = prepared.plan
        check_before_submit(plan, client, force=args.force)
        adopted = self._running(client, plan.job_id)
        with controller_errors(f"submitting {plan.job_id}"):
            job_id = client.submit(plan)
        handle = JobHandle(job_id, client)
        if args.output:
            self.namespace[args.output] = handle
        notes = [*plan.warnings, *([prepared.bundle.summary] if prepared.bundle else [])]
        if adopted:
            notes.append(f"{job_id} was already running, so this is that job (Fray's adopt-existing policy); "
                         "pass --name to run another copy")
        for note in notes:
            print(f"note: {note}")
        from fray_jupyter.magics.waiting import panel, wait

        if args.wait:
            wait(handle)
            return None
        return panel(client, job_id)

    fray_cell.__doc__ = CELL_PARSER.format_help()

    def _show_plan(self, prepared: CellPlan, output: str | None, url: str | None, cluster: str | None = None) -> None:
        from html import escape

        from fray_jupyter.magics.fitting import dry_run
        from fray_jupyter.views.preview import render_preview_html
        from fray_jupyter.views.text import render_text

        plan = prepared.plan
        client = None if plan.errors else self._existing_client(url, cluster)
        embedded = not (url or cluster or settings.cluster(self) or settings.effective(self, "controller_url"))
        fit_line, picture = dry_run(plan, client, embedded=embedded)
        sent = f"workspace: {prepared.bundle.summary}" if prepared.bundle else ""
        html = f'<div class="fray-workspace"><code>{escape(sent)}</code></div>' if sent else ""
        display({"text/html": html + render_preview_html(plan, fit=fit_line, budget=picture),  # type: ignore[no-untyped-call]
                 "text/plain": "".join(f"{line}\n" for line in (sent, fit_line, *picture.lines) if line)
                 + render_text(plan)},
                raw=True)
        if output:
            self.namespace[output] = plan

    @staticmethod
    def _running(client: FrayClient, job_id: str) -> bool:
        """Whether a job by this id is running now (so submitting adopts it)."""
        from fray_jupyter.iris.states import is_job_finished

        with controller_errors(f"looking up {job_id}"):
            try:
                states = client.state([job_id])
            except JobNotFound:
                return False
        return not is_job_finished(states[job_id])

    # -- %fray <command> ------------------------------------------------------------------------------
    @_magic(line_magic, "fray")
    def fray_line(self, line: str) -> JobStatusPanel | None:
        if not line.strip():
            raise usage("give a command: jobs, status ID [--request], logs ID [--follow], actors [ID], cancel ID, "
                        "resubmit ID [--name NAME], config [KEY [VALUE]], "
                        "session start|stop|restart|interrupt|status|sync NAME, session pip NAME ARGS…, "
                        "session profile NAME [--cpu|--memory|--threads], "
                        "push NAME VAR…, pull NAME VAR…, "
                        "profile JOB[/I] [--cpu|--memory|--threads], exec JOB/I -- CMD "
                        "(%%fray, with two %, submits a cell)", LINE)
        words = line.split()
        if words[:2] == ["session", "pip"]:  # pip's own flags follow: not parsed as ours
            from fray_jupyter.magics import session

            session.pip_line(self, line.split(None, 2)[2] if len(words) > 2 else "")
            return None
        if words[:2] == ["session", "profile"]:  # its --cpu/--memory say what to capture, not resources
            from fray_jupyter.magics import session_profile

            session_profile.line(self, line.split(None, 2)[2] if len(words) > 2 else "")
            return None
        args = LINE_PARSER.parse_line(line)
        if args.command == "config":
            self._config(args.key, args.value)
            return None
        if args.command in SESSION_COMMANDS:
            from fray_jupyter.magics import session

            session.line(self, args)
            return None
        if args.command in INSPECT_COMMANDS:
            from fray_jupyter.magics import look_inside

            look_inside.line(self, args)
            return None
        from fray_jupyter.magics.submission import check_url

        check_url("--controller", args.controller, f"{LINE} {args.command}")
        result: JobStatusPanel | None = getattr(self, f"_{args.command}")(args)
        return result

    fray_line.__doc__ = LINE_PARSER.format_help()

    def _jobs(self, args: Any) -> None:
        """``%fray jobs``: one page of jobs, listed by the controller (every filter runs there): by
        default yours (the configured user's) and top-level only, newest first; a session's row
        says so, with its slice, hosts ready and idle time (``session.facts``)."""
        from fray_jupyter.client.errors import FrayError
        from fray_jupyter.iris.states import JOB_STATES, MAX_LIST_JOBS_LIMIT, MAX_LIST_JOBS_OFFSET
        from fray_jupyter.session.facts import session_notes
        from fray_jupyter.views.jobs import Listing, jobs_html, jobs_text

        label = f"{LINE} jobs"
        if not 1 <= args.limit <= MAX_LIST_JOBS_LIMIT:
            raise usage(f"--limit must be from 1 to {MAX_LIST_JOBS_LIMIT}, got {args.limit}", label)
        if not 0 <= args.offset <= MAX_LIST_JOBS_OFFSET:
            raise usage(f"--offset must be from 0 to {MAX_LIST_JOBS_OFFSET} (narrow with --state or --name to "
                        f"reach older jobs), got {args.offset}", label)
        state = args.state.lower().removeprefix("job_state_")
        if state and state not in JOB_STATES:
            raise usage(f"--state {args.state!r} is not a job state; the states are {', '.join(JOB_STATES)}", label)
        try:
            user = None if args.everyone else resolve_user(args.user or self.user or None)
        except ValueError as error:
            raise usage(f"--user: {error}" if args.user else str(error), label) from None
        client = self.client(args.controller, args.cluster)
        with controller_errors("listing jobs"):
            page = client.list(user=user, scope="all" if args.with_children else "roots", name_filter=args.name,
                               state=state, offset=args.offset, limit=args.limit)
        listing = Listing(user, args.with_children, args.offset, page.total, page.has_more)
        try:  # a session says so on its row: its hosts' endpoints carry the facts
            endpoints = client.endpoints("" if user is None else f"/{user}/")
        except FrayError:
            endpoints = ()
        notes = session_notes(endpoints, page.jobs)
        display({"text/html": jobs_html(page.jobs, listing, notes=notes),  # type: ignore[no-untyped-call]
                 "text/plain": jobs_text(page.jobs, listing, notes=notes)}, raw=True)

    def _status(self, args: Any) -> JobStatusPanel | None:
        """``%fray status ID``: the live panel; with ``--request``, the request as sent (``views.request``)."""
        from fray_jupyter.magics.waiting import panel

        job_id, client = self.job_id(args.job), self.client(args.controller, args.cluster)
        with controller_errors(f"looking up {job_id}"):
            answer = client.job(job_id)  # fail the cell now for an unknown id, not inside the panel
        if args.request:
            from fray_jupyter.views.request import request_html, request_text

            display({"text/html": request_html(answer.request, open_=True),  # type: ignore[no-untyped-call]
                     "text/plain": "\n".join(request_text(answer.request))}, raw=True)
            return None
        return panel(client, job_id)

    def _logs(self, args: Any) -> None:
        from fray_jupyter.client.logs import log_line

        if args.tail < 0:
            raise usage(f"--tail must not be negative, got {args.tail}", f"{LINE} logs")
        job_id, client = self.job_id(args.job), self.client(args.controller, args.cluster)
        with controller_errors(f"reading the logs of {job_id}"):
            client.status(job_id)
            page = client.logs(job_id, tail=args.tail > 0, max_lines=args.tail, include_children=args.children)
            for entry in page.entries:
                print(log_line(entry, job_id))
            if args.follow:
                for entry in client.follow(job_id, cursor=page.cursor, include_children=args.children):
                    print(log_line(entry, job_id), flush=True)

    def _actors(self, args: Any) -> None:
        """``%fray actors [ID]``: the endpoints registered under the job (its children's too), or
        under every job of yours: name, address, and the task serving it."""
        client = self.client(args.controller, args.cluster)
        prefix = f"{self.job_id(args.job)}/" if args.job else f"/{resolve_user(self.user or None)}/"
        with controller_errors(f"listing the endpoints under {prefix}"):
            endpoints = sorted(client.endpoints(prefix), key=lambda endpoint: endpoint.name)
        if not endpoints:
            print(f"no actor endpoints under {prefix}")
            return
        rows = [("NAME", "ADDRESS", "TASK"), *((e.name, e.address, e.task_id) for e in endpoints)]
        widths = [max(len(row[i]) for row in rows) for i in range(2)]
        for name, address, task in rows:
            print(f"{name:<{widths[0]}}  {address:<{widths[1]}}  {task}")

    def _cancel(self, args: Any) -> None:
        from fray_jupyter.iris.states import is_job_finished, job_state_name

        job_id, client = self.job_id(args.job), self.client(args.controller, args.cluster)
        with controller_errors(f"cancelling {job_id}"):
            before = client.status(job_id)
            if is_job_finished(before.state):
                print(f"{job_id} already finished ({state_word(job_state_name(before.state)).upper()}); nothing to cancel")
                return
            client.terminate(job_id)
        print(f"cancelled {job_id} (was {state_word(job_state_name(before.state)).upper()})")

    def _resubmit(self, args: Any) -> JobStatusPanel:
        """``%fray resubmit ID [--name NAME]``: the job's request sent again under a fresh name
        (``client.resubmit``); prints the new job and shows its panel, as ``%%fray`` does."""
        from fray_jupyter.client.resubmit import resubmit
        from fray_jupyter.magics.waiting import panel

        job_id, client = self.job_id(args.job), self.client(args.controller, args.cluster)
        with controller_errors(f"resubmitting {job_id}"):
            new_id = resubmit(client, job_id, args.name)
        print(f"resubmitted {job_id} as {new_id}")
        return panel(client, new_id)

    def _config(self, key: str | None, value: str | None) -> None:
        keys = settings.setting_keys(self)
        if key is not None and key not in keys:
            raise usage(f"unknown setting {key!r}; the settings are {', '.join(keys)}", f"{LINE} config")
        if value is not None:
            assert key is not None
            try:
                settings.set_setting(self, key, value)
            except ValueError as error:
                raise usage(str(error), f"{LINE} config") from None
        print(settings.render(self, key))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext fray_jupyter``: register ``%%fray`` and ``%fray``."""
    ipython.register_magics(FrayMagics)
