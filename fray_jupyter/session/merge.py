"""The kernel's side of a cell: every host's result merged into what the notebook shows.

Rules (``--group-outputs`` as ipyparallel's ``%%px`` has it):

* ``type`` (the default): every host's stdout, host by host, then every host's stderr, then the
  rich outputs, host by host.
* ``engine``: host by host, each host's stdout, stderr and rich outputs in the order it made them.
* ``order``: like ``type``, but the rich outputs collated: every host's first one, then every
  host's second one, and so on (a cell drawing one figure per step shows the steps side by side).
* In a session of more than one host, every line of text starts with ``[host i]``; when more than
  one host's rich outputs are shown, each run of a host's rich outputs follows a ``[host i]`` line.
  A rich output's metadata names its host (``"host": i``).
* Rich outputs come from host 0 unless ``rich_from`` names another host or ``"all"``; text
  comes from every host. The cell's value comes from host 0 unless ``values_from`` names another
  host or ``"all"``; values come last, host by host.
* Streamed live (``LiveOutputs``), outputs show in the order they arrive, with the same prefixes
  and choice of hosts; the merge then adds only the values and the failure.
* The cell fails when any host raised or was lost; the failure carries each host's traceback,
  hosts whose tracebacks are the same text shown once under all their names, and a lost host as
  ``lost: <reason>``. Outputs made before the failure are still shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from fray_jupyter.session.outputs import STREAMS, CellResult, Display, Output, RemoteError, Stream, StreamName

GroupOutputs = Literal["type", "engine", "order"]
GROUP_OUTPUTS: Final[tuple[GroupOutputs, ...]] = ("type", "engine", "order")
HostChoice = int | Literal["all"]


@dataclass(frozen=True)
class HostLost:
    """A host that gave no result: its process is gone (``reason`` says how)."""

    host: int
    reason: str


HostReply = CellResult | HostLost


@dataclass(frozen=True)
class MergeOptions:
    """How to merge: the grouping, and which hosts' rich outputs and values are shown."""

    group_outputs: GroupOutputs = "type"
    rich_from: HostChoice = 0
    values_from: HostChoice = 0

    def __post_init__(self) -> None:
        if self.group_outputs not in GROUP_OUTPUTS:
            raise ValueError(f"--group-outputs {self.group_outputs!r} is not one of {', '.join(GROUP_OUTPUTS)}")
        for flag, choice in (("rich_from", self.rich_from), ("values_from", self.values_from)):
            if choice != "all" and (not isinstance(choice, int) or isinstance(choice, bool) or choice < 0):
                raise ValueError(f"{flag} {choice!r} is not a host index (0, 1, …) or 'all'")


@dataclass(frozen=True)
class HostValue:
    """One host's value of the cell."""

    host: int
    value: Display


@dataclass(frozen=True)
class CellFailure:
    """Why a cell failed: the hosts that raised (with their errors) and the hosts lost."""

    errors: tuple[tuple[int, RemoteError], ...]
    lost: tuple[HostLost, ...]

    @property
    def ename(self) -> str:
        """The error's name in the notebook: the exception type when every failed host raised the
        same one, ``SessionLost`` when hosts were lost and none raised, ``RemoteErrors`` otherwise."""
        kinds = {error.type for _, error in self.errors}
        if self.lost and not kinds:
            return "SessionLost"
        return kinds.pop() if len(kinds) == 1 and not self.lost else "RemoteErrors"

    @property
    def evalue(self) -> str:
        """One line: each distinct error with the hosts it happened on, and each loss."""
        parts = [f"{_hosts(hosts)}: {summary}" for summary, hosts in _grouped(
            [(host, error.summary) for host, error in self.errors])]
        parts += [f"{_hosts([lost.host])}: lost: {lost.reason}" for lost in self.lost]
        return "; ".join(parts)

    @property
    def traceback(self) -> tuple[str, ...]:
        """The lines shown: a ``[host …]`` line over each distinct traceback, then the losses."""
        lines: list[str] = []
        for text, hosts in _grouped([(host, error.traceback) for host, error in self.errors]):
            lines.append(f"[{_hosts(hosts)}]")
            lines.extend(text.rstrip("\n").splitlines())
        lines.extend(f"[{_hosts([lost.host])}] lost: {lost.reason}" for lost in self.lost)
        return tuple(lines)


@dataclass(frozen=True)
class MergedCell:
    """What the notebook shows for a cell: outputs in order, then values, then the failure if any."""

    outputs: tuple[Output, ...]
    values: tuple[HostValue, ...] = ()
    failure: CellFailure | None = None
    hosts: tuple[int, ...] = field(default=())
    """The hosts that answered or were lost, in order."""


def _hosts(hosts: Sequence[int]) -> str:
    return ("host " if len(hosts) == 1 else "hosts ") + ", ".join(map(str, hosts))


