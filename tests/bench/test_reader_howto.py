"""The reader's how-to documentation source: which headings become questions, and which sections
answer them (bench/training/reader/howto.py)."""

from __future__ import annotations

from bench.training.reader.howto import page_pairs, question_of

FILLER = "It covers the usual case in a few plain sentences so that the section is long enough to read."

PAGE_MD = f"""# Sessions

## Is the session thread-safe?

No: a session is meant for one thread at a time; make one per request and close it after. {FILLER}

## How to close a session

Call close when the request ends, or use the session as a context manager. {FILLER}

## Caching

The session keeps an identity map of the objects it loaded, not a cache of query results. {FILLER}

## Is it fast?

See the performance page.
"""


def test_question_headings_are_read_as_questions() -> None:
    assert question_of("Is the Session thread-safe?") == "Is the Session thread-safe?"
    assert question_of("How to log a user out") == "How do I log a user out?"
    assert question_of("When do I make a :class:`.sessionmaker`?") == "When do I make a sessionmaker?"
    assert question_of("Installation") is None
    assert question_of("Why?") is None  # too short to ask anything


def test_each_question_section_is_the_positive_and_its_siblings_the_negatives() -> None:
    pairs = page_pairs("demo", "howto:demo:sessions.md", PAGE_MD, markdown=True)
    questions = {p.question for p in pairs}
    assert questions == {"Is the session thread-safe?", "How do I close a session?"}  # "Is it fast?" is a pointer
    for q in questions:
        own = [p for p in pairs if p.question == q]
        assert [p.label for p in own] == [1, 0, 0]
        assert len({p.text for p in own}) == 3
        assert all(p.title == "Demo: Sessions" and p.source == "howto" for p in own)
    thread = next(p for p in pairs if p.question.startswith("Is the") and p.label == 1)
    assert "one thread at a time" in thread.text
    close = next(p for p in pairs if p.question.startswith("How do I") and p.label == 1)
    assert "context manager" in close.text


def test_restructured_text_pages_are_parsed_with_docutils() -> None:
    rst = PAGE_MD.replace("# Sessions", "Sessions\n========").replace("## ", "")
    rst = "\n".join(line if not line.endswith(("?", "session", "Caching")) or line.startswith("No")
                    else f"{line}\n{'-' * len(line)}" for line in rst.splitlines())
    pairs = page_pairs("demo", "howto:demo:sessions.rst", rst)
    assert {p.question for p in pairs if p.label == 1} == {"Is the session thread-safe?", "How do I close a session?"}
