"""Confluence and Notion sources synced into a real index through the app, against local
stand-ins answering in the APIs' documented shapes: a first sync adds the pages, an unchanged
re-sync reads no page body, an edit updates one page, a deletion removes it for good (never
cited again), a refused token, a broken listing or a refused address changes nothing, and an
answer cites the wiki page's own URL. The tokens never reach a report or a log line."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from bot.app import App
from bot.config import from_toml
from core.messages import ConversationKey, Decision, Incoming
from storage.ingestion.sources.base import SourceSpec
from storage.ingestion.sources.connectors import wiki_connector
from storage.ingestion.sources.sync import SyncReport
from tests.standins.confluence import ConfluenceStandIn
from tests.standins.notion import NotionStandIn, block

CONF_TOKEN = "conf-pat-Zk81qPw3"
NOTION_TOKEN = "ntn_secret_4Hh2Lw9Xa"

EXPENSES = ("<h2>Travel</h2><p>Employees travel by train in second class. A flight is allowed when the train "
            "takes more than six hours, booked through the travel desk at least two weeks ahead.</p>"
            "<h2>Meals</h2><p>The daily <strong>meal allowance</strong> on business trips is 45 euros, paid with the "
            "next salary.</p>")
LEAVE = ("<p>Parents receive sixteen weeks of paid parental leave, taken within the first year after the birth or "
         "adoption. Tell your manager at least eight weeks before the leave starts.</p>")
WIFI = ("<p>The guest wifi network in the office is called Harbor-Guest. Its password changes every Monday and is "
        "posted at the reception desk.</p>")


def _app(make_app: Callable[..., App], source: dict[str, Any], secrets: dict[str, str]) -> App:
    cfg = from_toml({"sources": [{"requests_per_second": 200, "timeout_s": 10, **source}]}, "test config")
    return make_app(config=cfg.with_secrets(secrets), empty=True)


def _sync(app: App) -> SyncReport:
    (report,) = app.syncer.sync()
    return report


def _ask(app: App, question: str, chat: str) -> Decision:
    return app.ask(Incoming(ConversationKey("console", chat), "u1", question))


def _snapshot(app: App, name: str) -> tuple[dict[str, tuple[str, str]], dict[str, Any]]:
    """What a failed sync must leave as it was: the index's documents and the page states."""
    return app.index.existing_docs(), app.syncer.state.pages(name)


def _confluence(standin: ConfluenceStandIn, **extra: Any) -> dict[str, Any]:
    return {"name": "wiki", "kind": "confluence", "url": standin.base, "space": "DOCS",
            "token_env": "WIKI_TOKEN", "allow_private_addresses": True, **extra}


@pytest.mark.slow
def test_a_confluence_space_is_synced_kept_unchanged_updated_and_pruned(make_app: Callable[..., App]) -> None:
    with ConfluenceStandIn(CONF_TOKEN) as wiki:
        expenses = wiki.add("Expense policy", EXPENSES)
        leave = wiki.add("Parental leave", LEAVE)
        wifi = wiki.add("Office wifi", WIFI)
        app = _app(make_app, _confluence(wiki), {"WIKI_TOKEN": CONF_TOKEN})

        first = _sync(app)
        assert first.ok, first.error
        assert sorted(first.summary.added) == sorted(f"wiki:{p}" for p in (expenses, leave, wifi))
        assert len(wiki.body_reads()) == 3

        wiki.requests.clear()
        again = _sync(app)
        assert again.ok and len(again.summary.unchanged) == 3 and not again.summary.added + again.summary.updated
        assert wiki.body_reads() == [], "an unchanged page's body was fetched again"

        d = _ask(app, "What is the daily meal allowance on business trips?", "meals")
        assert not d.refused, d.refusal_reason
        assert "45 euros" in d.answer
        assert d.sources[0].url == wiki.base + wiki.webui(expenses) and d.sources[0].doc_id == f"wiki:{expenses}"

        wiki.edit(leave, LEAVE.replace("sixteen weeks", "twenty weeks"))
        wiki.requests.clear()
        edited = _sync(app)
        assert edited.summary.updated == [f"wiki:{leave}"] and len(edited.summary.unchanged) == 2
        assert wiki.body_reads() == [f"/wiki/rest/api/content/{leave}?expand=body.storage%2Cversion"]
        d = _ask(app, "How many weeks of paid parental leave do parents receive?", "leave")
        assert not d.refused and "twenty weeks" in d.answer, (d.refusal_reason, d.answer)

        wifi_url = wiki.base + wiki.webui(wifi)
        wiki.delete(wifi)
        pruned = _sync(app)
        assert pruned.summary.removed == [f"wiki:{wifi}"] and f"wiki:{wifi}" not in app.index.existing_docs()
        wifi_questions = ["What is the guest wifi network in the office called?", "Where is the wifi password posted?"]
        for i, q in enumerate(wifi_questions):
            d = _ask(app, q, f"wifi-{i}")
            assert all(s.url != wifi_url and s.doc_id != f"wiki:{wifi}" for s in d.sources), d.sources


