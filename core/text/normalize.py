"""Text normalisation shared by ingestion, retrieval and verification.

The same function must run on both sides (index and query), otherwise a Persian
question typed with Arabic letters would never match a Persian document.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_LETTER_MAP = {
    "\u064a": "\u06cc",  # Arabic yeh -> Persian yeh
    "\u0649": "\u06cc",  # alef maksura -> Persian yeh
    "\u0643": "\u06a9",  # Arabic kaf -> Persian keheh
    "\u0629": "\u0647",  # teh marbuta -> heh
    "\u06c0": "\u0647",  # heh with yeh above -> heh
    "\u0623": "\u0627",  # alef with hamza above -> alef
    "\u0625": "\u0627",  # alef with hamza below -> alef
    "\u0671": "\u0627",  # alef wasla -> alef
    "\u0640": "",  # tatweel
    "\u200c": " ",  # zero-width non-joiner splits Persian compounds
    "\u200d": "",
    "\u200b": "",
    "\ufeff": "",
}
_DIGITS = {ord(c): str(i) for i, c in enumerate("۰۱۲۳۴۵۶۷۸۹")}
_DIGITS.update({ord(c): str(i) for i, c in enumerate("٠١٢٣٤٥٦٧٨٩")})
_TABLE: dict[int, str | None] = {ord(k): v for k, v in _LETTER_MAP.items()}
_TABLE.update(_DIGITS)
# Arabic diacritics (harakat), which users rarely type consistently, are dropped by the same table
_TABLE.update({c: None for c in range(0x064B, 0x0660)})
_TABLE[0x0670] = None
_WS = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)


@lru_cache(maxsize=16384)
def normalize_text(text: str) -> str:
    """NFC, Arabic->Persian letters, ASCII digits, no diacritics, folded case, single spaces.

    Cached: a turn normalises the same retrieved passages in its gate, generator and verifier
    (and concurrent conversations often retrieve the same ones); ASCII text skips the Unicode steps,
    which cannot change it."""
    if text.isascii():
        return _WS.sub(" ", text.lower()).strip()
    return _WS.sub(" ", unicodedata.normalize("NFC", text).translate(_TABLE).casefold()).strip()


def words(text: str) -> list[str]:
    """Word tokens of already-normalised text."""
    return _WORD.findall(text)


def clean_input(text: str) -> str:
    """Drop control characters (binary junk) but keep every script and emoji."""
    text = unicodedata.normalize("NFC", text)
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C").strip()
