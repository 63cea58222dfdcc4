"""`[[scopes]]` in config.toml: read, checked with clear errors, and resolved per chat; and the
pipeline's side of a scope (the search is told it, a chat not set up is refused unread)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config import Config, load_config
from bot.scopes import ScopeMap
from core import reasons
from core.messages import NOT_SET_UP, ConversationKey, Incoming
from core.ports import Models
from core.settings import CoreSettings
from core.turn.pipeline import Pipeline
from tests.unit.fakes import BagOfWordsEmbedder, ListIndex, MemoryStore, QueueGenerator

HEAD = '[paths]\nkb_paths = ["kb"]\n\n'
HR = '[[scopes]]\nname = "hr"\npaths = ["kb/hr", "kb/faq.yaml"]\nchats = ["slack:C0HR", "console"]\n'
ENG = '[[scopes]]\nname = "eng"\npaths = ["kb/eng"]\nchats = ["slack:C0ENG", "telegram:-100300"]\n'


def load(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, environ={})


def test_scopes_are_read_and_resolve_each_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = load(tmp_path, HEAD + HR + 'admins = ["slack:UHR", "telegram:42"]\nrefusal = "Ask HR."\n\n' + ENG
               + '\n[scoping]\ndefault_scope = "eng"\n')
    assert [s.name for s in cfg.scopes] == ["hr", "eng"] and cfg.scopes[0].admins == ("slack:UHR", "telegram:42")
    scopes = cfg.scope_map()
    assert scopes.resolve(ConversationKey("slack", "C0HR", "1.2")) == "hr"
    assert scopes.resolve(ConversationKey("console", "session-7")) == "hr"  # a whole platform
    assert scopes.resolve(ConversationKey("telegram", "-100300")) == "eng"
    assert scopes.resolve(ConversationKey("slack", "C0OTHER")) == "eng"  # the default
    assert scopes.is_admin("hr", "slack", "UHR") and not scopes.is_admin("eng", "slack", "UHR")
    assert scopes.admins_of("hr", "telegram") == ["42"] and scopes.admins_of("eng", "slack") == []
    assert scopes.admins_of(None, "slack") == []
    assert scopes.refusals() == {"hr": "Ask HR."}
    assert scopes.scopes_of(str(tmp_path / "kb" / "hr" / "leave.md")) == ["hr"]
    assert scopes.scopes_of(str(tmp_path / "kb" / "faq.yaml")) == ["hr"]
    assert scopes.scopes_of(str(tmp_path / "kb" / "misc.md")) == []
    assert scopes.scopes_of(str(cfg.paths.data_dir.resolve() / "reviewed" / "eng" / "reviewed-by-x.yaml")) == ["eng"]


def test_without_scopes_every_chat_reads_the_whole_knowledge_base(tmp_path: Path) -> None:
    cfg = load(tmp_path, HEAD)
    assert cfg.scopes == () and not cfg.scope_map().enabled
    assert cfg.scope_map().resolve(ConversationKey("slack", "C0HR")) is None
    assert cfg.scope_map().each() == [None]


def test_a_chat_no_scope_names_is_not_set_up_without_a_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load(tmp_path, HEAD + HR).scope_map().resolve(ConversationKey("slack", "C0OTHER")) == NOT_SET_UP


@pytest.mark.parametrize(("text", "expected"), [
    (HEAD + HR + '\n[scoping]\ndefault_scope = "finance"\n',
     "c.toml: [scoping] default_scope = 'finance' is not a scope; known scopes: hr"),
    (HEAD + HR + ENG.replace("slack:C0ENG", "slack:C0HR"),
     "c.toml: scope 'eng': chat 'slack:C0HR' is already served by scope 'hr'; a chat is answered from one scope"),
    (HEAD + HR.replace("kb/hr", "/etc"),
     "c.toml: scope 'hr': path '/etc' is outside kb_paths (kb); its documents would never be ingested"),
    (HEAD + HR + HR, "c.toml: scope 'hr' is defined twice"),
    (HEAD + HR.replace("chats", "chat"), "c.toml: [[scopes]] #1 ('hr'): unknown key 'chat'; did you mean chats?"),
    (HEAD + HR.replace('"console"', '"whatsapp:123"'),
     "c.toml: scope 'hr': chat 'whatsapp:123' must be one of console, cli, api, mcp, slack, telegram"),
    (HEAD + HR.replace('name = "hr"', 'name = "h r"'), "c.toml: [[scopes]] #1 ('h r'): name must be 1-64 letters"),
    (HEAD + HR.replace('paths = ["kb/hr", "kb/faq.yaml"]', 'paths = "kb/hr"'),
     "c.toml: [[scopes]] #1 ('hr') paths: expected a list of strings, got 'kb/hr'"),
    (HEAD + HR + 'admins = ["UHR"]\n', "c.toml: scope 'hr': admin 'UHR' must be 'platform:user id'"),
    (HEAD + HR + 'admins = ["telegram:@hrlead"]\n',
     "c.toml: scope 'hr': admin 'telegram:@hrlead': a Telegram user id is a number (e.g. 'telegram:42')"),
    (HEAD + HR.replace('paths = ["kb/hr", "kb/faq.yaml"]\n', ""), "c.toml: scope 'hr': paths is empty"),
    (HEAD + '[scopes]\nname = "hr"\n', "c.toml: scopes must be written as [[scopes]] tables"),
    (HEAD + HR + 'answer = "all"\n',
     "c.toml: [[scopes]] #1 ('hr'): answer must be one of 'mentions', 'questions', 'messages', got 'all'"),
])
def test_config_errors_are_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=re.escape(expected)):
        load(tmp_path, text)


def test_a_scope_says_which_group_messages_its_chats_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scope's `answer` wins over the platform's setting for the chats it serves; the others
    keep the platform's ([slack] answer_in_channels, [telegram] answer_in_groups)."""
    from dataclasses import replace

    from bot.app import App
    from core.messages import Answering, ChatPolicy

    monkeypatch.chdir(tmp_path)
    cfg = load(tmp_path, HEAD + HR + 'answer = "questions"\n\n' + ENG + '\n[slack]\nrefusal_reaction = "shrug"\n'
               + 'auto_answers_per_minute = 4\n')
    app = App.__new__(App)  # chat_policy reads only the config and the scopes
    app.config, app.scopes = cfg, cfg.scope_map()
    assert app.chat_policy("slack", "C0HR") == ChatPolicy(Answering.QUESTIONS, "shrug", 4)
    assert app.chat_policy("slack", "C0ENG") == ChatPolicy(Answering.MENTIONS, "shrug", 4)
    assert app.chat_policy("telegram", "-100300").answering == Answering.MENTIONS
    app.config = cfg.changed(telegram=replace(cfg.telegram, answer_in_groups=Answering.MESSAGES))
    assert app.chat_policy("telegram", "-100300").answering == Answering.MESSAGES
    assert app.chat_policy("console", "x") == ChatPolicy()


