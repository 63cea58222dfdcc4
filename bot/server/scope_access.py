"""Who may ask `POST /api/ask` in which knowledge scope, and who may review which scope's items on
the `/review` page: the HTTP side of the boundary that chats draw with `[[scopes]] chats`.

A token's holder is known by the variable the token came from: `[serve] api_token_env` (and
`review_token_env`) open every scope; a scope's own `api_token_env` (`review_token_env`) opens
that scope alone. With scopes configured the API needs a token unless `[serve] open_api_scope`
names the one scope it answers without one: a configuration that would leave every scope open
refuses to start. Tokens are compared in constant time (digests of equal length, every token
compared) and never logged; a refusal names the holder ("scope:hr", "global", "open" or "none").
API conversations live under a key derived from the holder and the scope, so another holder's
conversation id starts a fresh conversation instead of continuing someone else's.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.config import Config
from bot.scopes import NAME, ScopeError, ScopeMap
from bot.server.metrics import Metrics
from core.messages import ConversationKey, Platform

if TYPE_CHECKING:
    from storage.records.access_refusals import AccessLog

log = logging.getLogger("groundbot.access")

GLOBAL, OPEN, NOBODY = "global", "open", "none"
UNKNOWN_SCOPE = "(unknown)"  # the label of a scope name that is not configured (bounded cardinality)


class AccessConfigError(ValueError):
    """The tokens as configured would leave scopes open, or make two holders one."""


@dataclass(frozen=True)
class Caller:
    """A request's holder: `scope` is the one scope it may ask in (None: every scope)."""

    who: str
    scope: str | None
    secret: bytes = b""  # keys its conversations' namespace (its token; empty for the open API)


@dataclass(frozen=True)
class Refused:
    """An access refusal as answered (`message`) and as recorded (who, scope label, reason)."""

    status: int
    reason: str
    message: str
    who: str = NOBODY
    scope: str = ""
    retry_after: int = 0  # a 429's Retry-After, in seconds

    def headers(self, bearer: bool = True) -> dict[str, str]:
        """The headers the refusal is answered with: how to authenticate, or when to come back."""
        if self.status == 429:
            return {"Retry-After": str(max(1, self.retry_after))}
        return {"WWW-Authenticate": "Bearer"} if self.status == 401 and bearer else {}


def matching(given: str, tokens: Mapping[str, str]) -> str | None:
    """The holder whose token `given` is, comparing it with every token in constant time (digests
    of one length, no early exit), so neither timing nor length tells which token came close."""
    digest = hashlib.sha256(given.encode("utf-8", "surrogatepass")).digest()
    found = None
    for holder, token in tokens.items():
        if hmac.compare_digest(digest, hashlib.sha256(token.encode()).digest()):
            found = holder
    return found


def distinct(tokens: Mapping[str, str], what: str) -> None:
    """Two holders with one token would be one caller: refuse to start, naming them (not the token)."""
    seen: dict[str, str] = {}
    for holder, token in tokens.items():
        if token in seen:
            raise AccessConfigError(f"{what}: {seen[token]} and {holder} have the same token; give each its own")
        seen[token] = holder


class ApiAccess:
    """The callers of /api/ask: the token each is known by, and the open API's caller if any."""

    def __init__(self, tokens: Mapping[str, str], callers: Mapping[str, Caller], scopes: ScopeMap,
                 open_caller: Caller | None) -> None:
        self.tokens = dict(tokens)  # holder -> token
        self.callers = dict(callers)  # holder -> Caller
        self.scopes = scopes
        self.open_caller = open_caller

    @classmethod
    def of(cls, config: Config) -> ApiAccess:
        """From the config and the environment it read; AccessConfigError when scopes would be open."""
        scopes, serve = config.scope_map(), config.serve
        tokens, callers = {}, {}
        if token := config.secret(serve.api_token_env):
            tokens[GLOBAL], callers[GLOBAL] = token, Caller(GLOBAL, None, token.encode())
        for s in config.scopes:
            if s.api_token_env and (token := config.secret(s.api_token_env)):
                holder = f"scope:{s.name}"
                tokens[holder], callers[holder] = token, Caller(holder, s.name, token.encode())
            elif s.api_token_env:
                log.warning("scope %s: %s is not set; /api/ask asks in this scope with the global token only",
                            s.name, s.api_token_env)
        distinct(tokens, "/api/ask")
        open_scope = serve.open_api_scope
        if open_scope and open_scope not in scopes.scopes:
            raise AccessConfigError(f"[serve] open_api_scope = {open_scope!r} is not a scope")
        open_caller = Caller(OPEN, open_scope) if open_scope else None
        if scopes.enabled and not tokens and open_caller is None:
            raise AccessConfigError(
                f"knowledge scopes are configured but /api/ask has no token, so it would answer from every scope: "
                f"set {serve.api_token_env} (every scope) or a scope's api_token_env variable, or set "
                "[serve] open_api_scope to the one scope it may answer without a token")
        if not scopes.enabled and not tokens:
            open_caller = Caller(OPEN, None)  # one knowledge base and no token: open, as documented
        return cls(tokens, callers, scopes, open_caller)

    def caller(self, authorization: str, query: str, path: str = "/api/ask") -> Caller | Refused:
        """The holder of the request's bearer token at `path` (/api/ask or /mcp), or why it is refused."""
        if query:  # URLs end up in proxies' and browsers' logs: a token there is a leaked token
            return Refused(400, "query_string", f"{path} takes no query parameters; send the token in the "
                                                "Authorization header, never in the URL")
        if self.open_caller is not None and (not authorization or not self.tokens):
            return self.open_caller  # no token sent, or none configured that one could be checked against
        if not authorization:
            return Refused(401, "no_token", "missing bearer token")
        scheme, _, given = authorization.partition(" ")
        holder = matching(given.strip(), self.tokens) if scheme.lower() == "bearer" else None
        if holder is None:
            return Refused(401, "wrong_token", "missing or wrong bearer token")
        return self.callers[holder]

    def scope_for(self, caller: Caller, asked: str | None, conversation: str) -> str | None | Refused:
        """The scope the caller's question is answered from: its own, or the one it names when
        it may; an unknown scope is listed only to a caller that may read every scope."""
        if asked is not None and not NAME.fullmatch(asked):  # never echoed: it may be 10 kB of anything
            return Refused(400, "bad_scope", "'scope' must be a scope name: 1-64 letters, digits, '.', '_' or '-'",
                           caller.who, UNKNOWN_SCOPE)
        if caller.scope is not None:
            if asked is None or asked == caller.scope:
                return caller.scope
            label = asked if asked in self.scopes.scopes else UNKNOWN_SCOPE
            return Refused(403, "scope_not_allowed", f"this token asks in scope {caller.scope!r} only",
                           caller.who, label)
        if asked is None:
            return self.scopes.resolve(ConversationKey(Platform.API, conversation)) if self.scopes.enabled else None
        try:
            return self.scopes.check(asked)
        except ScopeError as exc:
            return Refused(400, "unknown_scope", str(exc), caller.who, UNKNOWN_SCOPE)

    def own_scope(self, caller: Caller, platform: str) -> str | None:
        """The scope a caller that names none is answered from: its token's, else the one that
        serves `platform` as a chat (`[[scopes]] chats`, else `[scoping] default_scope`, else
        NOT_SET_UP); None without scopes (the whole knowledge base)."""
        if caller.scope is not None:
            return caller.scope
        return self.scopes.resolve(ConversationKey(platform, "")) if self.scopes.enabled else None

    @staticmethod
    def key(caller: Caller, scope: str | None, conversation: str, platform: str = Platform.API) -> ConversationKey:
        """The conversation's key: its id under a namespace keyed by the holder's token, so the
        same id from another holder, or in another scope, is another conversation."""
        label = f"groundbot-api-conversation\0{caller.who}\0{scope or ''}".encode()
        namespace = hmac.new(caller.secret or b"groundbot-open-api", label, hashlib.sha256).hexdigest()[:16]
        return ConversationKey(platform, conversation, namespace)


