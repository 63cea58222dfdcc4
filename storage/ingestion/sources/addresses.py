"""Which addresses a synced source may connect to, and connections made to those addresses only.

A host is resolved once for each connection, every address the name resolves to is checked
(IPv4 and IPv6, and the IPv4 address an IPv6 one carries: IPv4-mapped, IPv4-compatible, NAT64
and 6to4), and the connection is made to a checked address, never to the name again. A name that
answers a public address to a check and a private one to the connection (DNS rebinding), or a
private one among public ones, reaches nothing it should not. Only the TCP dial is pinned: the
name stays the request's Host header and the TLS server name (SNI, and the name the certificate
is verified against).

How: httpx sends its requests through httpcore, which opens connections through a network
backend (`GuardedBackend`: httpcore's own sync backend, handed the checked address instead of the
name); dulwich fetches Git repositories over HTTP with urllib3, whose connections dial the same
way (`guarded_pool_manager`). Redirects open their connections through the same backend, so
every hop is checked as it is connected.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from storage.ingestion.sources.base import FetchError

Resolve = Callable[[str, int], Sequence[str]]  # (host, port) -> the addresses it resolves to
Reach = Callable[[str, int], tuple[str, int]]  # where a checked (address, port) is dialed

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


class AddressRefused(FetchError):
    """A host that does not resolve, or resolves to an address the source may not connect to."""


def resolve_host(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, in the resolver's order (one lookup)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise AddressRefused(f"cannot resolve {host} ({exc})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _carried(ip: IPAddress) -> Iterator[IPAddress]:
    """The address and every IPv4 address an IPv6 one carries to a host (a private one in any of
    these forms reaches the private host: ::ffff:10.0.0.1 is 10.0.0.1 on a dual-stack socket)."""
    yield ip
    if not isinstance(ip, ipaddress.IPv6Address):
        return
    if ip.ipv4_mapped is not None:
        yield ip.ipv4_mapped
    if ip.sixtofour is not None:
        yield ip.sixtofour
    if ip.teredo is not None:
        yield from ip.teredo
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        yield ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def not_public(address: str) -> str:
    """"" for an address on the public internet; else the (carried) address that is not."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    for candidate in _carried(ip):
        if not candidate.is_global:
            return str(candidate)
    return ""


@dataclass(frozen=True)
class AddressGuard:
    """The address rule of one source: `allowed(host, port)` resolves the host once and returns
    the addresses a connection may be made to (all of them checked), or raises AddressRefused.
    `resolve` and `reach` are the network's (the system resolver, addresses dialed as they are);
    tests put stand-ins there."""

    allow_private: bool = False
    resolve: Resolve = resolve_host
    reach: Reach = field(default=lambda address, port: (address, port))

    def allowed(self, host: str, port: int) -> list[str]:
        addresses = list(self.resolve(host, port))
        if not addresses:
            raise AddressRefused(f"cannot resolve {host} (no address)")
        if not self.allow_private:
            for address in addresses:
                if refused := not_public(address):
                    raise AddressRefused(f"{host} resolves to {refused}, a private or loopback address; "
                                     "set allow_private_addresses = true for this source to allow it")
        return addresses

    def dial(self, host: str, port: int, connect: Callable[[str, int], Any],
             errors: tuple[type[Exception], ...] = (OSError,)) -> Any:
        """`connect(address, port)` to each allowed address of `host` in turn: the first that
        connects, else the last of the connection `errors` raised."""
        error: Exception | None = None
        for address in self.allowed(host, port):
            try:
                return connect(*self.reach(address, port))
            except errors as exc:
                error = exc
        if error is None:  # `allowed` gives at least one address or raises
            raise OSError(f"no address of {host} to connect to")
        raise error