@pytest.mark.slow
def test_a_refused_token_or_a_broken_confluence_changes_nothing(make_app: Callable[..., App],
                                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with ConfluenceStandIn(CONF_TOKEN) as wiki:
        expenses = wiki.add("Expense policy", EXPENSES)
        wiki.add("Office wifi", WIFI)
        app = _app(make_app, _confluence(wiki), {"WIKI_TOKEN": CONF_TOKEN})
        assert _sync(app).ok
        before = _snapshot(app, "wiki")
        wiki.edit(expenses, EXPENSES.replace("45 euros", "50 euros"))  # a change the failed syncs must not bring

        wiki.token = "rotated-on-the-server"
        refused = _sync(app)
        assert not refused.ok and "401" in refused.error and "space 'DOCS'" in refused.error
        assert _snapshot(app, "wiki") == before

        wiki.token = CONF_TOKEN
        wiki.broken = True
        broken = _sync(app)
        assert not broken.ok and "HTTP 500" in broken.error
        assert _snapshot(app, "wiki") == before
        assert app.syncer.last_syncs(["wiki"])["wiki"]["ok"] is False

        for report in (refused, broken):
            assert CONF_TOKEN not in f"{report.line()} {report.to_dict()}"
        assert CONF_TOKEN not in caplog.text


def test_a_wiki_on_a_private_address_is_refused_unless_allowed(make_app: Callable[..., App]) -> None:
    with ConfluenceStandIn(CONF_TOKEN) as wiki:
        wiki.add("Office wifi", WIFI)
        app = _app(make_app, _confluence(wiki, allow_private_addresses=False), {"WIKI_TOKEN": CONF_TOKEN})
        report = _sync(app)
        assert not report.ok and "private or loopback address" in report.error
        assert "allow_private_addresses = true" in report.error
        assert wiki.requests == [], "the token was sent to a refused address"
        assert app.index.existing_docs() == {} and app.syncer.state.pages("wiki") == {}


@pytest.mark.slow
def test_confluence_cloud_pages_by_id_with_an_account_email(make_app: Callable[..., App]) -> None:
    """Cloud: basic auth with the account's e-mail; pages named by id, one of them gone (404)."""
    with ConfluenceStandIn(CONF_TOKEN, user="admin@example.com") as wiki:
        leave = wiki.add("Parental leave", LEAVE)
        wifi = wiki.add("Office wifi", WIFI)
        source = _confluence(wiki, space="", pages=[leave, wifi, "999999"], user_env="WIKI_USER")
        app = _app(make_app, source, {"WIKI_TOKEN": CONF_TOKEN, "WIKI_USER": "admin@example.com"})
        first = _sync(app)
        assert first.ok and sorted(first.summary.added) == [f"wiki:{leave}", f"wiki:{wifi}"] and not first.failed
        wiki.delete(wifi)
        second = _sync(app)
        assert second.summary.removed == [f"wiki:{wifi}"] and second.summary.unchanged == [f"wiki:{leave}"]

        wrong = _app(make_app, source, {"WIKI_TOKEN": CONF_TOKEN, "WIKI_USER": "someone@example.com"})
        report = _sync(wrong)
        assert not report.ok and "401" in report.error and CONF_TOKEN not in report.error


def _handbook(notion: NotionStandIn) -> tuple[str, dict[str, str]]:
    db = notion.add_database()
    pages = {
        "onboarding": notion.add("Onboarding", [
            block("heading_1", "First week"),
            block("paragraph", "On your first day you meet your onboarding buddy, who shows you the office "
                               "and the tools."),
            block("bulleted_list_item", "Collect your laptop from the IT desk",
                  [block("bulleted_list_item", "with its charger")]),
            block("to_do", "Sign the employment contract", checked=True),
            block("heading_1", "Security"),
            block("callout", "Badges must be worn visibly inside the building at all times.", icon={"emoji": "!"}),
        ], database=db),
        "remote": notion.add("Remote work", [
            block("paragraph", "Employees may work from home up to three days a week, agreed with their team lead."),
            block("quote", "Core hours are from ten to three."),
            block("code", "vpn connect office", language="shell"),
        ], database=db),
        "parking": notion.add("Parking", [
            block("paragraph", "Staff parking is on level minus two of the garage; the gate opens with your badge."),
        ], database=db),
    }
    pages["glossary"] = notion.add("Glossary", [block("paragraph", "A sprint at our company lasts two weeks.")])
    return db, pages


@pytest.mark.slow
def test_notion_pages_and_a_database_are_synced_kept_updated_and_pruned(make_app: Callable[..., App]) -> None:
    with NotionStandIn(NOTION_TOKEN, max_page_size=2) as notion:  # two per answer: queries and blocks page through
        db, pages = _handbook(notion)
        source = {"name": "handbook", "kind": "notion", "url": notion.base, "databases": [db],
                  "pages": [pages["glossary"].replace("-", "")], "token_env": "NOTION_TOKEN",
                  "allow_private_addresses": True}
        app = _app(make_app, source, {"NOTION_TOKEN": NOTION_TOKEN})

        first = _sync(app)
        assert first.ok, first.error
        assert sorted(first.summary.added) == sorted(f"handbook:{p}" for p in pages.values())
        assert notion.block_reads()

        notion.requests.clear()
        again = _sync(app)
        assert again.ok and len(again.summary.unchanged) == 4 and not again.summary.added + again.summary.updated
        assert notion.block_reads() == [], "an unchanged page's blocks were read again"

        d = _ask(app, "How many days a week may employees work from home?", "remote")
        assert not d.refused, d.refusal_reason
        assert d.sources[0].url == notion.url(pages["remote"]) and d.sources[0].doc_id == f"handbook:{pages['remote']}"

        notion.edit(pages["remote"], [block("paragraph", "Employees may work from home up to two days a week, "
                                                        "agreed with their team lead.")])
        edited = _sync(app)
        assert edited.summary.updated == [f"handbook:{pages['remote']}"] and len(edited.summary.unchanged) == 3
        d = _ask(app, "How many days a week may employees work from home?", "remote-2")
        assert not d.refused and "two days" in d.answer, (d.refusal_reason, d.answer)

        parking_url = notion.url(pages["parking"])
        notion.trash(pages["parking"])
        pruned = _sync(app)
        assert pruned.summary.removed == [f"handbook:{pages['parking']}"]
        d = _ask(app, "Where is the staff parking?", "parking")
        assert all(s.url != parking_url for s in d.sources), d.sources


@pytest.mark.slow  # the client retries a 500 twice before it gives up
def test_a_refused_notion_token_or_a_broken_api_changes_nothing(make_app: Callable[..., App],
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with NotionStandIn(NOTION_TOKEN) as notion:
        db, pages = _handbook(notion)
        source = {"name": "handbook", "kind": "notion", "url": notion.base, "databases": [db],
                  "token_env": "NOTION_TOKEN", "allow_private_addresses": True}
        app = _app(make_app, source, {"NOTION_TOKEN": NOTION_TOKEN})
        assert _sync(app).ok
        before = _snapshot(app, "handbook")
        notion.trash(pages["parking"])

        notion.token = "ntn_rotated"
        refused = _sync(app)
        assert not refused.ok and "401" in refused.error and "unauthorized" in refused.error
        assert _snapshot(app, "handbook") == before

        notion.token = NOTION_TOKEN
        notion.broken = True
        broken = _sync(app)
        assert not broken.ok and "HTTP 500" in broken.error
        assert _snapshot(app, "handbook") == before

        for report in (refused, broken):
            assert NOTION_TOKEN not in f"{report.line()} {report.to_dict()}"
        assert NOTION_TOKEN not in caplog.text


def test_page_count_and_page_size_limits_hold_for_both_wikis() -> None:
    """max_pages stops the listing; a page over max_page_bytes is a failed entry, the rest read."""
    limits = {"allow_private_addresses": True, "requests_per_second": 200.0, "token_env": "T"}
    with ConfluenceStandIn(CONF_TOKEN) as wiki:
        for title, body in (("Expense policy", EXPENSES), ("Parental leave", LEAVE), ("Office wifi", WIFI)):
            wiki.add(title, body)
        spec = SourceSpec(name="wiki", kind="confluence", url=wiki.base, space="DOCS", max_pages=2, **limits)
        assert len(wiki_connector(spec, CONF_TOKEN).collect({}).docs) == 2
        out = wiki_connector(replace(spec, max_pages=10, max_page_bytes=len(LEAVE) + 10), CONF_TOKEN).collect({})
        assert [d for d, _ in out.failed] == ["wiki:1001"] and "over the limit" in out.failed[0][1]
        assert sorted(d.doc_id for d in out.docs) == ["wiki:1002", "wiki:1003"]
    with NotionStandIn(NOTION_TOKEN, max_page_size=2) as notion:
        db, pages = _handbook(notion)
        spec = SourceSpec(name="nt", kind="notion", url=notion.base, databases=(db,), max_pages=2, **limits)
        assert len(wiki_connector(spec, NOTION_TOKEN).collect({}).docs) == 2
        out = wiki_connector(replace(spec, max_pages=10, max_page_bytes=200), NOTION_TOKEN).collect({})
        assert [d for d, _ in out.failed] == [f"nt:{pages['onboarding']}"] and "over the limit" in out.failed[0][1]
        assert len(out.docs) == 2


@pytest.mark.parametrize(("entry", "says"), [
    ({"kind": "confluence", "url": "https://wiki.example.com", "token_env": "T"}, "needs space (a space key) or pages"),
    ({"kind": "notion", "url": "https://api.notion.com", "token_env": "T"}, "needs pages or databases"),
    ({"kind": "notion", "url": "api.notion.com", "token_env": "T", "pages": ["p"]}, "must start with http://"),
    ({"kind": "confluence", "url": "https://wiki.example.com", "space": "HR"}, "needs token_env"),
])
def test_a_wiki_source_without_what_it_reads_stops_at_start(entry: dict[str, Any], says: str) -> None:
    from bot.source_settings import SourceError

    with pytest.raises(SourceError, match=re.escape(says)):
        from_toml({"sources": [{"name": "w", **entry}]}, "config.toml")