class MetricsAccess:
    """Who may read /metrics (its labels name scopes and sources): the holder of the token in
    `[serve] metrics_token_env`'s variable when it is set; else, when /api/ask has a token (the
    operator closed the API), loopback requests only, and not one a proxy forwarded; else anyone."""

    def __init__(self, token: str, loopback_only: bool) -> None:
        self.token = token
        self.loopback_only = loopback_only

    @classmethod
    def of(cls, config: Config, api: ApiAccess, review: Mapping[str, str]) -> MetricsAccess:
        token = config.secret(config.serve.metrics_token_env)
        if token and (token in api.tokens.values() or token in review.values()):
            raise AccessConfigError(f"{config.serve.metrics_token_env} holds an /api/ask or /review token; "
                                    "give /metrics a token of its own")
        return cls(token, loopback_only=bool(api.tokens))

    def check(self, authorization: str, client: str, forwarded: bool) -> Refused | None:
        """None when the request may read /metrics, else its refusal."""
        if self.token:
            scheme, _, given = authorization.partition(" ")
            if not authorization:
                return Refused(401, "no_token", "missing bearer token")
            if scheme.lower() != "bearer" or matching(given.strip(), {"metrics": self.token}) is None:
                return Refused(401, "wrong_token", "missing or wrong bearer token")
            return None
        if self.loopback_only and (forwarded or not _loopback(client)):
            return Refused(403, "not_loopback", "/metrics answers loopback requests only; give it a token "
                                                "([serve] metrics_token_env) to scrape it from elsewhere")
        return None


def _loopback(host: str) -> bool:
    import ipaddress

    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def review_tokens(config: Config) -> dict[str, str]:
    """The /review sign-ins: "*" (every scope) for `[serve] review_token_env`, else a scope's name."""
    tokens = {}
    if token := config.secret(config.serve.review_token_env):
        tokens["*"] = token
    for s in config.scopes:
        if s.review_token_env and (token := config.secret(s.review_token_env)):
            tokens[s.name] = token
    distinct(tokens, "/review")
    return tokens


class Refusals:
    """Each refusal counted in /metrics, logged as one structured line and kept as a row in the
    records database once the worker's App is built (storage/records/access_refusals.py)."""

    def __init__(self, metrics: Metrics, access_log: Callable[[], AccessLog | None]) -> None:
        self.metrics = metrics
        self.access_log = access_log  # the AccessLog once built

    def record(self, route: str, refused: Refused) -> None:
        """A 429 is counted and kept as a row but not logged: the lock it answers was logged when
        it was taken, once (bot/server/attempts.py)."""
        self.metrics.access_refused.labels(route, refused.who, refused.scope, refused.reason).inc()
        if refused.status != 429:
                log.warning("access refused: %s %s %s (who %s, scope %s)", route, refused.status, refused.reason,
                        refused.who, refused.scope or "-",
                        extra={"route": route, "who": refused.who, "scope": refused.scope, "reason": refused.reason,
                               "status": refused.status})
        access_log = self.access_log()
        if access_log is None:
            return
        try:
            access_log.record(route, refused.who, refused.scope, refused.reason, refused.status)
        except Exception as exc:  # the refusal stands; the database being away must not turn it into a 500
            log.warning("access refusal not recorded: %s", type(exc).__name__)
