"""Console adapter: `groundbot chat`, a REPL over the same pipeline and transcripts.

It renders; it decides nothing. Admin, review and feedback commands go to the backend's one
command layer (bot/services/commands.py) and come back as platform-neutral replies; every string a
user reads comes from the message catalogue (core/catalogue) in the question's language.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import IO

from core.admin_replies import Action, Button, FeedbackReason, Reply
from core.catalogue import say
from core.messages import ConversationKey, Decision, Incoming, Platform
from core.ports import Backend
from core.render import render_text

PLATFORM = Platform.CONSOLE
COMMANDS = ("stats", "reingest", "review")


def explain(decision: Decision) -> str:
    """The /why view: status, reasons and what lies behind them (`detail`: the numbers and
    internals the asker is not shown), checks, scores, risk and the claim-to-evidence map."""
    lines = [
        f"status: {decision.status}  state: {decision.state}  route: {decision.route}  llm_called: {decision.llm_called}",
        f"reasons: {', '.join(decision.reasons) or '-'}",
        f"why: {decision.detail or decision.explanation or '-'}",
        f"passed: {', '.join(decision.checks_passed) or '-'}",
        f"failed: {', '.join(decision.checks_failed) or '-'}",
        "scores: " + json.dumps(decision.scores, ensure_ascii=False),
        f"risk: {decision.risk}  " + json.dumps(decision.risk_parts),
        f"retrieval query: {decision.retrieval_query}",
        "latency ms: " + json.dumps(decision.latency_ms),
        f"index version: {decision.index_version}  config: {decision.config_hash}",
    ]
    if decision.scope is not None:  # the knowledge scope the turn was answered from (docs/scopes.md)
        lines.insert(1, f"scope: {decision.scope}")
    r = decision.resolution
    if r is not None and r.previous:  # how a later turn was read: the full reading, whatever the user was shown
        lines.insert(1, f"read as: {r.resolved or decision.question}  ({r.method}: {r.why}; after: {r.previous})")
    views = decision.claim_map
    if decision.removed_claims:  # what the user was not sent, and why
        lines.append(f"left out ({len(decision.removed_claims)}):")
        why = {c.claim: "; ".join(c.missing) or "not supported" for c in views if not c.supported}
        lines.extend(f"  - {claim}  ({why.get(claim, 'not supported')})" for claim in decision.removed_claims)
    for c in views:
        lines.append(f"  {'✓' if c.supported else '✗'} {c.claim}  (support {c.support}, cites {list(c.citations)})")
        lines.extend(f"      ← {ev}" for ev in c.evidence)
        if c.missing:
            lines.append(f"      missing in evidence: {', '.join(c.missing)}")
    return "\n".join(lines)


def _command_of(b: Button) -> str:
    """The console command a button stands for."""
    if isinstance(b.action, FeedbackReason):
        return f"/bad {b.action}"
    return f"/review {b.action} {b.item_id}" + (" TEXT" if b.action == Action.EDIT else "")


def render_reply(reply: Reply) -> str:
    """A command's reply as console text; buttons become the commands that do the same."""
    out = []
    for section in reply.sections:
        out.append(section.text)
        if section.buttons:
            out.append("    " + "  ".join(f"[{b.label}: {_command_of(b)}]" for b in section.buttons))
    return "\n".join(out)


class ConsoleChat:
    """A read-eval-print loop; `user_id` is "local", an admin by default config. `scope` (from
    `groundbot chat --scope`) answers every question from that knowledge scope."""

    def __init__(self, backend: Backend, *, user_id: str = "local", stdin: IO[str] = sys.stdin,
                 stdout: IO[str] = sys.stdout, session: str = "console", scope: str | None = None) -> None:
        self.backend = backend
        self.scope = scope
        self.user_id = user_id
        self.stdin = stdin
        self.stdout = stdout
        self.key = ConversationKey(PLATFORM, session)
        self.last: Decision | None = None
        self.connected = False

    def connect(self) -> None:
        """Take this process's console deliveries (reviewed answers), which starts the courier's
        retry thread: done when the chat starts reading, never by the constructor."""
        if not self.connected:
            self.backend.register_delivery(PLATFORM, self)
            self.connected = True

    def say(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def deliver(self, key: ConversationKey, decision: Decision) -> None:
        """A reviewed answer for a console conversation: printed, with the conversation named."""
        self.say(f"\n[{key.chat_id}] " + render_text(decision))

    def notify(self, reply: Reply, users: Sequence[str] = ()) -> None:
        """Console admins read the queue with /review; nothing is pushed into the chat."""

    def _progress(self) -> Callable[[str, int, int], None]:
        def report(phase: str, done: int, total: int) -> None:
            self.stdout.write(f"\r  {phase}: {done}/{total}")
            self.stdout.flush()
            if done >= total:
                self.stdout.write("\n")

        return report

    @property
    def lang(self) -> str:
        return self.last.language if self.last else "en"

    def handle_line(self, line: str) -> bool:
        """Process one input line; False means quit."""
        text = line.strip()
        name, _, args = text.partition(" ")
        if text in ("/quit", "/exit"):
            return False
        if text in ("/help", "?"):
            self.say(say("console_help", self.lang))
        elif text == "/why":
            self.say(explain(self.last) if self.last else say("no_decision", self.lang))
        elif name.startswith("/") and name[1:] in COMMANDS:
            progress = self._progress() if name == "/reingest" else None
            self.say(render_reply(self.backend.command(PLATFORM, self.user_id, name[1:], args, progress,
                                                       self.key.chat_id, self.scope)))
        elif name in ("/good", "/bad"):
            self._feedback(1 if name == "/good" else -1, args)
        elif text.isdigit() and self.last and self.last.suggestions and 1 <= int(text) <= len(self.last.suggestions):
            picked = self.last.suggestions[int(text) - 1]
            self.say(f"> {picked.text}")
            self._ask(Incoming(self.key, self.user_id, picked.text, suggestion_id=picked.id or None, scope=self.scope))
        else:
            self._ask(Incoming(self.key, self.user_id, line, scope=self.scope))
        return True

    def _feedback(self, value: int, args: str) -> None:
        """/good, /bad REASON [comment]; a refusal takes /bad should_answer."""
        last = self.last
        reason, _, comment = args.strip().partition(" ")
        if not last or not last.turn_id or (last.refused and not reason):
            self.say(say("feedback_nothing", self.lang))
            return
        reply = self.backend.feedback(self.user_id, last.turn_id, value, reason, comment, last.language)
        self.say(render_reply(reply))

    def _ask(self, msg: Incoming) -> None:
        self.last = self.backend.ask(msg)
        self.say(render_text(self.last))

    def run(self) -> None:
        self.connect()
        self.say(say("console_welcome"))
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
