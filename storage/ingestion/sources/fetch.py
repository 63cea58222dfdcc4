"""HTTP fetches for synced sources, with the limits a server reading the open web needs: only
http(s), no private or loopback address unless the source allows it (every address a name
resolves to is checked, and the connection is made to a checked address: see addresses.py),
checked at every redirect hop, so a public page cannot bounce the fetch onto the internal
network, a bounded number of redirects, a bounded response size, a timeout, a polite rate, and
conditional requests so an unchanged page costs a 304 and no download.

Why not httpx's own redirect following: each hop's URL is checked (scheme, host) and counted
before it is requested, and its answer read with the same limits.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx
from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from storage.ingestion.sources.addresses import AddressGuard, AddressRefused, GuardedTransport, check_url
from storage.ingestion.sources.addresses import check_address as check_address
from storage.ingestion.sources.addresses import shown as _shown
from storage.ingestion.sources.base import FetchError as FetchError

USER_AGENT = "groundbot-sync/1 (+docs/sources.md)"
GONE = (404, 410)
REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class Fetched:
    url: str  # the URL that answered, after redirects
    status: int  # 200, 304, or 404/410 (gone)
    body: bytes = b""
    content_type: str = ""
    etag: str = ""
    last_modified: str = ""


class Fetcher:
    """GETs with the limits above; thread-safe (a sync fetches with several threads)."""

    def __init__(self, *, allow_private: bool = False, timeout_s: float = 20.0, max_bytes: int = 5_000_000,
                 max_redirects: int = 5, requests_per_second: float = 2.0,
                 headers: dict[str, str] | None = None, guard: AddressGuard | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        """`guard`: the address rule (default: `allow_private`'s, over the system resolver);
        `transport`: the HTTP transport (default: one connecting through the guard)."""
        self.allow_private = allow_private
        self.guard = guard or AddressGuard(allow_private)
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.client = httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False,
                                   transport=transport or GuardedTransport(self.guard),
                                   headers={"User-Agent": USER_AGENT, **(headers or {})})
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self.set_rate(requests_per_second)
        self._lock = threading.Lock()
        self.requests = 0

    def set_rate(self, per_second: float) -> None:
        """At most `per_second` requests a second (below 1: one every 1/per_second seconds)."""
        if per_second >= 1:
            self._rate = RateLimitItemPerSecond(int(per_second), 1)
        else:
            self._rate = RateLimitItemPerSecond(1, max(1, round(1 / max(per_second, 0.01))))

    def _wait_turn(self) -> None:
        while not self._limiter.hit(self._rate, "sync"):
            reset, _ = self._limiter.get_window_stats(self._rate, "sync")
            time.sleep(min(max(reset - time.time(), 0.01), 5.0))

    def get(self, url: str, *, etag: str = "", last_modified: str = "", max_bytes: int | None = None) -> Fetched:
        """The page at `url`: 200 with its body, 304 when the validators still hold, 404/410
        when it is gone; FetchError for everything else (5xx, timeouts, refused addresses,
        too many redirects, too large)."""
        limit = max_bytes or self.max_bytes
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        current = url
        for _hop in range(self.max_redirects + 1):
            check_url(current)  # the address is checked as the connection is made, once per connection
            self._wait_turn()
            with self._lock:
                self.requests += 1
            try:
                with self.client.stream("GET", current, headers=headers) as response:
                    answer = self._answer(response, current, limit)
            except httpx.TimeoutException:
                raise FetchError(f"{_shown(current)}: timed out") from None
            except httpx.HTTPError as exc:
                raise FetchError(f"{_shown(current)}: {type(exc).__name__}") from None
            except AddressRefused as exc:  # refused as the connection was made: the message names the URL
                raise FetchError(f"{_shown(current)}: {exc}") from None
            if isinstance(answer, Fetched):
                return answer
            current = answer
        raise FetchError(f"{_shown(url)}: more than {self.max_redirects} redirects")

    @staticmethod
    def _answer(response: httpx.Response, current: str, limit: int) -> Fetched | str:
        """The page a response carries, or the URL it redirects to."""
        if response.status_code in REDIRECTS:
            location = response.headers.get("location", "")
            if not location:
                raise FetchError(f"{_shown(current)}: a redirect without a Location")
            return urljoin(current, location)
        status = response.status_code
        if status == 304 or status in GONE:
            return Fetched(current, status)
        if status in (401, 403):
            raise FetchError(f"{_shown(current)}: HTTP {status} (not allowed; check the source's token)")
        if status != 200:
            raise FetchError(f"{_shown(current)}: HTTP {status}")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise FetchError(f"{_shown(current)}: {int(declared)} bytes, over the limit of {limit}")
        body = bytearray()
        for piece in response.iter_bytes():
            body.extend(piece)
            if len(body) > limit:
                raise FetchError(f"{_shown(current)}: over the limit of {limit} bytes")
        return Fetched(current, 200, bytes(body), response.headers.get("content-type", ""),
                       response.headers.get("etag", ""), response.headers.get("last-modified", ""))

    def close(self) -> None:
        self.client.close()
