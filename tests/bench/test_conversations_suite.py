"""The pure parts of bench.grounding's conversations suite: the docs conversations file (its
sections exist, its split is the one written down), the MTRAG-UN split and scoring, the peer's
ranks, and the resolution figures (skipped cleanly without a resolver)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.grounding import conversations as conv
from bench.grounding import resolution as res
from bench.grounding.docs_suite import DOCS, _leaf, doc_sections
from bench.grounding.harness import SuiteResult
from bench.grounding.report import HEADLINE, result_name
from bench.grounding.run import DEFAULT_LIMITS, SUITES, parse_args
from core.messages import Decision, Source, Suggestion

ISSUE = {  # issue 49's four conversations: first question -> (follow-up, file, heading meant)
    "How do I run the Slack bot in Socket Mode?": ("And over HTTP?", "slack.md",
                                                   "How do I run the Slack bot over HTTP with the Events API?"),
    "How do I create a Telegram bot with BotFather?": ("Where do I put its token?", "telegram.md",
                                                       "Where does the Telegram bot token go?"),
    "How do I ingest documents?": ("And how do I re-ingest them?", "ingesting.md|faq.yaml", "How do I re-ingest documents?"),
    "How do I use PostgreSQL for transcripts?": ("And what happens when it is down?", "console.md",
                                                 "What happens when the transcript database is locked, read-only or down?"),
}


def decision(*, refused: bool = False, sources: tuple[tuple[str, str], ...] = (), answer: str = "An answer.",
             reason: str = "", suggestions: tuple[str, ...] = ()) -> Decision:
    """A decision record citing (file, heading) sources, as the pipeline writes one."""
    return Decision(
        question="q", normalized_question="q", retrieval_query="q", answer="" if refused else answer, refused=refused,
        refusal_reason=reason, refusal_message="", explanation="", status="REFUSE" if refused else "PASS",
        state="refused" if refused else "replied", reasons=[], checks_passed=[], checks_failed=[], scores={}, llm_called=False,
        sources=[Source(i + 1, f"kb/{Path(f).name}", f"c{i}", "Title", h, f"/tmp/kb/{f}", "", 0.5)
                 for i, (f, h) in enumerate(sources)],
        suggestions=[Suggestion(i, s) for i, s in enumerate(suggestions)], uncovered_claims=[], latency_ms={},
        index_version="1", config_hash="h", language="en")


class Record:
    """A stand-in whose record has (or lacks) the resolved_question field."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def to_dict(self) -> dict[str, Any]:
        return dict(self.fields)


# -- the docs conversations file -----------------------------------------------------------------

def test_the_docs_conversations_load_with_sections_that_exist_in_the_docs() -> None:
    convs = conv.load_docs_conversations()
    assert 30 <= len(convs) <= 45
    sections = {(f, _leaf(h)) for a in doc_sections(DOCS) for f in a.file.split("|") for h in [a.heading]}
    missing = [f"{c.id}: {t.file} / {t.heading}" for c in convs for t in c.turns
               for f in t.file.split("|") if (f, _leaf(t.heading)) not in sections]
    assert not missing, "\n".join(missing)
    for c in convs:
        assert 2 <= len(c.turns) <= 3 and c.turns[0].follow_up is None
        assert all(isinstance(t.follow_up, bool) for t in c.turns[1:]), c.id
    later = [t for c in convs for t in c.turns[1:]]
    assert sum(bool(t.follow_up) for t in later) >= 30 and sum(not t.follow_up for t in later) >= 5


def test_the_four_conversations_of_the_issue_are_there_in_dev() -> None:
    convs = {c.turns[0].ask: c for c in conv.load_docs_conversations()}
    for first, (follow, file, heading) in ISSUE.items():
        c = convs[first]
        assert c.split == "dev"
        assert (c.turns[1].ask, c.turns[1].file, c.turns[1].heading, c.turns[1].follow_up) == (follow, file, heading, True)


