"""Who is on the other end of a loopback TCP connection: the OS user owning the client's socket.

Why: Marin's own tools (``FrayIrisClient(controller_address=url)``, ``IrisClient.remote``) send
no token to a loopback controller, as a real Iris trusts loopback callers. The embedded
controller cannot trust 127.0.0.1 as a whole, because every local user shares it; it trusts
the callers that could read its token anyway: processes of its own OS user (the runtime file
holding the token is that user's, mode 0600). So a call without a token is accepted when the
client's socket belongs to the controller's effective uid (see ``rpc.Authenticator``).

How (Linux): ``SO_PEERCRED`` answers only for Unix-domain sockets, never for TCP, so the owner is
read from the kernel's socket table for this network namespace, ``/proc/net/tcp`` (IPv4) and
``/proc/net/tcp6`` (IPv6, including v4-mapped addresses). Both ends of a loopback connection
are in that table; the client's end is the row whose *local* address is the peer address we
see and whose *remote* port is our port, and its ``uid`` column is the owner of the socket (the
user that created it). Rows in TIME_WAIT carry no owner and are ignored. The table is read
afresh for every tokenless call (a connection cannot be cached by address: a closed
connection's port may be reused at once by another user's process); it is small on a
workstation (well under a millisecond to scan). Elsewhere (no ``/proc/net/tcp``) the owner is
unknown and every call needs the token.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Final

TABLES: Final[tuple[Path, ...]] = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
_TIME_WAIT: Final[str] = "06"
_LISTEN: Final[str] = "0A"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1, or v4-mapped 127.x)."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _encodings(host: str) -> list[str]:
    """``host`` as the kernel prints it in /proc/net/tcp{,6}: each 32-bit word of the address in
    host byte order, upper-case hex. A v4 address is also written as its v4-mapped v6 form, and
    a v4-mapped v6 address also as plain v4, since either end may have used either family."""
    address = ipaddress.ip_address(host.strip("[]"))
    forms: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [address]
    if isinstance(address, ipaddress.IPv4Address):
        forms.append(ipaddress.IPv6Address(f"::ffff:{address}"))
    elif address.ipv4_mapped is not None:
        forms.append(address.ipv4_mapped)
    encoded = []
    for form in forms:
        packed = form.packed
        words = struct.unpack(f"={len(packed) // 4}I", packed)
        encoded.append("".join(f"{word:08X}" for word in words))
    return encoded


def socket_owner(peer: tuple[str, int], local_port: int, tables: tuple[Path, ...] = TABLES) -> int | None:
    """The uid owning the client end of the TCP connection from ``peer`` (host, port) to our
    ``local_port``, or None when it is not found (not Linux, not a TCP peer, already closed)."""
    host, port = peer
    try:
        locals_wanted = {f"{encoded}:{port:04X}" for encoded in _encodings(host)}
    except ValueError:
        return None
    remote_suffix = f":{local_port:04X}"
    for fields in _rows(tables):
        if len(fields) < 8 or fields[1] not in locals_wanted or not fields[2].endswith(remote_suffix):
            continue
        if fields[3] in (_TIME_WAIT, _LISTEN):
            continue
        return int(fields[7])
    return None


def _rows(tables: tuple[Path, ...]) -> Iterator[list[str]]:
    """The fields of every socket row of the readable ``tables`` (their header lines left out)."""
    for table in tables:
        try:
            text = table.read_text()
        except OSError:
            continue
        for line in text.splitlines()[1:]:
            yield line.split()


def parse_grpc_peer(peer: str) -> tuple[str, int] | None:
    """``"ipv4:127.0.0.1:5000"`` / ``"ipv6:[::1]:5000"`` (grpcio's ``context.peer()``) → (host,
    port); None for other kinds (unix sockets, in-process)."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    host, _, port = rest.rpartition(":")
    host = host.strip("[]")
    try:
        socket.inet_pton(socket.AF_INET6 if kind == "ipv6" else socket.AF_INET, host)
        return host, int(port)
    except (OSError, ValueError):
        return None


_WILDCARDS: Final[frozenset[str]] = frozenset({"00000000", "0" * 32})
"""The any-address (``0.0.0.0``, ``::``) as the kernel prints it in /proc/net/tcp{,6}."""


def listens_on_every_interface(port: int, tables: tuple[Path, ...] = TABLES) -> bool:
    """Whether a socket listens on TCP ``port`` at the any-address (``0.0.0.0`` or ``::``), i.e. is
    reachable from every network interface, not only loopback; False where the table is unreadable."""
    suffix = f":{port:04X}"
    return any(len(fields) >= 4 and fields[3] == _LISTEN and fields[1].endswith(suffix)
               and fields[1].rpartition(":")[0] in _WILDCARDS for fields in _rows(tables))
