"""The Slack app manifest in docs/ is the one groundbot builds (adapters/slack/manifest.py) and asks
for what the adapter uses: every event it listens to, a scope for every Web API method it calls,
and the agent view's suggested prompts within Slack's limits."""

from __future__ import annotations

import json
import re
from pathlib import Path

from adapters.slack.handlers import EVENTS
from adapters.slack.manifest import BOT_EVENTS, SCOPES, manifest

ROOT = Path(__file__).resolve().parents[2]
DOC = json.loads((ROOT / "docs" / "slack-app-manifest.json").read_text(encoding="utf-8"))
# the scope each Web API method groundbot calls needs (Slack's method reference)
METHOD_SCOPES = {
    "chat_postMessage": {"chat:write"}, "chat_postEphemeral": {"chat:write"}, "chat_update": {"chat:write"},
    "reactions_add": {"reactions:write"}, "reactions_remove": {"reactions:write"},
    "assistant_threads_setStatus": {"assistant:write", "chat:write"},
    "assistant_threads_setSuggestedPrompts": {"assistant:write"},
    "conversations_replies": {"channels:history", "groups:history", "im:history"},
    "usergroups_users_list": {"usergroups:read"},
    "views_open": set(),  # needs a trigger id only
    "auth_test": set(),  # any token
}


def test_the_documented_manifest_is_the_built_one() -> None:
    prompts = [p["message"] for p in DOC["features"]["agent_view"]["suggested_prompts"]]
    assert manifest(prompts) == DOC
    assert 1 <= len(prompts) <= 4 and all(p.endswith("?") for p in prompts)


def test_every_event_listened_to_is_subscribed() -> None:
    subscribed = set(DOC["settings"]["event_subscriptions"]["bot_events"])
    wanted = {f"message.{kind}" for kind in ("im", "channels", "groups")} if "message" in EVENTS else set()
    wanted |= {e for e in EVENTS if e != "message"}
    assert wanted <= subscribed == set(BOT_EVENTS)


def test_every_web_api_method_called_has_its_scope() -> None:
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "adapters" / "slack").glob("*.py"))
    called = set(re.findall(r"client\.([a-z]+_[A-Za-z_]+)\(", source)) | set(re.findall(r'"(reactions_(?:add|remove))"', source))
    assert called and called <= set(METHOD_SCOPES), f"a method without a known scope: {called - set(METHOD_SCOPES)}"
    granted = set(DOC["oauth_config"]["scopes"]["bot"])
    assert granted == set(SCOPES)
    for method in called:
        assert not METHOD_SCOPES[method] or METHOD_SCOPES[method] & granted, method
    assert DOC["features"]["app_home"]["messages_tab_enabled"] and DOC["features"]["agent_view"]["agent_description"]
