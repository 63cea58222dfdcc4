"""Knowledge scopes: which part of the knowledge base answers which chat (`[[scopes]]`).

Why: one groundbot may serve several teams, and a chat must be answered only from its team's
documents. Each scope names the paths it covers (under kb_paths) and the chats it serves; a
document may belong to several scopes. The index stores every chunk's scopes (filled at ingest
from these paths) and searches filter on them inside LanceDB (storage/index/chunk_search.py). Without
any `[[scopes]]` nothing changes: every chat is answered from the whole knowledge base.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from core.messages import NOT_SET_UP, Answering, ConversationKey, Platform

PLATFORMS = tuple(Platform)
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # goes into LanceDB filters and folder names as is
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")  # an environment variable's name


@dataclass(frozen=True)
class ScopeSettings:
    """One `[[scopes]]` entry of config.toml."""

    name: str
    """The scope's name: 1-64 letters, digits, '.', '_' or '-'."""
    paths: tuple[str, ...] = ()
    """The folders and files (under kb_paths) whose documents answer in this scope."""
    chats: tuple[str, ...] = ()
    """The chats it answers: "slack:C0123HR", "telegram:-100123", "console", "api", "mcp", "cli", or a whole platform."""
    admins: tuple[str, ...] = ()
    """Its own admins, "slack:U0123" or "telegram:42": they may re-ingest this scope and see its stats and reviews."""
    refusal: str = ""
    """This scope's refusal message; "" = the [refusal] messages."""
    api_token_env: str = ""
    """The variable holding this scope's /api/ask token (a caller with it asks in this scope only)."""
    review_token_env: str = ""
    """The variable holding this scope's /review sign-in (its review items only)."""
    answer: str = ""
    """Which group messages its chats answer: "mentions", "questions" or "messages"; "" = the platform's setting."""
    experts: tuple[str, ...] = ()
    """Whom "Ask a person" tags in its chats: "slack:U0123" (a member), "slack:S0123" (a user group), "telegram:42"."""


@dataclass(frozen=True)
class ScopingSettings:
    """[scoping]: what a chat that no scope names gets."""

    default_scope: str = ""
    """The scope of a chat no [[scopes]] entry names; "" = such a chat is told it is not set up."""


class ScopeError(ValueError):
    """`[[scopes]]` does not make sense; the message names the scope and the key (the file is added
    by bot/config_errors.py)."""


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, (str, int)) for v in value):
        raise ScopeError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(str(v) for v in value)


