"""Typed errors of the client: every failure talking to a controller is a ``FrayError``.

Rule: each error prints as ONE line that says what went wrong and names the controller URL (and the
job, when the call was about one), so it reads well in a notebook cell or a log. Both transports
report a status code by its Connect name (``"not_found"``; gRPC's ``NOT_FOUND`` lower-cased is the
same name) and ``error_for`` turns it into the matching class through ``ERROR_CLASSES``.
"""

from __future__ import annotations

from typing import ClassVar, Final

MAX_DETAIL_CHARS: Final[int] = 300


def one_line(text: str) -> str:
    """``text`` with every run of whitespace collapsed to one space, cut to ``MAX_DETAIL_CHARS``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_DETAIL_CHARS else flat[: MAX_DETAIL_CHARS - 1] + "…"


class FrayError(Exception):
    """Base class. ``code`` is the Connect status name, ``detail`` the server's own message,
    ``retryable`` is True only when the same call may succeed if simply sent again (the server said
    ``unavailable``, or a kept-alive connection was dropped mid-call)."""

    template: ClassVar[str] = "{method} failed on {url}: {code}: {detail}"

    def __init__(self, detail: str, *, url: str, method: str = "", code: str = "unknown",
                 job_id: str | None = None, retryable: bool = False) -> None:
        self.detail = one_line(detail) or code
        self.url = url
        self.method = method
        self.code = code
        self.job_id = job_id
        self.retryable = retryable
        super().__init__(self.detail)

    def __str__(self) -> str:
        return self.template.format(method=self.method or "call", url=self.url, code=self.code,
                                    detail=self.detail, job=self.job_id or "?")


class ControllerUnreachable(FrayError):
    """No controller answers at the URL (refused, timed out, dropped) or it said ``unavailable``."""

    template = "cannot reach the Fray controller at {url}: {detail}"


class ControllerStartFailed(ControllerUnreachable):
    """The embedded controller that the client started did not come up (``url`` names its log)."""

    template = "the embedded Fray controller did not start (log: {url}): {detail}"


class AuthenticationFailed(FrayError):
    """The controller refused the bearer token (missing, wrong, or lacking permission)."""

    template = "the controller at {url} refused the token ({code}): {detail}"


class LoginRequired(AuthenticationFailed):
    """A named cluster's credentials cannot produce a token: no ``iris login`` yet, or it expired
    (``url`` is ``cluster NAME``; ``detail`` says what to run)."""

    template = "{detail}"


class ClusterUnavailable(FrayError):
    """A named cluster could not be resolved: Marin's Iris is not installed, no manifest has that
    name, or opening its tunnel / local cluster failed (``url`` is ``cluster NAME``)."""

    template = "{url}: {detail}"


class JobNotFound(FrayError):
    """The controller has no job (or task) by that id."""

    template = "job {job} not found on {url}: {detail}"


class JobAlreadyExists(FrayError):
    """A job by that name exists and the request's ``existing_job_policy`` was ERROR."""

    template = "job {job} already exists on {url}: {detail}"


class InvalidRequest(FrayError):
    """The controller rejected the request as malformed or impossible."""

    template = "the controller at {url} rejected {method} ({code}): {detail}"


class RpcFailed(FrayError):
    """Any other failure: the generic ``template`` with the status name."""


ERROR_CLASSES: Final[dict[str, type[FrayError]]] = {
    "unavailable": ControllerUnreachable,
    "unauthenticated": AuthenticationFailed,
    "permission_denied": AuthenticationFailed,
    "not_found": JobNotFound,
    "already_exists": JobAlreadyExists,
    "invalid_argument": InvalidRequest,
    "failed_precondition": InvalidRequest,
    "out_of_range": InvalidRequest,
}
"""Connect status name -> error class; every name not listed becomes ``RpcFailed``."""


def error_for(code: str, detail: str, *, url: str, method: str) -> FrayError:
    """The error for a status ``code`` answered by the controller at ``url`` to ``method``."""
    cls = ERROR_CLASSES.get(code, RpcFailed)
    return cls(detail, url=url, method=method, code=code, retryable=code == "unavailable")
