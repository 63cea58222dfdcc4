"""The platform front ends built from config: settings values and secrets mapped onto what the
Slack and Telegram adapters take, and the rows they keep state in. Part of the composition root,
shared by the `groundbot slack` and `groundbot telegram` commands and by `groundbot serve`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from adapters.chat_rules import ChatRate
from adapters.slack import SlackAdapter
from adapters.slack.dedupe import OnceKeys
from adapters.telegram import TelegramBot, TelegramOptions, WebhookOptions
from bot.config import Config
from core.messages import Platform
from core.ports import Backend
from storage.records.reply_threads import ReplyThreads


@dataclass(frozen=True)
class SlackSecrets:
    bot_token: str
    app_token: str
    signing_secret: str


def slack_secrets(cfg: Config, *, http: bool) -> SlackSecrets:
    """Tokens come from the environment variables named in config.toml; refuse to start without them."""
    s = cfg.slack
    secrets = SlackSecrets(cfg.secret(s.bot_token_env), cfg.secret(s.app_token_env), cfg.secret(s.signing_secret_env))
    if not secrets.bot_token:
        raise ValueError(f"set the environment variable {s.bot_token_env} to the bot token (xoxb-...)")
    if http and not secrets.signing_secret:
        raise ValueError(f"HTTP mode checks request signatures: set the environment variable {s.signing_secret_env}")
    if not http and not secrets.app_token:
        raise ValueError(f"Socket Mode needs an app-level token: set the environment variable {s.app_token_env} "
                         "(xapp-..., scope connections:write), or run with --http")
    return secrets


class SlackThreads:
    """Who groundbot answered in which Slack channel thread, as reply-thread rows
    (`slack:<channel>:<thread>:<user>`), so a follow-up without a mention reaches any worker,
    and a restart forgets nothing (adapters/slack/threads.py)."""

    def __init__(self, threads: ReplyThreads) -> None:
        self.threads = threads

    @staticmethod
    def key(channel: str, thread: str, user: str) -> str:
        return f"slack:{channel}:{thread}:{user}"

    def remember(self, channel: str, thread: str, user: str) -> None:
        self.threads.remember(self.key(channel, thread, user), thread)

    def answered(self, channel: str, thread: str, user: str) -> bool:
        return self.threads.thread_of(self.key(channel, thread, user)) is not None


def build_adapter(cfg: Config, backend: Backend, secrets: SlackSecrets, threads: ReplyThreads, *,
                  once: OnceKeys | None = None, chat_rate: ChatRate | None = None) -> SlackAdapter:
    """The adapter with this config's Web API base URL and refusal message (calls auth.test);
    with `[slack] thread_follow_ups`, thread replies without a mention kept in `threads`' rows.
    `once` and `chat_rate`: what `groundbot serve` keeps in rows every worker shares (in this
    process's memory without them)."""
    return SlackAdapter(backend, bot_token=secrets.bot_token, signing_secret=secrets.signing_secret,
                        api_base_url=cfg.slack.api_base_url, refusal_messages=cfg.core.refusal.messages,
                        admin_channel=cfg.slack.admin_channel, once=once, chat_rate=chat_rate,
                        threads=SlackThreads(threads) if cfg.slack.thread_follow_ups else None)


# what Telegram accepts as a webhook secret token
_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


def telegram_options(cfg: Config) -> TelegramOptions:
    """Map config.toml and the token from the environment onto the adapter's settings."""
    t = cfg.telegram
    token = cfg.secret(t.token_env)
    if not token:
        raise ValueError(f"set the environment variable {t.token_env} to the bot token from @BotFather")
    admins = tuple(int(a) for a in cfg.admins.get(Platform.TELEGRAM, ()) if str(a).lstrip("-").isdigit())
    return TelegramOptions(token=token, base_url=t.base_url, max_message_chars=t.max_message_chars,
                           rate_limit_per_minute=t.rate_limit_per_minute, refusal_messages=cfg.core.refusal.messages, admin_ids=admins)


def webhook_options(cfg: Config, *, port: int | None = None, listen: str | None = None) -> WebhookOptions:
    """Webhook mode needs a public URL and a secret token; refuse to start without either."""
    t = cfg.telegram
    secret = cfg.secret(t.webhook_secret_env)
    if not secret:
        raise ValueError(f"webhook mode needs a secret token: set the environment variable {t.webhook_secret_env}")
    if not _SECRET_RE.match(secret):
        raise ValueError(f"{t.webhook_secret_env} may only hold 1-256 characters A-Z, a-z, 0-9, _ and -")
    if not t.webhook_url:
        raise ValueError("webhook mode needs telegram.webhook_url in config.toml (the public https URL)")
    return WebhookOptions(url=t.webhook_url, secret_token=secret, listen=listen or t.webhook_listen,
                          port=t.webhook_port if port is None else port)


def build_bot(cfg: Config, backend: Backend, ready: Callable[[str], None] | None = None) -> TelegramBot:
    """The bot with this config's settings; `ready(username)` once `run` has connected."""
    return TelegramBot(backend, telegram_options(cfg), ready=ready)