def test_the_split_is_the_one_the_file_states() -> None:
    """Every third conversation after the issue's four is test, fixed before any run."""
    convs = conv.load_docs_conversations()
    expected = ["dev"] * 4 + ["test" if i % 3 == 2 else "dev" for i in range(len(convs) - 4)]
    assert [c.split for c in convs] == expected
    share = expected.count("test") / len(expected)
    assert 0.25 <= share <= 0.4
    assert "MUST NOT BE USED FOR TUNING" in conv.CONVERSATIONS.read_text("utf-8")


@pytest.mark.parametrize(("entry", "why"), [
    ({"id": "x", "split": "train", "turns": [{"ask": "a", "file": "f", "heading": "h"}] * 2}, "split"),
    ({"id": "x", "split": "dev", "turns": [{"ask": "a", "file": "f", "heading": "h", "follow_up": True}] * 2}, "first"),
    ({"id": "x", "split": "dev", "turns": [{"ask": "a", "file": "f", "heading": "h"}] * 2}, "follow_up"),
    ({"id": "x", "split": "dev", "turns": [{"ask": "a", "file": "f", "heading": "h"}]}, "2 or 3"),
])
def test_a_malformed_conversation_is_refused(tmp_path: Path, entry: dict[str, Any], why: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps({"conversations": [entry]}), encoding="utf-8")
    with pytest.raises(ValueError, match=why):
        conv.load_docs_conversations(path)


# -- scoring a docs turn -------------------------------------------------------------------------

SOCKET = conv.DocsTurn("How do I run the Slack bot in Socket Mode?", "slack.md", "How do I run the Slack bot in Socket Mode?")
HTTP = conv.DocsTurn("And over HTTP?", "slack.md", "How do I run the Slack bot over HTTP with the Events API?", True)


def test_a_follow_up_answered_from_its_section_is_right() -> None:
    d = decision(sources=(("slack.md", "Running groundbot on Slack > " + HTTP.heading),))
    s = conv.score_docs_turn(d, HTTP, SOCKET)
    assert s["right"] and s["led"] and s["moves_section"] and not s["repeated"]


def test_a_follow_up_answered_with_the_previous_section_is_a_repeat() -> None:
    d = decision(sources=(("slack.md", SOCKET.heading),))
    s = conv.score_docs_turn(d, HTTP, SOCKET)
    assert not s["right"] and s["repeated"]
    same_words = decision(sources=(("console.md", "Somewhere else"),), answer="Socket Mode is the default.")
    assert conv.score_docs_turn(same_words, HTTP, SOCKET, previous_answer="Socket Mode is the default.")["repeated"]


def test_a_follow_up_about_the_same_section_may_be_answered_from_it() -> None:
    again = conv.DocsTurn("And does it need a public address?", SOCKET.file, SOCKET.heading, True)
    s = conv.score_docs_turn(decision(sources=(("slack.md", SOCKET.heading),)), again, SOCKET)
    assert s["right"] and not s["moves_section"] and not s["repeated"]


def test_a_refused_follow_up_is_neither_right_nor_a_repeat() -> None:
    s = conv.score_docs_turn(decision(refused=True, reason="NOT_ANSWERED_BY_SOURCES"), HTTP, SOCKET)
    assert not s["right"] and not s["repeated"]


def test_a_refusal_offering_the_heading_meant_is_counted_as_offering_it() -> None:
    offering = decision(refused=True, reason="NO_MATCHING_SOURCE", suggestions=("Other?", HTTP.heading.lower()))
    assert conv.score_docs_turn(offering, HTTP, SOCKET)["offered"]
    assert not conv.score_docs_turn(decision(refused=True, suggestions=("Other?",)), HTTP, SOCKET)["offered"]
    answered = decision(sources=(("slack.md", SOCKET.heading),), suggestions=(HTTP.heading,))
    assert not conv.score_docs_turn(answered, HTTP, SOCKET)["offered"]


def test_a_heading_held_in_two_files_is_answered_by_either() -> None:
    turn = conv.DocsTurn("And how do I re-ingest them?", "ingesting.md|faq.yaml", "How do I re-ingest documents?", True)
    assert conv.score_docs_turn(decision(sources=(("faq.yaml", "How do I re-ingest documents?"),)), turn)["right"]
    assert not conv.score_docs_turn(decision(sources=(("console.md", "How do I re-ingest documents?"),)), turn)["right"]


