"""Consolidation's work does not grow out of a Lambda's reach with the session (issue 12):
bounded model calls in at most two rounds, the rolling summary as the starting point,
embedding requests in flight at once, and a run that hands over when short of time, resumed
by the next invocation (also when a record is redelivered half way)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.domain import Turn
from chatmemory.ports import Generation, GenerationOptions, Piece, TextGenerator, whole
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.background.consolidation import (
    ConsolidationPolicy,
    consolidate_session,
    window_starts,
)
from chatmemory.services.conversation import sessions
from chatmemory.services.longterm.summarize import ModelSummarizer, SummaryBudget
from chatmemory.services.prompt import estimate_tokens
from tests.fakes import FakeEmbedder
from tests.memory_fake import InMemoryShortTermMemory

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
WORDS = "we talked about the allotment tomatoes the train to Porto and the dentist on Friday"


@dataclass
class SlowModel(TextGenerator):
    """Answers after `latency` seconds and records how many calls were in flight at once."""

    latency: float = 0.02
    name: str = "slow"
    context_tokens: int = 512
    prompts: list[str] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        with self._lock:
            self.prompts.append(prompt)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(self.latency)
        with self._lock:
            self.in_flight -= 1
        return whole(Generation("the user planned a trip to Porto and tended tomatoes", self.name))


def _turns(session_id: str, count: int) -> list[Turn]:
    return [
        Turn(session_id, n, "alice", f"turn {n}: {WORDS}", f"noted, {WORDS}",
             created_at="2026-11-23T10:00:00.000Z")
        for n in range(1, count + 1)
    ]  # fmt: skip


def _ended_session(memory: InMemoryShortTermMemory, count: int, *, summarized_through: int = 0):
    session = sessions.create_session(memory, "alice", clock=lambda: NOW)
    memory.put_turns(_turns(session.session_id, count))
    row = memory._sessions[session.session_id]
    row.session.num_turns = count
    if summarized_through:
        row.session.running_summary = "earlier: the user talked about tomatoes"
        row.session.summary_through_turn = summarized_through
    memory.end_session(session.session_id, "2026-11-23T11:00:00.000Z")
    return session.session_id


def test_a_summary_takes_at_most_nine_calls_in_two_rounds_however_long_the_text() -> None:
    for lines in (40, 400, 4000):
        model = SlowModel(latency=0.0)
        summarizer = ModelSummarizer(model, budget=SummaryBudget(max_map_calls=8, concurrency=8))
        text = "\n".join(f"User: line {i} {WORDS}" for i in range(lines))
        assert summarizer.summarize(text)
        assert summarizer.calls <= 9 and summarizer.rounds <= 2, (lines, summarizer.calls)
        assert all(estimate_tokens(p) <= model.context_tokens for p in model.prompts)


def test_map_calls_run_at_once_up_to_the_concurrency_allowed() -> None:
    model = SlowModel(latency=0.05)
    summarizer = ModelSummarizer(model, budget=SummaryBudget(max_map_calls=8, concurrency=3))
    summarizer.summarize("\n".join(f"User: line {i} {WORDS}" for i in range(400)))
    assert model.most_in_flight == 3
    assert summarizer.calls == 9 and summarizer.rounds == 3 + 1  # ceil(8 / 3) + the combine


def test_a_long_text_is_narrowed_to_the_lines_of_what_it_keeps_talking_about() -> None:
    """Luhn: the words a conversation repeats are its topics; lines dense in them win."""
    from chatmemory.services.longterm.summarize import select_lines

    lines = ["User: hi there", "Bot: hello, how can I help?"]
    for i in range(30):
        lines.append(f"User: aside number{i} unrelated{i} wording{i}")
        if i % 3 == 0:
            lines.append(f"User: the Porto trip, the Porto hotel and the train to Porto ({i})")
    topic = [line for line in lines if "Porto" in line]
    budget = sum(estimate_tokens(line) for line in lines[:2] + topic)
    chosen = select_lines(lines, budget)
    assert chosen[:2] == lines[:2]  # the opening is kept
    porto = [line for line in chosen if "Porto" in line]
    assert len(porto) == 10 and len(chosen) - 2 == len(porto)
    assert chosen == [line for line in lines if line in chosen]  # original order


def test_consolidation_starts_from_the_rolling_summary() -> None:
    memory = InMemoryShortTermMemory()
    sid = _ended_session(memory, 1000, summarized_through=994)
    model = SlowModel(latency=0.0)
    result = consolidate_session(
        sid, memory=memory, summarizer=ModelSummarizer(model), embedder=FakeEmbedder(),
        index=EmbeddedLongTermIndex(), policy=ConsolidationPolicy(), now=NOW,
    )  # fmt: skip
    assert result.outcome == "consolidated"
    assert len(model.prompts) == 1  # the last six turns extend the rolling summary in one call
    assert "earlier: the user talked about tomatoes" in model.prompts[0]
    assert "turn 995:" in model.prompts[0] and "turn 994:" not in model.prompts[0]
    assert result.documents == 2 + len(window_starts(1000, ConsolidationPolicy()))


def test_embedding_requests_run_at_once_up_to_the_concurrency_allowed() -> None:
    memory = InMemoryShortTermMemory()
    sid = _ended_session(memory, 200, summarized_through=194)

    @dataclass
    class SlowEmbedder(FakeEmbedder):
        lock: threading.Lock = field(default_factory=threading.Lock)
        now: int = 0
        most: int = 0

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
            time.sleep(0.02)
            with self.lock:
                self.now -= 1
            return super().embed(texts)

    embedder = SlowEmbedder(max_batch=16)
    result = consolidate_session(
        sid, memory=memory, summarizer=ModelSummarizer(SlowModel(latency=0.0)),
        embedder=embedder, index=EmbeddedLongTermIndex(),
        policy=ConsolidationPolicy(embed_concurrency=4), now=NOW,
    )  # fmt: skip
    assert result.embed_calls == -(-201 // 16)  # 2 head documents + 199 windows, 16 a request
    assert embedder.most == 4


def _run(memory, sid, index, time_left, policy=None, summarizer=None):
    return consolidate_session(
        sid, memory=memory, summarizer=summarizer or ModelSummarizer(SlowModel(latency=0.0)),
        embedder=FakeEmbedder(), index=index,
        policy=policy or ConsolidationPolicy(block_turns=100, reserve_seconds=10), now=NOW,
        time_left=time_left,
    )  # fmt: skip


def _indexed_keys(index: EmbeddedLongTermIndex, sid: str) -> list[str]:
    rows = index._db.execute(
        "SELECT doc_key FROM docs WHERE idx = ? AND session_id = ?", (MEMORY_INDEX, sid)
    )
    return sorted(r[0] for r in rows)


def test_a_run_short_of_time_hands_over_and_the_next_one_resumes_where_it_stopped() -> None:
    memory, index = InMemoryShortTermMemory(), EmbeddedLongTermIndex()
    sid = _ended_session(memory, 350)
    first_model = SlowModel(latency=0.0)
    first = _run(memory, sid, index, lambda: 5.0, summarizer=ModelSummarizer(first_model))
    assert first.outcome == "continued" and first.documents == 2 + 100
    checkpoint = memory.get_session(sid)
    assert checkpoint is not None
    assert (checkpoint.consolidation_cursor, checkpoint.consolidation_round) == (100, 1)
    assert checkpoint.consolidation_summary and checkpoint.status == "ENDED"

    second_model = SlowModel(latency=0.0)
    second = _run(memory, sid, index, lambda: 500.0, summarizer=ModelSummarizer(second_model))
    assert second.outcome == "consolidated" and second.documents == 249
    assert second_model.prompts == []  # the summary came with the checkpoint
    done = memory.get_session(sid)
    assert done is not None and done.status == "CONSOLIDATED"
    assert done.summary == checkpoint.consolidation_summary
    expected = ["#opening", "#summary"] + [f"#chunk-{s}" for s in range(1, 350)]
    assert _indexed_keys(index, sid) == sorted(f"{sid}{k}" for k in expected)


def test_a_record_redelivered_half_way_does_the_same_work_and_one_checkpoint_wins() -> None:
    memory, index = InMemoryShortTermMemory(), EmbeddedLongTermIndex()
    sid = _ended_session(memory, 350)
    assert _run(memory, sid, index, lambda: 5.0).outcome == "continued"
    # The handover record and a redelivered OPEN -> ENDED record run side by side: both resume
    # from the same checkpoint; the first to hand over wins, the other stands back.
    one = _run(memory, sid, index, lambda: 5.0)
    other = _run(memory, sid, index, lambda: 5.0)
    assert (one.outcome, other.outcome) == ("continued", "continued")
    stored = memory.get_session(sid)
    assert stored is not None and stored.consolidation_round == 3
    assert _run(memory, sid, index, lambda: 500.0).outcome == "consolidated"
    assert len(_indexed_keys(index, sid)) == 2 + 349  # overwritten, never duplicated


def test_a_session_deleted_between_two_runs_is_cleaned_up_by_the_next() -> None:
    memory, index = InMemoryShortTermMemory(), EmbeddedLongTermIndex()
    sid = _ended_session(memory, 350)
    assert _run(memory, sid, index, lambda: 5.0).outcome == "continued"
    sessions.delete_session(memory, "alice", sid)
    assert _run(memory, sid, index, lambda: 5.0).outcome == "deleted"
    assert _indexed_keys(index, sid) == []


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_windows_cover_every_turn_once_for_short_sessions(count: int) -> None:
    starts = window_starts(count, ConsolidationPolicy())
    covered = {n for s in starts for n in (s, s + 1) if n <= count}
    assert covered == set(range(1, count + 1))
    assert starts == list(range(1, max(count, 2)))