def _grouped(pairs: Sequence[tuple[int, str]]) -> list[tuple[str, list[int]]]:
    """Texts with the hosts that gave each, in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for host, text in pairs:
        groups.setdefault(text, []).append(host)
    return list(groups.items())


class LinePrefixer:
    """Puts ``[host i] `` at the start of every line of a host's stream, across chunks: a chunk
    that ended mid-line continues it without a new prefix (a fresh one per live stream)."""

    def __init__(self, prefixed: bool) -> None:
        self._prefixed = prefixed
        self._at_line_start: dict[tuple[int, StreamName], bool] = {}

    def feed(self, host: int, name: StreamName, text: str) -> str:
        """``text`` from ``host``'s stream ``name``, with the prefixes it needs."""
        if not self._prefixed or not text:
            return text
        key = (host, name)
        start = self._at_line_start.get(key, True)
        prefix = f"[host {host}] "
        lines = text.splitlines(keepends=True)
        out = "".join((prefix if start or index else "") + line for index, line in enumerate(lines))
        self._at_line_start[key] = text.endswith(("\n", "\r"))
        return out


def _chosen(choice: HostChoice, hosts: Sequence[int]) -> list[int]:
    return list(hosts) if choice == "all" else [host for host in hosts if host == choice]


def _coalesce(outputs: Sequence[Output]) -> tuple[Output, ...]:
    merged: list[Output] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if isinstance(output, Stream) and isinstance(last, Stream) and last.name == output.name:
            merged[-1] = Stream(output.name, last.text + output.text)
        elif not isinstance(output, Stream) or output.text:
            merged.append(output)
    return tuple(merged)


def _shown(prefixer: LinePrefixer, host: int, output: Output) -> Output:
    """A host's output as shown: text prefixed, a rich output's metadata naming the host."""
    if isinstance(output, Stream):
        return Stream(output.name, prefixer.feed(host, output.name, output.text))
    return Display(output.data, {**output.metadata, "host": host})


class LiveOutputs:
    """What to show while a cell runs, as each host's outputs arrive (one ``read`` after another):
    every host's text, prefixed; the chosen hosts' rich outputs, each run of one host's after a
    ``[host i]`` line when more than one host's are shown. Grouping needs the whole cell, so a
    streamed cell shows its outputs in the order they arrive, and ``merge(..., streamed=True)``
    adds only the values and the failure."""

    def __init__(self, hosts: Sequence[int], options: MergeOptions = MergeOptions()) -> None:
        self._rich = set(_chosen(options.rich_from, sorted(hosts)))
        self._headed = len(self._rich) > 1
        self._prefixer = LinePrefixer(prefixed=len(hosts) > 1)
        self._last_rich: int | None = None

    def feed(self, host: int, outputs: Sequence[Output]) -> tuple[Output, ...]:
        """The outputs to show now for ``host``'s new ``outputs``."""
        out: list[Output] = []
        for output in outputs:
            if isinstance(output, Stream):
                self._last_rich = None
            elif host not in self._rich:
                continue
            elif self._headed and self._last_rich != host:
                out.append(Stream("stdout", f"[host {host}]\n"))
                self._last_rich = host
            out.append(_shown(self._prefixer, host, output))
        return _coalesce(out)


def merge(replies: Mapping[int, HostReply], options: MergeOptions = MergeOptions(), *,
          streamed: bool = False) -> MergedCell:
    """Merge each host's reply (host index → its result, or how it was lost) as the rules say;
    ``streamed``: the outputs were shown live (``LiveOutputs``), so only values and the failure
    are left to show."""
    hosts = sorted(replies)
    results = {host: reply for host in hosts if isinstance(reply := replies[host], CellResult)}
    rich_hosts = [host for host in _chosen(options.rich_from, hosts) if host in results]
    prefixer = LinePrefixer(prefixed=len(hosts) > 1)

    def shown(host: int, output: Output) -> Output:
        return _shown(prefixer, host, output)

    def headed(host: int, outputs: Sequence[Output]) -> list[Output]:
        """``outputs`` with ``[host i]`` over each run of rich outputs, when more than one host's are shown."""
        out: list[Output] = []
        for index, output in enumerate(outputs):
            starts_run = isinstance(output, Display) and (index == 0 or not isinstance(outputs[index - 1], Display))
            if starts_run and len(rich_hosts) > 1:
                out.append(Stream("stdout", f"[host {host}]\n"))
            out.append(output)
        return out

    out: list[Output] = []
    if options.group_outputs == "engine":
        for host, result in results.items():
            out += headed(host, [shown(host, o) for o in result.outputs if isinstance(o, Stream) or host in rich_hosts])
    else:
        out += [shown(host, o) for name in STREAMS for host, result in results.items()
                for o in result.outputs if isinstance(o, Stream) and o.name == name]
        rich = {host: [shown(host, o) for o in results[host].outputs if isinstance(o, Display)]
                for host in rich_hosts}
        if options.group_outputs == "type":
            for host, displays in rich.items():
                out += headed(host, displays)
        else:
            for index in range(max(map(len, rich.values()), default=0)):
                for host, displays in rich.items():
                    out += headed(host, displays[index:index + 1])
    values = tuple(HostValue(host, value) for host in _chosen(options.values_from, hosts)
                   if host in results and (value := results[host].value) is not None)
    errors = tuple((host, error) for host, result in results.items() if (error := result.error) is not None)
    lost = tuple(reply for reply in (replies[host] for host in hosts) if isinstance(reply, HostLost))
    failure = CellFailure(errors, lost) if errors or lost else None
    return MergedCell(() if streamed else _coalesce(out), values, failure, tuple(hosts))