def test_the_resolved_question_is_read_only_where_the_record_has_one() -> None:
    assert conv.resolved_question(Record({"question": "q"})) is None  # type: ignore[arg-type]
    assert conv.resolved_question(Record({"resolved_question": ""})) is None  # type: ignore[arg-type]
    r = Record({"resolved_question": "How do I run the Slack bot over HTTP?"})
    assert conv.resolution_differs(r, "And over HTTP?")  # type: ignore[arg-type]
    assert not conv.resolution_differs(Record({"resolved_question": "and over http"}), "And over HTTP?")  # type: ignore[arg-type]


# -- MTRAG-UN ------------------------------------------------------------------------------------

def test_the_mtrag_split_is_fixed_by_the_conversation_id() -> None:
    assert conv.conversation_split("72013190593248ab20cca034f21ce38a") == "dev"
    assert [conv.conversation_split(c) for c in "abcdef"] == ["dev", "test", "dev", "dev", "dev", "test"]
    ids = [f"conversation-{i}" for i in range(3000)]
    share = [conv.conversation_split(c) for c in ids].count("test") / len(ids)
    assert 0.3 <= share <= 0.37
    assert [conv.conversation_split(c) for c in ids] == [conv.conversation_split(c) for c in ids]


def _task(kind: str, refs: tuple[str, ...] = ("p1", "p2"), multi: str = "Follow-up") -> conv.MtragTask:
    return conv.MtragTask("t<::>3", "t", ("What is A?",), "And B?", tuple(conv.Passage(r, "", "text") for r in refs),
                          kind, multi, "govt")


NAMES = {"p1": "p1", "p2": "p2", "p3": "p3"}


@pytest.mark.parametrize("kind", ["ANSWERABLE", "PARTIAL"])
def test_an_answerable_last_turn_is_right_only_citing_a_reference_passage(kind: str) -> None:
    assert conv.score_mtrag(decision(sources=(("p2.md", ""),)), _task(kind), NAMES)["right"]
    assert not conv.score_mtrag(decision(sources=(("p3.md", ""),)), _task(kind), NAMES)["right"]
    assert not conv.score_mtrag(decision(refused=True, reason="LOW_CONFIDENCE"), _task(kind), NAMES)["right"]


def test_an_unanswerable_or_underspecified_last_turn_is_right_refused() -> None:
    assert not conv.score_mtrag(decision(sources=(("p3.md", ""),)), _task("UNANSWERABLE", ()), NAMES)["right"]
    asked = decision(refused=True, reason=conv.ASK_BACK, suggestions=("Which A?", "Which B?"))
    s = conv.score_mtrag(asked, _task("UNDERSPECIFIED"), NAMES)
    assert s["right"] and s["asked_back"] and s["offered"]
    plain = conv.score_mtrag(decision(refused=True, reason="NO_MATCHING_SOURCE"), _task("UNDERSPECIFIED"), NAMES)
    assert plain["right"] and not plain["asked_back"] and not plain["offered"]


