"""What the wiki connectors (Confluence, Notion) share: the HTTP client their API calls go
through, and the factory bot/services/syncing.py asks for a wiki source's connector.

Why one guarded transport: an API call carries the source's token, so it must never go where
the config did not send it. Every connection passes the address rule of storage/ingestion/
sources/addresses.py (no private or loopback address unless the source allows it, every address
of the name checked and the connection made to a checked one), redirects are not
followed (a token is not carried to another host; a wiki API that redirects is configured at
the wrong URL), answers are cut at `max_page_bytes`, and calls keep the source's polite rate.
Notion's own client (notion-client) takes this httpx client as it is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx

from storage.ingestion.sources.addresses import AddressGuard, AddressRefused, GuardedTransport, check_url
from storage.ingestion.sources.base import SourceFailed, SourceSpec
from storage.ingestion.sources.fetch import USER_AGENT, FetchError, check_address


class _Capped(httpx.SyncByteStream):
    """A response body refused past `limit` bytes, read as it arrives."""

    def __init__(self, stream: httpx.SyncByteStream, limit: int, shown: str) -> None:
        self.stream, self.limit, self.shown = stream, limit, shown

    def __iter__(self) -> Iterator[bytes]:
        size = 0
        for piece in self.stream:
            size += len(piece)
            if size > self.limit:
                raise FetchError(f"{self.shown}: over the limit of {self.limit} bytes")
            yield piece

    def close(self) -> None:
        self.stream.close()


class ApiTransport(httpx.BaseTransport):
    """httpx's transport with the address rule, the size limit and the rate of one source."""

    def __init__(self, spec: SourceSpec, guard: AddressGuard | None = None,
                 inner: httpx.BaseTransport | None = None) -> None:
        """`guard`: the address rule (default: the spec's, over the system resolver); `inner`: the
        HTTP transport under it (default: one connecting through the guard)."""
        self.spec = spec
        self.guard = guard or AddressGuard(spec.allow_private_addresses)
        self.inner = inner or GuardedTransport(self.guard)
        self.interval = 1.0 / max(spec.requests_per_second, 0.01)
        # an answer wraps a page's text in JSON (escaped, with metadata) or lists many pages: the
        # connectors hold each page's own text to max_page_bytes, this bounds any one answer
        self.limit = 2 * spec.max_page_bytes + 1_000_000
        self.requests = 0
        self._next_at = 0.0
        self._lock = threading.Lock()

    def _wait_turn(self) -> None:
        with self._lock:
            now = time.monotonic()
            at = max(now, self._next_at)
            self._next_at = at + self.interval
            self.requests += 1
        if at > now:
            time.sleep(at - now)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        shown = f"{request.url.scheme}://{request.url.netloc.decode('ascii', 'replace')}{request.url.path}"
        check_url(str(request.url))  # the address: checked as the connection is made, by the guard
        request.headers["Accept-Encoding"] = "identity"  # the limit below counts the body's own bytes
        self._wait_turn()
        try:
            response = self.inner.handle_request(request)
        except AddressRefused as exc:
            raise FetchError(f"{shown}: {exc}") from None
        declared = response.headers.get("content-length", "")
        limit = self.limit
        if declared.isdigit() and int(declared) > limit:
            response.close()
            raise FetchError(f"{shown}: {int(declared)} bytes, over the limit of {limit}")
        if not isinstance(response.stream, httpx.SyncByteStream):  # a sync client's stream always is
            raise TypeError(f"{shown}: not a synchronous response stream")
        return httpx.Response(response.status_code, headers=response.headers,
                              stream=_Capped(response.stream, limit, shown), extensions=response.extensions)

    def close(self) -> None:
        self.inner.close()


def api_client(transport: ApiTransport, headers: dict[str, str] | None = None,
               auth: httpx.Auth | None = None) -> httpx.Client:
    """An httpx client for one wiki source's API: the guarded transport, no redirects followed,
    no proxy or netrc settings taken from the environment, the source's timeout."""
    return httpx.Client(transport=transport, follow_redirects=False, trust_env=False,
                        timeout=transport.spec.timeout_s, auth=auth,
                        headers={"User-Agent": USER_AGENT, "Accept": "application/json", **(headers or {})})


def obj(value: Any) -> dict[str, Any]:
    """A JSON object, or {} for anything else (an API's answer is read defensively)."""
    return value if isinstance(value, dict) else {}


def scrub(text: str, *secrets: str) -> str:
    """A message as reports and logs may show it: no secret in it, and not too long."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return " ".join(text.split())[:300]


def check_base(spec: SourceSpec) -> None:
    """The configured API address, checked before the token is sent anywhere."""
    try:
        check_address(spec.url, spec.allow_private_addresses)
    except FetchError as exc:
        raise SourceFailed(str(exc)) from None