def check_url(url: str) -> tuple[str, int]:
    """The host and port of an http(s) URL; FetchError for any other scheme or no host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise FetchError(f"{shown(url)}: only http and https URLs are fetched")
    if not parts.hostname:
        raise FetchError(f"{shown(url)}: no host in the URL")
    try:
        port = parts.port
    except ValueError:
        raise FetchError(f"{shown(url)}: not a valid port") from None
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def check_address(url: str, allow_private: bool, guard: AddressGuard | None = None) -> list[str]:
    """Refuse a URL that is not http(s), or whose host resolves to an address that is not on the
    public internet, unless the source allows private addresses; the addresses it resolved to.
    (A check alone: what connects afterwards must dial through the guard itself, as
    `guarded_transport` and `guarded_pool_manager` do.)"""
    host, port = check_url(url)
    guard = guard or AddressGuard(allow_private)
    try:
        return guard.allowed(host, port)
    except AddressRefused as exc:
        raise FetchError(f"{shown(url)}: {exc}") from None


def shown(url: str) -> str:
    """The URL without credentials or query (what logs and reports may show)."""
    p = urlsplit(url)
    host = p.hostname or ""
    try:
        port = f":{p.port}" if p.port else ""
    except ValueError:
        port = ""
    return f"{p.scheme}://{host}{port}{p.path}"[:300]


# -- httpx (web and wiki sources) -----------------------------------------------------------
class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's sync network backend, dialing the guard's checked addresses of a host instead of
    its name; TLS is then started by httpcore with the name as the server name."""

    def __init__(self, guard: AddressGuard) -> None:
        self.guard = guard
        self.inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        def connect(address: str, to_port: int) -> httpcore.NetworkStream:
            return self.inner.connect_tcp(address, to_port, timeout, local_address, socket_options)

        stream: httpcore.NetworkStream = self.guard.dial(host, port, connect,
                                                         (httpcore.ConnectError, httpcore.ConnectTimeout))
        return stream

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        raise AddressRefused("unix sockets are not fetched")

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class GuardedTransport(httpx.HTTPTransport):
    """httpx's HTTP transport over a connection pool that connects through `GuardedBackend`.

    httpx's transport takes no network backend of its own, so its pool is built again here with
    the arguments httpx would give it (no proxy: sources never go through one) plus the backend:
    the request and response handling, and the mapping of errors, stay httpx's."""

    def __init__(self, guard: AddressGuard, *, verify: ssl.SSLContext | bool = True, retries: int = 0) -> None:
        super().__init__(verify=verify, trust_env=False, retries=retries)
        limits = httpx.Limits()
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            max_connections=limits.max_connections, max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry, retries=retries, network_backend=GuardedBackend(guard))


# -- urllib3 (Git sources over HTTP, through dulwich) ----------------------------------------
def guarded_pool_manager(guard: AddressGuard, **kwargs: Any) -> Any:
    """A urllib3 PoolManager whose connections dial the guard's checked addresses of their host
    (the name stays the Host header, SNI and certificate name); no proxy from the environment."""
    import urllib3
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

    def pinned(base: type[HTTPConnection]) -> type[HTTPConnection]:
        class Pinned(base):  # type: ignore[valid-type,misc]
            def _new_conn(self) -> socket.socket:  # urllib3 dials `_dns_host`; the name stays `host`
                conn: HTTPConnection = self
                name, named_port = conn._dns_host, conn.port

                def connect(address: str, port: int) -> socket.socket:
                    conn._dns_host, conn.port = address, port
                    try:
                        return super(Pinned, self)._new_conn()  # type: ignore[no-any-return]
                    finally:
                        conn._dns_host, conn.port = name, named_port

                return guard.dial(name, int(named_port or conn.default_port), connect,  # type: ignore[no-any-return]
                                  (NewConnectionError, ConnectTimeoutError))

        return Pinned

    class PinnedHTTP(HTTPConnectionPool):
        ConnectionCls = pinned(HTTPConnection)

    class PinnedHTTPS(HTTPSConnectionPool):
        ConnectionCls = pinned(HTTPSConnection)  # type: ignore[assignment]

    manager = urllib3.PoolManager(**kwargs)
    manager.pool_classes_by_scheme = {"http": PinnedHTTP, "https": PinnedHTTPS}
    return manager
