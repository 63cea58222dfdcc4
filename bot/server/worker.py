"""What one `groundbot serve` worker serves with, built whole once its App is: the rows the workers
share, the Slack and Telegram front ends hung on the App (each given those rows by its constructor:
nothing is set on one after it is built), the claims of their deliveries, the sync schedule, and
the App readied for its first question. bot/server/http_app.py builds it off the event loop and
routes requests to it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from bot.app import App, settle_heap
from bot.config import Config
from bot.server.deliveries import Inbox
from bot.server.metrics import Metrics
from bot.server.shared import SharedChatRate, SharedOnce, SharedRateLimit, SharedThreads, serve_hooks
from bot.server.sync_schedule import SyncSchedule
from core.messages import Platform

if TYPE_CHECKING:  # the platform libraries load only where their platform is configured
    from adapters.slack import SlackAdapter
    from adapters.telegram import TelegramBot
    from storage.records.access_refusals import AccessLog
    from storage.records.shared_state import SharedState

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class SlackFront:
    """The Slack adapter over the App, and bolt's Starlette endpoint over the adapter's bolt App."""

    adapter: SlackAdapter
    endpoint: Endpoint


@dataclass(frozen=True)
class TelegramFront:
    """The Telegram bot over the App (updates come by webhook), and the secret Telegram sends."""

    bot: TelegramBot
    secret: str


@dataclass(frozen=True)
class Worker:
    """One worker, built: `inbox` claims the platforms' deliveries until they are answered;
    `access_log` keeps refusals of access; a platform not configured has no front."""

    app: App
    state: SharedState
    access_log: AccessLog
    inbox: Inbox
    schedule: SyncSchedule
    slack: SlackFront | None = None
    telegram: TelegramFront | None = None


def build_worker(config: Config, app: App, metrics: Metrics) -> Worker:
    """The shared rows over the App's database, its turn hooks, the front ends, then the App
    readied (suggestions checked, index files opened, the heap settled) and the schedule started."""
    from storage.records.access_refusals import AccessLog
    from storage.records.shared_state import SharedState

    serve = config.serve
    state = SharedState(app.store.engine, lease_s=serve.conversation_lease_s, stale_s=serve.delivery_stale_s,
                        events_keep_s=serve.wrong_credentials_window_s)
    serve_hooks(app.hooks, state.leases, metrics)
    metrics.watch_review_queue(lambda: _or_none(app.store.review_queue_depth))
    slack, telegram = slack_front(config, app, state, metrics), telegram_front(config, app, state)
    inbox = Inbox(state, metrics, telegram=telegram.bot if telegram else None,
                  slack=slack.adapter if slack else None,
                  slack_secret=config.secret(config.slack.signing_secret_env))
    # before the first refusal, not during it (cached: ready_app may have checked already)
    app.check_suggestions()
    app.index.upkeep.warm()  # each table's index files opened before the first question
    settle_heap()  # workers of several are built by build_app, which does not settle it
    schedule = SyncSchedule(app.syncer, serve.sync_check_s)
    schedule.start()
    return Worker(app, state, AccessLog(app.store.engine), inbox, schedule, slack, telegram)


def slack_front(config: Config, app: App, state: SharedState, metrics: Metrics) -> SlackFront | None:
    """The Slack adapter with the shared rows (events handled once, channels' unprompted rates),
    when its bot token and signing secret are set."""
    token, signing = config.secret(config.slack.bot_token_env), config.secret(config.slack.signing_secret_env)
    if not token or not signing:
        return None
    from adapters.slack import events_endpoint
    from bot.platforms import SlackSecrets, build_adapter

    adapter = build_adapter(config, app, SlackSecrets(token, "", signing), state.threads,
                            once=SharedOnce(state.deliveries, metrics, Platform.SLACK),
                            chat_rate=SharedChatRate(state.rates))
    return SlackFront(adapter, events_endpoint(adapter.app))


def telegram_front(config: Config, app: App, state: SharedState) -> TelegramFront | None:
    """The Telegram bot with the shared rows (reply threads, users' and groups' rates), when its
    token and webhook secret are set."""
    secret = config.secret(config.telegram.webhook_secret_env)
    if not config.secret(config.telegram.token_env) or not secret:
        return None
    from adapters.telegram import TelegramBot
    from bot.platforms import telegram_options

    options = telegram_options(config)
    bot = TelegramBot(app, options, threads=SharedThreads(state.threads),
                      rate_limit=SharedRateLimit(state.rates, options.rate_limit_per_minute),
                      chat_rate=SharedChatRate(state.rates))
    return TelegramFront(bot, secret)


def _or_none(fn: Callable[[], int]) -> int | None:
    try:
        return fn()
    except Exception:  # a scrape must not fail because the database is away
        return None