def test_an_unknown_scope_named_by_a_caller_lists_the_scopes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    scopes = load(tmp_path, HEAD + HR + ENG).scope_map()
    assert scopes.check("eng") == "eng"
    with pytest.raises(ValueError, match=re.escape("unknown scope 'finance' (scopes: hr, eng)")):
        scopes.check("finance")
    with pytest.raises(ValueError, match="none are configured"):
        ScopeMap().check("hr")


def _pipeline(index: ListIndex, refusals: dict[str, str] | None = None) -> Pipeline:
    return Pipeline(CoreSettings(), Models(index.embedder, QueueGenerator()), index, MemoryStore(), scope_refusals=refusals)


def test_the_search_is_told_the_scope_and_a_scope_may_word_its_refusal() -> None:
    emb = BagOfWordsEmbedder()
    index = ListIndex(["The office opens at nine."], emb)
    pipe = _pipeline(index, {"eng": "Ask in #eng-help."})
    d = pipe.handle(Incoming(ConversationKey("slack", "C0ENG"), "u", "Who won the football match?", scope="eng"))
    assert index.scopes and set(index.scopes) == {"eng"} and d.scope == "eng" and d.to_dict()["scope"] == "eng"
    assert d.refused and d.refusal_message == "Ask in #eng-help."
    plain = pipe.handle(Incoming(ConversationKey("slack", "C0X"), "u", "Who won the football match?"))
    assert plain.scope is None and plain.refusal_message == CoreSettings().refusal.messages["en"]