def named_entries(raw: Any, table: str, keys: Sequence[str],
                  error: type[ScopeError]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each entry of a `[[table]]` array as (where it is, its name, the entry), once its keys are
    known ones (an unknown key is named, with the closest known one) and its name is one that
    can go into filters and folder names as is."""
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise error(f"{table} must be written as [[{table}]] tables")
    for i, entry in enumerate(raw, start=1):
        name = entry.get("name")
        where = f"[[{table}]] #{i}" + (f" ({name!r})" if isinstance(name, str) else "")
        for key in entry:
            if key not in keys:
                close = difflib.get_close_matches(key, keys, n=1)
                hint = f"; did you mean {close[0]}?" if close else f" (known keys: {', '.join(sorted(keys))})"
                raise error(f"{where}: unknown key {key!r}{hint}")
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise error(f"{where}: name must be 1-64 letters, digits, '.', '_' or '-', got {name!r}")
        yield where, name, entry


def parse_scopes(raw: Any) -> tuple[ScopeSettings, ...]:
    """The `[[scopes]]` array of a parsed config.toml, each entry checked on its own."""
    out = []
    for where, name, entry in named_entries(raw, "scopes", [f.name for f in fields(ScopeSettings)], ScopeError):
        refusal = entry.get("refusal", "")
        if not isinstance(refusal, str):
            raise ScopeError(f"{where}: refusal must be a string")
        envs = [entry.get(k, "") for k in ("api_token_env", "review_token_env")]
        for key, env in zip(("api_token_env", "review_token_env"), envs, strict=True):
            if not isinstance(env, str) or (env and not ENV_NAME.fullmatch(env)):
                raise ScopeError(f"{where}: {key} must name an environment variable (e.g. 'GROUNDBOT_HR_API_TOKEN'), "
                                 f"got {env!r}")
        paths, chats, admins, experts = (_strings(entry.get(k, []), f"{where} {k}")
                                         for k in ("paths", "chats", "admins", "experts"))
        answer = entry.get("answer", "")
        if answer not in ("", *Answering):
            raise ScopeError(f"{where}: answer must be one of {', '.join(repr(str(a)) for a in Answering)}, got {answer!r}")
        out.append(ScopeSettings(name, paths, chats, admins, refusal, envs[0], envs[1], answer, experts))
    return tuple(out)


def _inside(path: str, roots: Sequence[str]) -> bool:
    p = Path(path).resolve()
    return any(p.is_relative_to(Path(r).resolve()) for r in roots)


def check_scopes(scopes: Sequence[ScopeSettings], default: str, kb_paths: Sequence[str],
                 fed: Collection[str] = ()) -> None:
    """The errors an operator must fix before groundbot starts: a scope named twice or unknown
    (the default), a chat served by two scopes, a path outside kb_paths, a malformed chat or admin.
    A scope `fed` by a synced source ([[sources]]) needs no paths of its own."""
    names = [s.name for s in scopes]
    for name in {n for n in names if names.count(n) > 1}:
        raise ScopeError(f"scope {name!r} is defined twice")
    if default and default not in names:
        raise ScopeError(f"[scoping] default_scope = {default!r} is not a scope; "
                         f"known scopes: {', '.join(names) or '(none)'}")
    served: dict[str, str] = {}
    for s in scopes:
        where = f"scope {s.name!r}"
        if not s.paths and s.name not in fed:
            raise ScopeError(f"{where}: paths is empty; a scope needs the documents it answers from")
        for p in s.paths:
            if not _inside(p, kb_paths):
                raise ScopeError(f"{where}: path {p!r} is outside kb_paths ({', '.join(kb_paths)}); "
                                 "its documents would never be ingested")
        for chat in s.chats:
            if chat.split(":", 1)[0] not in PLATFORMS or chat.endswith(":"):
                raise ScopeError(f"{where}: chat {chat!r} must be one of {', '.join(PLATFORMS)}, "
                                 "or 'platform:chat id' (e.g. 'slack:C0123HR', 'telegram:-100123')")
            if chat in served:
                raise ScopeError(f"{where}: chat {chat!r} is already served by scope {served[chat]!r}; "
                                 "a chat is answered from one scope")
            served[chat] = s.name
        _check_people(s, where)
    _check_token_envs(scopes)


def _check_token_envs(scopes: Sequence[ScopeSettings]) -> None:
    """One variable per token: a token's holder is known by the variable it came from, so two
    scopes (or a scope's API and review sign-in) sharing one would make one caller two."""
    named: dict[str, str] = {}
    for s in scopes:
        for key in ("api_token_env", "review_token_env"):
            env = getattr(s, key)
            if env and env in named:
                raise ScopeError(f"scope {s.name!r}: {key} {env!r} is already the {named[env]}; "
                                 "give each token a variable of its own")
            if env:
                named[env] = f"{key} of scope {s.name!r}"


def _check_people(scope: ScopeSettings, where: str) -> None:
    """Its admins and experts: each 'platform:user id' of a platform that has them."""
    for admin in scope.admins:
        _check_admin(admin, where)
    for expert in scope.experts:
        if expert.split(":", 1)[0] not in (Platform.SLACK, Platform.TELEGRAM) or not expert.split(":", 1)[-1]:
            raise ScopeError(f"{where}: expert {expert!r} must be 'slack:U0123', 'slack:S0123' (a user group) "
                             "or 'telegram:42'")


def _check_admin(admin: str, where: str) -> None:
    """'platform:user id'; a Telegram id is a number (its private chat, where review cards go)."""
    if ":" not in admin or admin.split(":", 1)[0] not in PLATFORMS:
        raise ScopeError(f"{where}: admin {admin!r} must be 'platform:user id' (e.g. 'slack:U0123')")
    if admin.startswith("telegram:") and not admin.split(":", 1)[1].isdigit():
        raise ScopeError(f"{where}: admin {admin!r}: a Telegram user id is a number (e.g. 'telegram:42')")


@dataclass(frozen=True)
class ScopeMap:
    """The scopes of a running groundbot: which scope answers a chat, who administers it, which
    documents belong to it. Built once from the config (bot/config.py checked it)."""

    scopes: Mapping[str, ScopeSettings] = field(default_factory=dict)
    default: str = ""
    reviewed_dir: Path | None = None  # saved FAQ answers: reviewed_dir/<scope>/ belongs to its scope

    @classmethod
    def of(cls, scopes: Sequence[ScopeSettings], default: str, reviewed_dir: Path | None = None) -> ScopeMap:
        return cls({s.name: s for s in scopes}, default, reviewed_dir)

    @property
    def enabled(self) -> bool:
        return bool(self.scopes)

    def names(self) -> list[str]:
        return list(self.scopes)

    def each(self) -> list[str | None]:
        """Every scope's name, or [None] (the whole knowledge base) when there are none."""
        return [*self.scopes] if self.scopes else [None]

    def resolve(self, key: ConversationKey) -> str | None:
        """The scope that answers this conversation: None without scopes (the whole knowledge
        base), NOT_SET_UP for a chat no scope names when there is no default."""
        if not self.scopes:
            return None
        exact, platform = f"{key.platform}:{key.chat_id}", key.platform
        for wanted in (exact, platform):
            for s in self.scopes.values():
                if wanted in s.chats:
                    return s.name
        return self.default or NOT_SET_UP

    def check(self, name: str) -> str:
        """`name` if it is a scope; else a ScopeError that lists the scopes (nothing is answered)."""
        if name not in self.scopes:
            known = ", ".join(self.scopes) or "none are configured"
            raise ScopeError(f"unknown scope {name!r} (scopes: {known})")
        return name

    def is_admin(self, scope: str | None, platform: str, user_id: str) -> bool:
        """Whether the user is one of this scope's own admins (global admins are checked apart)."""
        return scope is not None and scope in self.administered(platform, user_id)

    def administered(self, platform: str, user_id: str) -> list[str]:
        """The scopes this user is one of the own admins of (their part of the review queue)."""
        return [s.name for s in self.scopes.values() if f"{platform}:{user_id}" in s.admins]

    def admins_of(self, scope: str | None, platform: str) -> list[str]:
        """The user ids on `platform` of a scope's own admins (told of the review items asked in it)."""
        own = self.scopes[scope].admins if scope is not None and scope in self.scopes else ()
        return [a.split(":", 1)[1] for a in own if a.startswith(f"{platform}:")]

    def paths(self, scope: str) -> list[Path]:
        """What a re-ingest of the scope reads: its paths and its saved FAQ answers."""
        own = [Path(p) for p in self.scopes[scope].paths]
        return own + ([self.reviewed_dir / scope] if self.reviewed_dir is not None else [])

    def answering(self, key: ConversationKey) -> Answering | None:
        """Which group messages the scope of this chat answers; None: the platform's setting."""
        scope = self.resolve(key)
        own = self.scopes[scope].answer if scope is not None and scope in self.scopes else ""
        return Answering(own) if own else None

    def experts(self, key: ConversationKey) -> tuple[str, ...]:
        """The user (or user group) ids on the chat's platform whom its scope's "Ask a person" tags."""
        scope = self.resolve(key)
        own = self.scopes[scope].experts if scope is not None and scope in self.scopes else ()
        return tuple(e.split(":", 1)[1] for e in own if e.startswith(f"{key.platform}:"))

    def refusals(self) -> dict[str, str]:
        return {s.name: s.refusal for s in self.scopes.values() if s.refusal}

    def scopes_of(self, source: str) -> list[str]:
        """The scopes a document belongs to, by where its file lies (sorted)."""
        path = Path(source).resolve()
        found = set()
        for s in self.scopes.values():
            roots = [*s.paths, *([str(self.reviewed_dir / s.name)] if self.reviewed_dir is not None else [])]
            if any(path.is_relative_to(Path(r).resolve()) for r in roots):
                found.add(s.name)
        return sorted(found)
