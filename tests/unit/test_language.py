"""Question language, same-language sources, and spelling-tolerant FAQ matching."""

from __future__ import annotations

from core.text.fuzzy import faq_match
from core.text.language import language_of, prefer_language
from core.text.sentences import split_sentences


def test_language_follows_the_grammar_words() -> None:
    assert language_of("groundbot چیست؟") == "fa"
    assert language_of("What is تخت جمشید?") == "en"
    assert language_of("پايتخت فرانسه كجاست؟") == "fa"  # Arabic letters typed for Persian
    assert language_of("How do I re-ingest documents?") == "en"
    assert language_of("") == "en"


def test_prefer_language_keeps_order_and_falls_back() -> None:
    items = ["An English passage.", "یک متن فارسی است.", "Another one."]
    assert prefer_language(items, "fa", str) == ["یک متن فارسی است."]
    assert prefer_language(items, "en", str) == ["An English passage.", "Another one."]
    assert prefer_language(items[:1], "fa", str) == items[:1]


def test_faq_match_tolerates_spelling_not_other_words() -> None:
    assert faq_match("How do I reset my password?", "How can I reset my pasword?") == 1.0
    assert faq_match("ساعت کاری دفتر چیست؟", "ساعات كاري دفتر چيست") == 1.0
    assert faq_match("How do I reset my password?", "How do I reset my token?") < 0.8
    assert faq_match("Which port does the webhook use?", "Which part does the webhook use?") < 0.8
    assert faq_match("آدرس دفتر چیست؟", "ساعت کاری دفتر چیست؟") < 0.8


def test_persian_sentences_split_on_persian_question_marks_only() -> None:
    assert split_sentences("تهران پایتخت است. آیا بزرگ است؟ بله، بسیار؛ و شلوغ!") == [
        "تهران پایتخت است.", "آیا بزرگ است؟", "بله، بسیار؛ و شلوغ!"]
