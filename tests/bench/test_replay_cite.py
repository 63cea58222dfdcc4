"""The CLAPNQ replay's pure helpers: citation placeholders resolved against the prompt's
contexts, the cited answer text, the added sentence and the name/number swap."""

from __future__ import annotations

from bench.grounding.clapnq import added_sentence, cite_all, cited, contains_text, make_swap, swap_candidates
from bench.grounding.replay_server import CITE, CITE_PREV, parse_contexts, resolve_citations
from core.messages import Hit
from core.text.sentences import split_claims
from models.openai_generator import build_messages


def _hit(n: int, title: str, text: str) -> Hit:
    return Hit(f"c{n}", f"d{n}", "s", title, "", text, 0.9)


HITS = [_hit(1, "Frogs", "Frogs are amphibians that live near water."),
        _hit(2, "Sweet Frog", "Derek Cha founded Sweet Frog in Richmond , Virginia in 2009 .\n\nIt sells yogurt ."),
        _hit(3, "Yogurt", "Sweet Frog sells frozen yogurt with toppings .")]


def _user(question: str = "who founded sweet frog") -> str:
    return build_messages(question, HITS)[1]["content"]


def test_contexts_are_parsed_from_the_prompt_the_generator_writes() -> None:
    contexts = parse_contexts(_user())
    assert sorted(contexts) == [1, 2, 3]
    assert contexts[2] == "Derek Cha founded Sweet Frog in Richmond , Virginia in 2009 .\n\nIt sells yogurt ."
    assert "Question:" not in contexts[3]


def test_each_placeholder_gets_the_context_sharing_most_words_and_prev_repeats() -> None:
    contexts = parse_contexts(_user())
    text = f"Derek Cha founded it in 2009 {CITE}. It sells frozen yogurt with toppings {CITE}. Frogs swim {CITE_PREV}."
    assert resolve_citations(text, contexts) == (
        "Derek Cha founded it in 2009 [C2]. It sells frozen yogurt with toppings [C3]. Frogs swim [C3].")
    assert resolve_citations(f"Nothing shared here {CITE}.", contexts) == "Nothing shared here [C1]."  # tie: lowest n
    assert resolve_citations("No placeholder.", contexts) == "No placeholder."


def test_citation_goes_before_the_final_punctuation_so_it_binds_to_its_own_sentence() -> None:
    assert cited("Cha founded Sweet Frog on Christian principles .") == f"Cha founded Sweet Frog on Christian principles {CITE}."
    assert cited("No full stop") == f"No full stop {CITE}"
    answer = resolve_citations(cite_all(["Derek Cha founded it in 2009 .", "It sells frozen yogurt with toppings ."]),
                               parse_contexts(_user()))
    assert [c.citations for c in split_claims(answer)] == [(2,), (3,)]


def test_added_sentence_skips_short_sentences_and_the_record_itself() -> None:
    answers = [["One two three four five six."], ["Too short."], ["Short.", "This one has six words here."]]
    assert added_sentence(answers, 0) == (2, "This one has six words here.")  # (0 + 37) % 3 = 1 has none
    assert added_sentence(answers, 1) == (2, "This one has six words here.")


def test_swap_candidates_skip_a_lone_capitalised_sentence_start() -> None:
    found = [c[2] for c in swap_candidates("The store opened in Richmond , Virginia in 2009 with 12 staff .")]
    assert found == ["Richmond", "Virginia", "2009", "12"]
    assert [c[2] for c in swap_candidates("Derek Cha founded it .")] == ["Derek Cha"]
    assert [c[2] for c in swap_candidates("Born in the U.S. , she got a Ph.D in Dublin ( IE ) .")] == ["Dublin"]


def test_swap_is_deterministic_of_the_same_kind_and_new_to_the_answer() -> None:
    sentences = ["He opened the first store in Richmond in 2009 ."]
    passage = "Derek Cha opened it in Richmond in 2009 . In 2012 it moved to Norfolk , then to Virginia Beach ."
    swap = make_swap(sentences, passage, seed=3)
    assert swap is not None and swap == make_swap(sentences, passage, seed=3)
    assert (swap.old, swap.kind) in (("Richmond", "name"), ("2009", "year"))
    assert swap.new in ({"2012"} if swap.kind == "year" else {"Derek Cha", "Norfolk", "Virginia Beach"})
    assert swap.sentences[0] == sentences[0].replace(swap.old, swap.new)
    assert make_swap(["it was built of stone ."], passage, seed=0) is None
    month = make_swap(["it opened in March ."], "Jane Doe opened it in May .", seed=0)
    assert month is not None and (month.old, month.new, month.kind) == ("March", "May", "month")


def test_contains_text_ignores_citations_case_and_punctuation() -> None:
    assert contains_text("Derek Cha founded it [C2]. It sells yogurt [C3].", "it sells yogurt.")
    assert not contains_text("Derek Cha founded it [C2].", "It sells yogurt.")
    assert contains_text("More than 2,000 km [C1].", "2,000") and not contains_text("About 12,000 km.", "2,000")
