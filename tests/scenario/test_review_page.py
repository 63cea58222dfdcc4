"""The review queue's web page in `groundbot serve`: token sign-in, CSRF-checked forms, escaped
output, and the same review desk as the chat platforms."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from itsdangerous import TimestampSigner

from bot.app import App
from bot.server.review_page import COOKIE
from tests.scenario.test_review_console import HOLD_AT, RISKY
from tests.scenario.test_serve import API_TOKEN, config_with, serving, worker
from tests.waits import WAIT_S

TOKEN = "review-token-for-tests"


def _signed(token: str, *, age_s: float) -> str:
    """A session cookie as the page signs one, `age_s` seconds old."""

    class Back(TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time() - age_s)

    return Back(token, salt="groundbot-review-session").sign("session").decode()


@pytest.mark.slow
def test_admin_signs_in_and_edits_a_held_answer(make_app: Callable[..., App], tmp_path: Path) -> None:
    cfg = config_with({"GROUNDBOT_API_TOKEN": API_TOKEN, "GROUNDBOT_REVIEW_TOKEN": TOKEN})
    cfg = cfg.changed(review__template_risk=HOLD_AT, review__hold_risk=HOLD_AT)
    db = f"sqlite:///{(tmp_path / 'shared.db').as_posix()}"
    with serving(worker(make_app, cfg, db)) as [server]:
        held = server.ask(RISKY).json()
        assert held["state"] == "pending_review" and held["route"] == "hold"
        with httpx.Client(base_url=server.url, timeout=WAIT_S) as web:
            page = web.get("/review")
            assert page.status_code == 401 and 'name="token"' in page.text and RISKY not in page.text
            assert web.post("/review/login", data={"token": "wrong"}).status_code == 403
            signed = web.post("/review/login", data={"token": TOKEN})
            assert signed.status_code == 303 and "httponly" in signed.headers["set-cookie"].lower()
            cookie = signed.headers["set-cookie"].lower()
            assert "samesite=strict" in cookie and "max-age=28800" in cookie  # [serve] review_session_hours 8
            assert "secure" not in cookie  # plain http on 127.0.0.1; over HTTPS the cookie is Secure too
            for stale in (_signed(TOKEN, age_s=9 * 3600), _signed("another-token", age_s=0), "forged"):
                refused = httpx.get(server.url + "/review", headers={"Cookie": f"{COOKIE}={stale}"}, timeout=WAIT_S)
                assert refused.status_code == 401 and RISKY not in refused.text  # expired, foreign or forged
            page = web.get("/review")
            assert page.status_code == 200 and f"Question (api, user web-1): {RISKY}" in page.text
            item = re.search(r'name="item" value="(\d+)"', page.text).group(1)  # type: ignore[union-attr]
            csrf = re.search(r'name="csrf" value="(\w+)"', page.text).group(1)  # type: ignore[union-attr]
            forged = web.post("/review/act", data={"item": item, "action": "approve", "csrf": "x" * 64})
            assert forged.status_code == 403
            queue = server.service.app.desk.queue
            assert queue.entry(int(item)).status == "open"
            done = web.post("/review/act", data={"item": item, "action": "edit", "csrf": csrf,
                                                  "text": "Up to <b>4096</b> characters."})
            assert done.status_code == 303
            after = web.get(done.headers["location"])
            assert "edited and approved" in after.text and "The review queue is empty." in after.text
            escaped = web.get("/review", params={"done": "<script>alert(1)</script>"})
            assert "&lt;script&gt;" in escaped.text and "<script>" not in escaped.text
        entry = queue.entry(int(item))
        assert (entry.status, entry.reviewer, entry.final_answer) == ("edited", "web:admin", "Up to <b>4096</b> characters.")
