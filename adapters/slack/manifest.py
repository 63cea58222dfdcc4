"""The Slack app manifest groundbot needs: its scopes, events, slash commands, and Slack's agent
view with suggested prompts drawn from the knowledge base (`groundbot slack --manifest` prints it
for the running knowledge base; docs/slack-app-manifest.json is it for the bundled one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters.slack.rendering import BUTTON_TEXT_LIMIT, truncate

DESCRIPTION = "Answers only from its knowledge base, cites its sources, and says so when it cannot answer."
AGENT_DESCRIPTION = ("Ask a question about the team's knowledge base: groundbot answers from its documents only, "
                     "cites each source, and tells you when the documents do not answer.")
# what each bot token scope is for (docs/slack.md, "Which Slack scopes and events does groundbot need?")
SCOPES = {
    "app_mentions:read": "mentions in channels",
    "assistant:write": "Slack's agent view and its suggested prompts",
    "im:history": "direct messages",
    "channels:history": "public channels' messages: follow-ups, questions without a mention, a thread's question",
    "groups:history": "private channels' messages, the same",
    "chat:write": "answers, greetings, private notes, and the status while it works",
    "chat:write.public": "re-ingest progress in public channels the bot has not joined",
    "reactions:write": "the eyes reaction where Slack refuses a status, and a quiet refusal's reaction",
    "commands": "the admin slash commands",
    "usergroups:read": "the members of a user group named as experts",
}
BOT_EVENTS = ("app_mention", "message.im", "message.channels", "message.groups", "app_home_opened",
              "assistant_thread_started")
COMMANDS = (
    ("/groundbot-reingest", "Re-ingest the knowledge base (groundbot admins only)", "[path]"),
    ("/groundbot-stats", "Answer and refusal rates, latency and feedback (groundbot admins only)", ""),
    ("/groundbot-review", "Answers waiting for an admin's review (groundbot admins only)", ""),
)


def manifest(prompts: Sequence[str], name: str = "groundbot") -> dict[str, Any]:
    """The manifest, with up to four of `prompts` as the agent view's suggested prompts."""
    return {
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {"name": name, "description": DESCRIPTION, "background_color": "#2f4858"},
        "features": {
            "app_home": {"home_tab_enabled": False, "messages_tab_enabled": True,
                         "messages_tab_read_only_enabled": False},
            "agent_view": {"agent_description": AGENT_DESCRIPTION,
                           "suggested_prompts": [{"title": truncate(p, BUTTON_TEXT_LIMIT), "message": p}
                                                 for p in prompts[:4]]},
            "bot_user": {"display_name": name, "always_online": True},
            "slash_commands": [{"command": c, "description": d, **({"usage_hint": u} if u else {}),
                                "should_escape": False} for c, d, u in COMMANDS],
        },
        "oauth_config": {"scopes": {"bot": list(SCOPES)}},
        "settings": {
            "event_subscriptions": {"bot_events": list(BOT_EVENTS)},
            "interactivity": {"is_enabled": True},
            "org_deploy_enabled": False,
            "socket_mode_enabled": True,
            "token_rotation_enabled": False,
        },
    }