def test_a_chat_not_set_up_is_refused_without_a_search_or_suggestions() -> None:
    emb = BagOfWordsEmbedder()
    index = ListIndex(["The office opens at nine."], emb, suggestions=["When does the office open?"])
    d = _pipeline(index).handle(Incoming(ConversationKey("slack", "C0X"), "u", "When does the office open?",
                                         scope=NOT_SET_UP))
    assert d.refused and d.refusal_reason == reasons.CHAT_NOT_SET_UP and index.searches == 0
    assert d.suggestions == [] and d.refusal_message.startswith("This chat is not set up")


def test_api_ask_takes_a_known_scope_and_refuses_an_unknown_one(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.server.api_ask import AskBody, incoming, parse_ask
    from bot.server.scope_access import ApiAccess, Caller, Refused

    monkeypatch.chdir(tmp_path)
    cfg = load(tmp_path, HEAD + HR + ENG)
    access = ApiAccess({}, {}, cfg.scope_map(), None)
    every = Caller("global", None, b"t")
    body = parse_ask(b'{"question": "Where is the office?", "scope": "eng"}')
    assert body == AskBody("Where is the office?", scope="eng")
    asked = incoming(access, every, body)
    assert isinstance(asked, Incoming) and asked.scope == "eng"
    unknown = incoming(access, every, AskBody("Where is the office?", scope="finance"))
    assert isinstance(unknown, Refused) and unknown.status == 400
    assert unknown.message == "unknown scope 'finance' (scopes: hr, eng)"
    assert parse_ask(b'{"question": "Where is the office?", "scope": 3}') == "'scope' must be a string"
    plain = incoming(access, every, AskBody("Where is the office?", conversation="w"))
    assert isinstance(plain, Incoming) and plain.scope == NOT_SET_UP  # the "api" chat's scope: no entry, no default


def test_metrics_and_the_report_count_turns_per_scope() -> None:
    from datetime import UTC, datetime

    from bot.cli.report import summarise
    from bot.server.metrics import Metrics
    from storage.records.report_data import ReportData

    emb = BagOfWordsEmbedder()
    pipe = _pipeline(ListIndex(["The office opens at nine."], emb))
    metrics = Metrics()
    for scope in ("hr", "hr", None):
        metrics.observe(pipe.handle(Incoming(ConversationKey("slack", "C0"), "u", "Who won the match?", scope=scope)))
    text = metrics.exposition().decode()
    assert 'groundbot_scope_turns_total{outcome="refused",scope="hr"} 2.0' in text
    assert text.count("groundbot_scope_turns_total{") == 1  # a turn without a scope is not counted per scope
    now = datetime.now(UTC)
    turns = [{"id": i, "created_at": now, "refused": refused, "reason": "OFF_TOPIC" if refused else "", "state": "",
              "question": "q", "route": "", "risk": None, "draft": "", "scope": scope}
             for i, (scope, refused) in enumerate([("hr", False), ("hr", True), ("eng", True)])]
    assert summarise(ReportData(turns, [], []), now)["by_scope"] == {
        "eng": {"turns": 1, "answered": 0, "refused": 1}, "hr": {"turns": 2, "answered": 1, "refused": 1}}


def test_a_scoped_graph_search_sizes_its_candidate_list_to_the_scope() -> None:
    from storage.index.ann import AnnPlan, SearchIndexSettings, ef_for

    plan, s = AnnPlan("IVF_HNSW_SQ", 61, 48, 1_000_000), SearchIndexSettings()
    assert ef_for(plan, s) == 1600 and ef_for(plan, s, 0.1) == 160 and ef_for(plan, s, 0.01) == 100
    assert ef_for(AnnPlan("IVF_PQ", 61, 48, 1_000_000), s, 0.1) == 0 and ef_for(None, s, 0.1) == 0