def test_mtrag_tasks_load_with_their_user_turns_only(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    task = {"conversation_id": "c1", "task_id": "c1<::>3", "answerability": ["UNDERSPECIFIED"], "Multi-Turn": ["N/A"],
            "Collection": "fiqa", "contexts": [{"document_id": "d/1", "text": "Some text here.", "title": None}],
            "input": [{"speaker": "user", "text": "First?"}, {"speaker": "agent", "text": "An agent reply."},
                      {"speaker": "user", "text": "Second?"}]}
    path.write_text(json.dumps(task) + "\n\n", encoding="utf-8")
    [t] = conv.load_mtrag_un(path)
    assert (t.earlier, t.question, t.kind, t.multi_turn, t.references) == (("First?",), "Second?", "UNDERSPECIFIED",
                                                                          "N/A", frozenset({"d/1"}))


def test_passages_are_written_one_file_each_and_found_again_by_their_file(tmp_path: Path) -> None:
    ps = [conv.Passage("822086267_7384-8758-0-1374", "Arizona Cardinals", "The Cardinals play in Glendale."),
          conv.Passage("d/1 odd id", "", "\nOne reason why some merchants do not accept Discover is the fee.")]
    names = conv.write_mtrag_kb(ps, tmp_path)
    assert names["822086267_7384-8758-0-1374"] == "822086267_7384-8758-0-1374"
    odd = next(stem for stem, doc in names.items() if doc == "d/1 odd id")
    assert "/" not in odd and " " not in odd and odd != conv.passage_file_stem("d/1 odd idx")
    assert (tmp_path / f"{odd}.md").read_text("utf-8").startswith("# One reason why some merchants do not accept")
    d = decision(sources=((f"{odd}.md", ""), ("822086267_7384-8758-0-1374.md", "")))
    assert conv.cited_passages(d, names) == ["d/1 odd id", "822086267_7384-8758-0-1374"]


def test_the_peer_ranks_a_passage_by_its_best_chunk() -> None:
    sims = np.array([[0.9, 0.1, 0.5], [0.2, 0.3, 0.8]], dtype=np.float32)  # 2 queries x 3 chunks
    scores = conv.passage_scores(sims, np.array([0, 1, 1]), 2)  # chunks 1 and 2 are passage 1's
    assert np.allclose(scores, [[0.9, 0.5], [0.2, 0.8]])
    assert conv.peer_ranks(scores, ["a", "b"], [frozenset({"b"}), frozenset({"b"})]) == [1, 0]
    assert conv.peer_ranks(scores, ["a", "b"], [frozenset({"z"}), frozenset({"a", "b"})]) == [None, 0]
    t = _task("ANSWERABLE")
    assert conv.peer_queries(t) == {"last": "And B?", "glued": "What is A? And B?", "last_two": "What is A? And B?"}


def test_figures_carry_their_counts_per_split() -> None:
    m: dict[str, float | int] = {}
    items = [("dev", True), ("dev", False), ("test", True)]
    conv.put(m, "x", items, lambda x: x[1], lambda x: x[0])
    assert (m["x"], m["x_dev"], m["x_test"], m["x_dev_right"], m["x_dev_n"]) == (0.6667, 0.5, 1.0, 1, 2)
    assert conv.counts(m, "x_dev") == "0.500 (1/2)"
    conv.put(m, "y", [], lambda x: True, lambda x: "dev")
    assert conv.counts(m, "y") == "–"


# -- resolution ----------------------------------------------------------------------------------

def _canard(dialog: str) -> list[dict[str, object]]:
    return [
        {"History": ["Frank Zappa", "Disbandment"], "QuAC_dialog_id": dialog, "Question": "What group disbanded?",
         "Question_no": 1, "Rewrite": "What group disbanded?"},
        {"History": ["Frank Zappa", "Disbandment", "What group disbanded?", "Zappa and the Mothers of Invention"],
         "QuAC_dialog_id": dialog, "Question": "When did they disband?", "Question_no": 2,
         "Rewrite": "When did Zappa and the Mothers of Invention disband?"}]


def _resolution_data(tmp_path: Path) -> tuple[Path, Path]:
    """CANARD dialogues d5 (dev), d12 (test) and d1 (train); MTRAG conversations conv5 (clapnq: test, fiqa:
    dev, the others train), by bench/rewrites.py's split."""
    canard = tmp_path / "canard.json"
    canard.write_text(json.dumps(_canard("d5") + _canard("d12") + _canard("d1")), encoding="utf-8")
    folder = tmp_path / "rewrites"
    folder.mkdir()
    for c in res.MTRAG_COLLECTIONS:
        rows = {"questions": ["|user|: where do the arizona cardinals play",
                              "|user|: where do the arizona cardinals play\n|user|: Do they play outside the US?"],
                "lastturn": ["|user|: where do the arizona cardinals play", "|user|: Do they play outside the US?"],
                "rewrite": ["|user|: where do the arizona cardinals play",
                            "|user|: Do the Arizona Cardinals play outside the US?"]}
        for kind, texts in rows.items():
            lines = [json.dumps({"_id": f"{c}conv5<::>{i + 1}", "text": t}) for i, t in enumerate(texts)]
            (folder / f"{c}_{kind}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return canard, folder


def test_the_rewrites_load_with_their_earlier_turns_and_split_by_conversation(tmp_path: Path) -> None:
    canard, folder = _resolution_data(tmp_path)
    first, second = res.load_canard(canard)[:2]
    assert first.prior == (("Frank Zappa", "Disbandment"),) and not first.follow_up and first.unchanged
    assert second.prior[-1] == ("What group disbanded?", "Zappa and the Mothers of Invention") and second.follow_up
    assert [r.split for r in res.load_canard(canard)] == ["dev", "dev", "test", "test", "train", "train"]
    rw = res.load_mtrag_rewrites(folder)
    assert len(rw) == 8 and rw[1].prior == (("where do the arizona cardinals play", ""),) and rw[1].follow_up
    assert rw[1].question == "Do they play outside the US?" and not rw[0].prior
    assert [r.split for r in rw[::2]] == ["test", "train", "dev", "train"]


def test_added_words_are_scored_against_the_human_rewrite() -> None:
    item = res.Rewrite("1", "When did they disband?", "When did Zappa and the Mothers of Invention disband?",
                       (("What group disbanded?", "Zappa and the Mothers of Invention"),))
    alone = res.Rewrite("2", "Did Assange get married?", "Did Assange get married?", (("Who is he?", ""),))
    assert res.added_terms(item.rewrite, item.question) == {"zappa", "mother", "invention"}
    s = res.score([item, alone], ["When did Zappa disband in Europe?", "Did Assange get married?"])
    assert (s["precision"], s["recall"], s["n"]) == (0.5, pytest.approx(0.3333), 2)
    assert (s["left_alone"], s["left_alone_right"], s["left_alone_n"]) == (1.0, 1, 1)
    assert res.score([alone], ["Did Assange get married to Zappa?"])["left_alone"] == 0.0


class Picks:
    """A term selector at its port: picks the earlier words it is told to."""

    def __init__(self, *words: str) -> None:
        self.words = {w.lower() for w in words}

    def probabilities(self, history: Sequence[str], question: Sequence[str]) -> list[float]:
        return [0.9 if w.lower() in self.words else 0.1 for w in history]


def test_the_reading_is_scored_on_the_dev_and_test_conversations_only(tmp_path: Path) -> None:
    canard, folder = _resolution_data(tmp_path)
    result = SuiteResult("conversations")
    res.run_resolution(result, canard=canard, rewrites=folder, turns=2, selector=Picks("zappa", "mothers", "arizona", "cardinals"))
    m = result.metrics
    assert m["canard_selector_n_dev"] == 1 and m["canard_selector_n_test"] == 1  # d1 (train) is not scored
    assert m["canard_selector_precision_dev"] == 1.0 and m["canard_selector_recall_dev"] == 0.6667
    assert m["mtrag_rewrites_selector_n_test"] == 1 and m["mtrag_rewrites_selector_n_dev"] == 1
    assert m["mtrag_rewrites_selector_recall_test"] == 1.0 and "canard_condense_f1_dev" in m
    assert m["canard_human_rewrites_well_formed"] == 1.0


def test_without_a_term_selector_the_baseline_is_still_scored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    canard, folder = _resolution_data(tmp_path)
    from models import term_selector

    monkeypatch.setattr(term_selector, "MODEL_FILE", tmp_path / "none.onnx")
    monkeypatch.setattr(term_selector.OnnxTermSelector.__init__, "__defaults__", (tmp_path / "none.onnx", 1))
    result = SuiteResult("conversations")
    res.run_resolution(result, canard=canard, rewrites=folder)
    assert not [k for k in result.metrics if "_selector_" in k] and "canard_condense_f1_test" in result.metrics
    assert any("term selector skipped" in n for n in result.notes)


# -- registration --------------------------------------------------------------------------------

def test_the_suite_is_registered_in_the_benchmark() -> None:
    assert "conversations" in SUITES and "conversations" in DEFAULT_LIMITS and "conversations" in HEADLINE
    args = parse_args(["--suites", "conversations"])
    assert args.out.name == "grounding-conversations.json" == f"{result_name(['conversations'], SUITES)}.json"
    assert args.mtrag_un == conv.MTRAG_UN_FILE and args.canard == res.CANARD_FILE
