"""Console adapter: `groundbot chat`, a REPL over the same pipeline and transcripts."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import IO

from core.messages import ConversationKey, Decision, Incoming
from core.ports import Backend, PathNotAllowed
from core.render import render_text

HELP = """Type a question and press Enter. Commands:
  1..3        ask the numbered suggestion after a refusal
  /why        show the last decision's checks and scores
  /reingest   re-ingest the knowledge base (admins)
  /stats      answer/refusal rates and latency (admins)
  /review     answers held for review (admins)
  /good, /bad rate the last answer
  /help       this text;  /quit (or Ctrl-D) to leave"""


def explain(decision: Decision) -> str:
    """The /why view: status, reasons, checks, scores and the claim-to-evidence map."""
    lines = [
        f"status: {decision.status}  state: {decision.state}  llm_called: {decision.llm_called}",
        f"reasons: {', '.join(decision.reasons) or '-'}",
        f"passed: {', '.join(decision.checks_passed) or '-'}",
        f"failed: {', '.join(decision.checks_failed) or '-'}",
        "scores: " + json.dumps(decision.scores, ensure_ascii=False),
        f"retrieval query: {decision.retrieval_query}",
        "latency ms: " + json.dumps(decision.latency_ms),
        f"index version: {decision.index_version}  config: {decision.config_hash}",
    ]
    for row in decision.claim_map:
        mark = "✓" if row["supported"] else "✗"
        lines.append(f"  {mark} {row['claim']}  (support {row['support']}, cites {row['citations']})")
        for ev in row["evidence"]:
            lines.append(f"      ← {ev}")
        if row["missing"]:
            lines.append(f"      missing in evidence: {', '.join(row['missing'])}")
    return "\n".join(lines)


class ConsoleChat:
    """A read-eval-print loop; `user_id` is "local", an admin by default config."""

    def __init__(self, backend: Backend, *, user_id: str = "local", stdin: IO[str] = sys.stdin,
                 stdout: IO[str] = sys.stdout, session: str = "console") -> None:
        self.backend = backend
        self.user_id = user_id
        self.stdin = stdin
        self.stdout = stdout
        self.key = ConversationKey("console", session)
        self.last: Decision | None = None

    def say(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def _progress(self) -> Callable[[str, int, int], None]:
        def report(phase: str, done: int, total: int) -> None:
            self.stdout.write(f"\r  {phase}: {done}/{total}")
            self.stdout.flush()
            if done >= total:
                self.stdout.write("\n")

        return report

    def handle_line(self, line: str) -> bool:
        """Process one input line; False means quit."""
        text = line.strip()
        if text in ("/quit", "/exit"):
            return False
        if text in ("/help", "?"):
            self.say(HELP)
        elif text == "/why":
            self.say(explain(self.last) if self.last else "No decision yet.")
        elif text.startswith("/reingest"):
            paths = text.split()[1:] or None
            try:
                summary = self.backend.admin_reingest("console", self.user_id, paths, self._progress())
                self.say("Re-ingest done: " + summary.line())
            except PathNotAllowed as exc:
                self.say(f"Re-ingest refused: {exc}")
            except PermissionError:
                self.say("Sorry, only admins can re-ingest the knowledge base.")
        elif text == "/stats":
            try:
                self.say(json.dumps(self.backend.admin_stats("console", self.user_id), indent=2))
            except PermissionError:
                self.say("Sorry, only admins can see stats.")
        elif text == "/review":
            try:
                queue = self.backend.admin_review_queue("console", self.user_id)
                self.say("\n".join(f"#{q['turn_id']}: {q['question']}\n    draft: {q['draft']}" for q in queue)
                         or "The review queue is empty.")
            except PermissionError:
                self.say("Sorry, only admins can see the review queue.")
        elif text in ("/good", "/bad"):
            if self.last and self.last.turn_id and not self.last.refused:
                self.backend.record_feedback(self.last.turn_id, self.user_id, 1 if text == "/good" else -1)
                self.say("Thanks for the feedback.")
            else:
                self.say("There is no answer to rate yet.")
        elif text.isdigit() and self.last and self.last.suggestions and 1 <= int(text) <= len(self.last.suggestions):
            picked = self.last.suggestions[int(text) - 1]
            self.say(f"> {picked.text}")
            self._ask(Incoming(self.key, self.user_id, picked.text, suggestion_id=picked.id or None))
        else:
            self._ask(Incoming(self.key, self.user_id, line))
        return True

    def _ask(self, msg: Incoming) -> None:
        self.last = self.backend.ask(msg)
        self.say(render_text(self.last))

    def run(self) -> None:
        self.say("groundbot — answers only from its knowledge base. /help for commands.")
        while True:
            self.stdout.write("\nyou> ")
            self.stdout.flush()
            line = self.stdin.readline()
            if not line:
                self.say("")
                return
            if not line.strip():
                continue
            if not self.handle_line(line.rstrip("\n")):
                return
