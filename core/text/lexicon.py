"""Content words: stop words and a light stemmer, English and Persian.

Lexical overlap is the cheap half of retrieval fusion and of claim verification,
so the notion of a "content word" must be one shared definition.
"""

from __future__ import annotations

from functools import lru_cache

from core.text.normalize import normalize_text, words

STOP_EN = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "then", "else", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as", "into", "onto", "about", "over", "under", "between", "through", "during", "before", "after", "above", "below", "up", "down", "out", "off", "again", "further", "once", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "doing", "have", "has", "had", "having", "i", "me", "my", "we", "our", "you", "your", "he", "him", "his", "she", "her", "it", "its", "they", "them", "their", "what", "which", "who", "whom", "whose", "this", "that", "these", "those", "there", "here", "when", "where", "why", "how", "all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so", "than", "too", "very", "can", "could", "will", "would", "shall", "should", "may", "might", "must", "s", "t", "just", "don", "now", "also", "one", "ones", "get", "got", "let", "make", "please", "tell", "know", "want", "like", "would", "us", "via", "per", "yes", "okay", "ok", "hi", "hello", "thanks", "thank", "answer"]
)
# Persian function words, question words and the commonest light verbs: in a question they
# say nothing about the topic, so they must not count as shared content. (Words written with a
# zero-width non-joiner are listed split, as normalize_text splits them.)
_FA_STOP_WORDS = """و در به از که این را با است برای آن یک تا می بر هم نیز شود شد های ها کرد کند بود باشد او ما شما
    ایشان آنها اینها چه چی چرا کجا کی چگونه چطور آیا هر یا اما ولی پس اگر ای خود دارد داشت شده بوده کنید
    کنم کردن کرده است؟ نمی هست نیست بی سر روی زیر جز کدام کدامیک چند چندم چیست کیست کجاست چقدر چگونگی
    کسی چیزی نام اسم هستند بودند اند ام ایم اید شوند شدند کنند کردند دارند
    داشتند باشند بودن شدن داشتن گرفت گرفته توان تواند توانند میتوان میشود میکند بین پیش بعد قبل طی
    توسط مورد درباره حدود همه همین همان دیگر دیگری بسیار خیلی چنین چون زیرا وقتی هنگام نظر مانند مثل
    ولی لیکن یعنی البته فقط تنها حتی هنوز اکنون حال امروز ی یکی ترین تر"""
STOP_FA = frozenset(_FA_STOP_WORDS.split())
STOP = STOP_EN | STOP_FA
# The closed-class English words that occur in nearly every passage (articles, pronouns,
# auxiliaries, question words, the commonest prepositions and conjunctions): a full-text query
# spent most of its time on their postings for no ranking signal. Words that shape a question's
# meaning (before, after, most, not, between, ...) are not among them. Persian function words stay
# in the query: they carry part of what a Persian question asks, and without them questions the
# sources cannot answer are matched more loosely.
FTS_SKIP = frozenset(
    ["a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as",
     "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "have", "has", "had", "i",
     "me", "my", "we", "our", "you", "your", "he", "him", "his", "she", "her", "it", "its", "they", "them",
     "their", "what", "which", "who", "whom", "whose", "this", "that", "these", "those", "there", "here",
     "when", "where", "why", "how", "can", "could", "will", "would", "shall", "should", "may", "might", "must",
     "s", "t"])
# Verbs that open a yes/no question ("Is ...", "Did ...") or an "Is A or B ...?" choice.
AUXILIARIES = frozenset(["is", "are", "was", "were", "am", "do", "does", "did", "has", "have", "had", "can", "could",
                         "will", "would", "shall", "should", "may", "might", "must"])

_SUFFIXES = ("ies", "ing", "ed", "es", "s", "ly")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Very light English suffix stripping; Persian plural suffixes too."""
    if word.isdigit() or len(word) <= 3:
        return word
    for suffix in ("های", "ها", "ان"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix == "ies":
                return base + "y"
            return base
    return word


def content_terms(text: str, *, normalized: bool = False) -> list[str]:
    """Stemmed content words of a text, in order, duplicates kept."""
    return list(_terms(text if normalized else normalize_text(text)))


@lru_cache(maxsize=16384)
def _terms(norm: str) -> tuple[str, ...]:
    """Cached per normalised text: a turn's gate, generator and verifier read the same passages."""
    return tuple(stem(w) for w in words(norm) if w not in STOP and (len(w) > 1 or w.isdigit()))
