"""The warm engine's loopback guard: no other local process receives what a client sends it.

PySpark 4.0.1 sends a bearer token over a plain (non-TLS) channel only when the URL's host is
literally ``localhost`` (``ChannelBuilder.toChannel`` in ``pyspark/sql/connect/client/core.py``
tests ``self._host == "localhost"``; any other host, ``127.0.0.1`` included, gets TLS, which
the engine does not speak). So a client of the engine must dial ``localhost``, and gRPC tries
every address that name resolves to: its c-ares resolver answers ``::1`` as well (RFC 6761),
even where ``/etc/hosts`` lists only 127.0.0.1, and tries ``::1`` first. The Spark Connect
server binds one address, 127.0.0.1; a process listening on ``[::1]:<engine port>`` would get
the client's connection, and then its token.

So the engine holds every address ``localhost`` names on its port: the server listens on
127.0.0.1, and :class:`LoopbackGuard` binds the same port on each other address (``::1``, and
any other loopback address the system resolver gives) without listening. The supervisor
holds the guard and hands its sockets to the server's JVM too, so the guard lasts as long as
either process. A bound socket that does not listen refuses a connection at once (the client
goes on to 127.0.0.1, as it did when nothing was there), and no other socket can bind that
address and port: the guard sets neither ``SO_REUSEADDR`` nor ``SO_REUSEPORT``, which Linux
requires of both sockets before two may share one. A client checks the guard before it trusts
an engine (:func:`unguarded_addresses`), so an engine started without one is replaced.

If ``localhost`` resolves to an address that is not loopback, the engine does not start.
"""

import contextlib
import errno
import ipaddress
import socket
from dataclasses import dataclass, field
from typing import Optional

from assetlake_dagster.errors import AssetlakeError

#: The loopback addresses gRPC gives for ``localhost`` whatever the system's resolver says.
LOOPBACK_ADDRESSES = ("127.0.0.1", "::1")
#: A machine without this address family or address: nobody can listen there either.
_ABSENT = (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT)


class LoopbackGuardError(AssetlakeError):
    """``localhost`` names an address the engine cannot hold."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback interface.

    Example:
        >>> is_loopback("localhost"), is_loopback("127.0.0.1"), is_loopback("spark.example.com")
        (True, True, False)
    """
    return host == "localhost" or host.startswith("127.") or host == "::1"


def dial_host(host: str) -> str:
    """The address to connect to a server listening on ``host``: loopback for a wildcard.

    Example:
        >>> dial_host("0.0.0.0"), dial_host("10.0.0.7")
        ('127.0.0.1', '10.0.0.7')
    """
    return "127.0.0.1" if host in ("0.0.0.0", "::") else host


def localhost_addresses() -> list[str]:
    """Every address a client dialling ``localhost`` may reach: the system resolver's answers
    and both loopback addresses, in that order, without repeats.

    Example:
        >>> {"127.0.0.1", "::1"} <= set(localhost_addresses())
        True
    """
    found: list[str] = []
    with contextlib.suppress(OSError):
        for *_, sockaddr in socket.getaddrinfo("localhost", None, type=socket.SOCK_STREAM):
            found.append(str(sockaddr[0]).split("%", 1)[0])
    return list(dict.fromkeys([*found, *LOOPBACK_ADDRESSES]))


def _family(address: str) -> int:
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def _bind(address: str, port: int) -> socket.socket:
    """A socket bound to ``address:port``, not listening, never shared (no reuse options)."""
    sock = socket.socket(_family(address), socket.SOCK_STREAM)
    try:
        if sock.family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((address, port))
    except BaseException:
        sock.close()
        raise
    return sock


@dataclass
class LoopbackGuard:
    """Sockets bound (not listening) to a port on every ``localhost`` address but the server's.

    Attributes:
        port: the engine's port.
        addresses: the addresses held.

    Example:
        >>> with LoopbackGuard.hold(15002, bound="127.0.0.1") as guard:  # doctest: +SKIP
        ...     server = start_connect_server(15002, pass_fds=guard.fds)
    """

    port: int
    addresses: list[str]
    _sockets: list[socket.socket] = field(default_factory=list, repr=False)

    @classmethod
    def hold(cls, port: int, *, bound: str) -> "LoopbackGuard":
        """Hold ``port`` on every ``localhost`` address except ``bound`` (the server's).

        Raises:
            OSError: another socket has the port on one of them (``EADDRINUSE``): choose
                another port.
            LoopbackGuardError: ``localhost`` resolves to an address that is not loopback.
        """
        guard = cls(port=port, addresses=[])
        try:
            for address in localhost_addresses():
                if address == bound:
                    continue
                if not ipaddress.ip_address(address).is_loopback:
                    raise LoopbackGuardError(
                        f"localhost resolves to {address}, which is not a loopback address: a Spark Connect "
                        "client would send the engine's token there. Make localhost name 127.0.0.1 and ::1 "
                        "only (/etc/hosts)."
                    )
                try:
                    guard._sockets.append(_bind(address, port))
                except OSError as exc:
                    if exc.errno in _ABSENT:
                        continue
                    raise
                guard.addresses.append(address)
        except BaseException:
            guard.close()
            raise
        return guard

    @property
    def fds(self) -> tuple[int, ...]:
        """The guard's file descriptors, for a child process to hold them as well."""
        return tuple(sock.fileno() for sock in self._sockets)

    def close(self) -> None:
        """Give the addresses up."""
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()

    def __enter__(self) -> "LoopbackGuard":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def unguarded_addresses(port: int, *, bound: str) -> list[str]:
    """The ``localhost`` addresses other than ``bound`` where another process could receive
    a client's connection to ``port``: free to bind, or accepting connections (a guard
    refuses them). Empty for an engine with its guard.

    Example:
        >>> unguarded_addresses(15002, bound="127.0.0.1")  # doctest: +SKIP
        ['::1']
    """
    unguarded = []
    for address in localhost_addresses():
        if address == bound:
            continue
        try:
            _bind(address, port).close()
        except OSError as exc:
            if exc.errno in _ABSENT:
                continue
            if exc.errno == errno.EADDRINUSE and not _accepts(address, port):
                continue  # held, and refusing: the guard
        unguarded.append(address)
    return unguarded


def _accepts(address: str, port: int, timeout: Optional[float] = 2.0) -> bool:
    with socket.socket(_family(address), socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        return sock.connect_ex((address, port)) == 0
