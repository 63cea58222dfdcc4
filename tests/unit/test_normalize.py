from core.text.lexicon import content_terms, stem
from core.text.normalize import normalize_text


def test_arabic_letters_and_digits_become_persian_and_ascii() -> None:
    assert normalize_text("كتاب  يك ١٢٣ ۴۵") == "کتاب یک 123 45"


def test_nfc_case_and_whitespace() -> None:
    assert normalize_text("  Cafe\u0301\tMENU \n") == "café menu"


def test_zwnj_and_diacritics() -> None:
    assert normalize_text("می\u200cشود") == "می شود"
    assert normalize_text("كَتَبَ") == "کتب"


def test_content_terms_drop_stopwords_and_stem() -> None:
    assert content_terms("How do I re-ingest the documents?") == ["re", "ingest", "document"]
    assert stem("libraries") == "library"
