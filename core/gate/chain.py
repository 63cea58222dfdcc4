"""What a gate is, one kind for every gate: a name, what it reads, and a verdict.

A gate reads one thing (the similarity measures, the reader's verdict, the ask, or the whole
gate view) and returns None to let the question through, or a `Verdict`: a refusal with its
stable reason code, the catalogue key of what the asker reads and what `/why` adds, or only a
warning. `run_chain` runs gates in order up to the first refusal and writes what they decided
as the record lists it (`GateResult`); core/gate/gates.py holds a turn's gates, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

from core.messages import Hit, Resolution
from core.reasons import Reason, Status

Scores = dict[str, float | int | None]
T = TypeVar("T")
V = TypeVar("V")


@dataclass(frozen=True)
class Verdict:
    """What a gate decided when it does not simply let the question through."""

    status: Status  # REFUSE ends the gates and the turn before any generator; WARN is recorded, the gates go on
    reason: Reason | None = None  # a refusal's stable reason code (core/reasons.py)
    key: str = ""  # the catalogue key of what the asker reads ("" = the reason code's own text)
    fields: Mapping[str, str] = field(default_factory=dict)  # that text's fields
    detail: str = ""  # what `/why` adds: numbers, how many readings
    readings: tuple[str, ...] = ()  # the questions offered back to a question with several readings


def refuse(reason: Reason, key: str = "", *, detail: str = "", readings: Sequence[str] = (), **fields: str) -> Verdict:
    """A refusal: its reason code, and the catalogue key and fields of what its asker reads."""
    return Verdict(Status.REFUSE, reason, key, fields, detail, tuple(readings))


WARN = Verdict(Status.WARN)


class Listed(Enum):
    """How a gate shows in the record's `checks_passed` and `checks_failed` (stored records and
    dashboards read these lists, so a gate added later does not change what older ones list)."""

    ALWAYS = "always"
    WHEN_REFUSING = "when refusing"  # listed only when it refuses (one_reading)
    NEVER = "never"  # its reason code says it all (the ask-back)


def _always(_: object) -> bool:
    return True


@dataclass(frozen=True)
class Gate(Generic[T]):
    """A named gate over what it reads (`T`): `check` decides, `applies` says whether it has
    anything to read this turn (the reader's verdict needs a reader), and `measures` are the
    scores the record keeps once it has run."""

    name: str
    check: Callable[[T], Verdict | None]
    applies: Callable[[T], bool] = _always
    measures: Callable[[T], Scores] | None = None
    listed: Listed = Listed.ALWAYS

    def on(self, part: Callable[[V], T]) -> Gate[V]:
        """The same gate run on a larger view, reading the `part` of it this gate reads."""
        measures = self.measures
        return Gate(self.name, lambda v: self.check(part(v)), lambda v: self.applies(part(v)),
                    None if measures is None else (lambda v: measures(part(v))), self.listed)


@dataclass
class GateResult:
    """The gates' verdict on a turn: the refusal (None = it passed), the chunks that go on to
    the generator, every score and check as the record lists them, and what the reader made of
    the turn (the reading of the question that stands, the chunks in its order)."""

    refusal: Verdict | None = None
    kept: list[Hit] = field(default_factory=list)  # chunks that survive the per-chunk floor, in the reader's order
    scores: Scores = field(default_factory=dict)
    checks_passed: list[str] = field(default_factory=list)
    checks_failed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    resolution: Resolution | None = None  # the reading of the question the later stages read
    hits: list[Hit] = field(default_factory=list)  # every retrieved chunk, in the reader's order

    @property
    def passed(self) -> bool:
        return self.refusal is None

    @property
    def reason(self) -> Reason | None:
        """The refusing gate's reason code; None when the question passed."""
        return self.refusal.reason if self.refusal is not None else None


def run_chain(gates: Sequence[Gate[T]], subject: T) -> GateResult:
    """Run `gates` on `subject` in order up to the first that refuses; a gate that does not
    apply is skipped and not listed."""
    result = GateResult()
    for gate in gates:
        if not gate.applies(subject):
            continue
        verdict = gate.check(subject)
        if gate.measures is not None:
            result.scores.update(gate.measures(subject))
        if verdict is None:
            if gate.listed is Listed.ALWAYS:
                result.checks_passed.append(gate.name)
        elif verdict.status is Status.WARN:
            result.warnings.append(gate.name)
            result.checks_failed.append(f"{gate.name}(warn)")
        else:
            if gate.listed is not Listed.NEVER:
                result.checks_failed.append(gate.name)
            result.refusal = verdict
            break
    return result
