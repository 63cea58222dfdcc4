"""A knowledge base of two teams for the knowledge-scope scenarios (docs/scopes.md): HR's
policies, engineering's runbooks, and a company FAQ shared by both, served by two scopes with
their own chats and admins. Telegram, Slack and console tests build their apps from it."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.config import Config
from bot.scopes import ScopeSettings, ScopingSettings

HR_CHANNEL, ENG_CHANNEL, OTHER_CHANNEL = "C0HR", "C0ENG", "C0RANDOM"
HR_GROUP, ENG_GROUP, OTHER_GROUP = -100200, -100300, -100400
HR_ADMIN_SLACK, ENG_ADMIN_SLACK = "UHRLEAD1", "UENGLEAD"
HR_ADMIN_TG, ENG_ADMIN_TG = 333, 444

HR_QUESTION = "How many weeks of parental leave do employees get?"
HR_WORDS = "sixteen weeks of paid parental leave"
ENG_QUESTION = "How do I roll back a failed deployment?"
SHARED_QUESTION = "Where is the company office?"
# refused in the HR scope, with HR's own headings suggested
HR_OFF = "Can I bring my dog to the parental leave meeting?"

LEAVE = """# Leave policy

## How much parental leave do employees get?

Every employee gets sixteen weeks of paid parental leave after the birth or adoption of a child. The leave can be taken in up to three blocks within the first year.

## How do I request annual leave?

Request annual leave in the HR portal at least two weeks ahead; your manager approves it there. Employees have twenty-five days of annual leave a year.
"""
RUNBOOK = """# Deployment runbook

## How do I roll back a failed deployment?

Run the rollback job in the deploy pipeline with the previous release tag; it restores the last good release within five minutes. Then open an incident ticket.

## How do I rotate the database password?

Rotate the database password with the secrets tool, then restart the API pods one by one so that no request fails.
"""
FAQ = {"faq": [
    {"question": "Where is the company office?",
     "answer": "The company office is at 12 Harbour Street, on the fourth floor, next to the central station."},
]}


def write_kb(root: Path) -> Path:
    """kb/hr, kb/eng and kb/shared under `root`; returns kb."""
    kb = root / "kb"
    for part in ("hr", "eng", "shared"):
        (kb / part).mkdir(parents=True, exist_ok=True)
    (kb / "hr" / "leave.md").write_text(LEAVE, encoding="utf-8")
    (kb / "eng" / "runbook.md").write_text(RUNBOOK, encoding="utf-8")
    (kb / "shared" / "faq.yaml").write_text(yaml.safe_dump(FAQ, sort_keys=False, width=100_000), encoding="utf-8")
    return kb


def scoped(cfg: Config, kb: Path, *, default: str = "") -> Config:
    """`cfg` with the two teams' scopes over `kb` (the shared FAQ in both)."""
    hr = ScopeSettings("hr", (str(kb / "hr"), str(kb / "shared")),
                       (f"slack:{HR_CHANNEL}", f"telegram:{HR_GROUP}", "console"),
                       (f"slack:{HR_ADMIN_SLACK}", f"telegram:{HR_ADMIN_TG}"))
    eng = ScopeSettings("eng", (str(kb / "eng"), str(kb / "shared")),
                        (f"slack:{ENG_CHANNEL}", f"telegram:{ENG_GROUP}"),
                        (f"slack:{ENG_ADMIN_SLACK}", f"telegram:{ENG_ADMIN_TG}"),
                        refusal="The engineering runbooks do not answer this; ask in #eng-help.")
    return cfg.changed(paths__kb_paths=(str(kb),), scopes=(hr, eng), scoping=ScopingSettings(default))
