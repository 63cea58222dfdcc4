"""What the gates read of one turn: the question as retrieval read it and the chunks it found,
then what the passage reader makes of them and the similarity measures of the reader's order.

Each is worked out once, the first time a gate reads it: the ask-back, first of the gates, reads
retrieval's own order, so a question asked back is never read; the similarity gates' thresholds
depend on whether the reader read, so reading comes before measuring.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, replace

from core.gate.ask_gates import AskView
from core.gate.chain import Scores
from core.gate.mentions import WordIndex
from core.gate.passage_reading import Reading, read_turn
from core.gate.similarity_gates import Similarity, measure
from core.messages import Hit, Resolution
from core.ports import PassageReader
from core.retrieve.search import Retrieved
from core.settings import CoreSettings, GateSettings


@dataclass(frozen=True)
class GateTools:
    """What every turn's gates read with: the settings, the passage reader (None: none, or turned
    off), the index's words (core/gate/mentions.py), the threads a follow-up is read on two ways
    at once, and the clock the reader is timed by."""

    settings: CoreSettings
    reader: PassageReader | None
    words: WordIndex
    pool: Executor
    clock: Callable[[], float] = time.perf_counter


class GateView:
    """One turn as its gates read it; `settled` is what the turn goes on with."""

    def __init__(self, asked: str, retrieved: Retrieved, resolution: Resolution, scope: str | None,
                 tools: GateTools) -> None:
        self.asked = asked  # the question as asked
        self.retrieved = retrieved
        self.found = resolution  # the reading retrieval searched
        self.scope = scope
        self.tools = tools
        self.settings = tools.settings
        self.reader = tools.reader
        self.read_ms: float | None = None  # how long the reader took, once it read
        self._reading: tuple[Reading | None, Resolution | None] | None = None
        self._similarity: Similarity | None = None

    def _read(self) -> tuple[Reading | None, Resolution | None]:
        if self._reading is None:
            if self.reader is None or not self.retrieved.hits:
                self._reading = (None, None)
            else:
                clock = self.tools.clock
                t0 = clock()
                try:
                    self._reading = read_turn(self.found, self.retrieved.hits, self.reader, self.settings.reader,
                                              self.settings.extractive, self.tools.pool)
                finally:
                    self.read_ms = round((clock() - t0) * 1000, 3)
        return self._reading

    @property
    def reading(self) -> Reading | None:
        """The passage reader's verdict; None without a reader, or when it failed."""
        return self._read()[0]

    @property
    def resolution(self) -> Resolution:
        """The reading of the question that stands: as typed, where the reader finds that better
        answered than with the words picked; else retrieval's."""
        return self._read()[1] or self.found

    @property
    def question(self) -> str:
        return self.resolution.resolved

    @property
    def hits(self) -> list[Hit]:
        """The chunks in the reader's order (retrieval's without a reader)."""
        reading = self.reading
        return reading.hits if reading is not None else self.retrieved.hits

    @property
    def gate_settings(self) -> GateSettings:
        """The similarity gates' settings: with the reader's verdict, a one-paragraph document can
        answer in full, so how much context is enough is the reader's call."""
        gates = self.settings.gates
        if self.reading is None:
            return gates
        r = self.settings.reader
        return replace(gates, min_top1_similarity=min(gates.min_top1_similarity, r.min_top1_similarity),
                       min_mean_confidence=min(gates.min_mean_confidence, r.min_mean_confidence), min_context_chars=0)

    @property
    def similarity(self) -> Similarity:
        if self._similarity is None:
            self._similarity = measure(self.retrieved.query, self.hits, self.gate_settings)
        return self._similarity

    @property
    def scores(self) -> Scores:
        """The similarity measures and the reader's, as the gates after them read them."""
        reading = self.reading
        return self.similarity.scores() | (reading.scores() if reading is not None else {})

    @property
    def ask(self) -> AskView:
        """What the ask gates read: the user's own words against the chunks in the reader's order."""
        return AskView(self.resolution.stated, self.hits, self.scores, self.tools.words, self.scope, self.settings)

    def settled(self) -> tuple[Resolution, list[Hit], list[Hit]]:
        """(the reading that stands, every chunk in the reader's order, the chunks kept for the
        generator), as far as the gates that ran worked them out: nothing is read or measured for it."""
        reading, stands = self._reading or (None, None)
        hits = reading.hits if reading is not None else self.retrieved.hits
        return stands or self.found, hits, self._similarity.kept if self._similarity is not None else []
