"""Rolling summary, idle sweep, ingestion chunking and the embedded index on disk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.ports import MemoryDoc, Search
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.background.ingest import chunk_text
from chatmemory.services.background.maintenance import (
    CompactionPolicy,
    SweepPass,
    compact_session,
    sweep_idle_sessions,
)
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.conversation.sessions import create_session
from tests.fakes import FakeGenerator, FakeSummarizer, indexed
from tests.streams import StreamReader


@pytest.fixture
def memory(dynamodb: Any) -> DynamoShortTermMemory:
    return DynamoShortTermMemory(dynamodb, "sessions", "conversations")


def _chat(memory, n: int, clock=None) -> str:
    deps = ChatDeps(memory=memory, generator=FakeGenerator(), **({"clock": clock} if clock else {}))
    session = create_session(memory, "alice", **({"clock": clock} if clock else {}))
    for i in range(1, n + 1):
        post_message(
            deps,
            ChatPolicy(),
            Message(user_id="alice", session_id=session.session_id, content=f"fact {i}"),
        )
    return session.session_id


def test_rolling_summary_covers_old_turns_and_keeps_the_recent_window_out(memory) -> None:
    sid = _chat(memory, 20)
    policy = CompactionPolicy(compact_after_turns=12, keep_recent_turns=6)
    assert compact_session(sid, memory=memory, summarizer=FakeSummarizer(), policy=policy)
    session = memory.get_session(sid)
    assert session.summary_through_turn == 14
    assert "fact 1 " in session.running_summary + " " and "fact 14" in session.running_summary
    assert "fact 15" not in session.running_summary
    # Nothing more to do until enough new turns arrive.
    assert not compact_session(sid, memory=memory, summarizer=FakeSummarizer(), policy=policy)


def test_the_chat_prompt_uses_the_rolling_summary(memory) -> None:
    sid = _chat(memory, 20)
    compact_session(sid, memory=memory, summarizer=FakeSummarizer(), policy=CompactionPolicy())
    model = FakeGenerator()
    post_message(
        ChatDeps(memory=memory, generator=model),
        ChatPolicy(window_turns=2),
        Message(user_id="alice", session_id=sid, content="what do you know?"),
    )
    assert "Summary of the earlier conversation: User: fact 1" in model.prompts[0]


def test_a_concurrent_compaction_does_not_overwrite_a_newer_summary(memory) -> None:
    sid = _chat(memory, 20)
    stale = memory.get_session(sid)

    class RacingSummarizer(FakeSummarizer):
        def extend(self, summary: str, new_text: str) -> str:
            # Another run finishes first while this one is summarizing.
            memory.update_running_summary(sid, "newer summary", 16, expected_through=0)
            return "stale summary"

    assert not compact_session(
        sid, memory=memory, summarizer=RacingSummarizer(), policy=CompactionPolicy()
    )
    session = memory.get_session(sid)
    assert (session.running_summary, session.summary_through_turn) == ("newer summary", 16)
    assert stale.summary_through_turn == 0


def test_compaction_handler_acts_on_new_turns_from_the_stream(
    memory, dynamodb, monkeypatch: pytest.MonkeyPatch, lambda_context
) -> None:
    from handlers import compact

    deps = wiring.CompactionDeps(memory, FakeSummarizer(), CompactionPolicy())
    monkeypatch.setattr(wiring, "compaction_deps", lambda: deps)
    stream = StreamReader(dynamodb, "conversations")
    sid = _chat(memory, 14)
    assert compact.handler(stream.event(), lambda_context) == {"batchItemFailures": []}
    assert memory.get_session(sid).summary_through_turn == 8


def test_idle_sessions_are_ended_without_scanning(memory, dynamodb) -> None:
    long_ago = datetime(2026, 1, 1, tzinfo=UTC)
    idle = [_chat(memory, 1, clock=lambda: long_ago) for _ in range(3)]
    active = _chat(memory, 1)
    ops: list[str] = []
    dynamodb.meta.events.register(
        "before-call.dynamodb.*", lambda model, **_: ops.append(model.name)
    )
    ended = sweep_idle_sessions(memory, now=datetime.now(UTC), idle_minutes=30)
    assert sorted(ended) == sorted(idle)
    assert "Scan" not in ops
    assert all(memory.get_session(s).status == "ENDED" for s in idle)
    assert memory.get_session(active).status == "OPEN"
    # Ended sessions leave the sparse index: a second sweep finds nothing.
    assert sweep_idle_sessions(memory, now=datetime.now(UTC), idle_minutes=30) == []


def test_the_sweeper_ends_a_session_once_its_whole_activity_bucket_is_idle(memory) -> None:
    # The sparse index is keyed by 10-minute buckets of last activity (a turn rewrites it only
    # when it opens a new bucket): a session is ended at most one bucket after it became idle.
    sid = _chat(memory, 1, clock=lambda: datetime(2026, 1, 1, 12, 7, tzinfo=UTC))
    at = lambda minute: datetime(2026, 1, 1, 12, minute, tzinfo=UTC)  # noqa: E731
    assert sweep_idle_sessions(memory, now=at(36), idle_minutes=30) == []  # 29 min idle
    assert sweep_idle_sessions(memory, now=at(39), idle_minutes=30) == []  # same bucket as 12:09
    assert sweep_idle_sessions(memory, now=at(41), idle_minutes=30) == [sid]
    assert memory.get_session(sid).status == "ENDED"


def test_a_session_active_again_is_not_ended_by_a_late_sweep(memory) -> None:
    long_ago = datetime(2026, 1, 1, tzinfo=UTC)
    sid = _chat(memory, 1, clock=lambda: long_ago)
    before = (datetime.now(UTC) - timedelta(minutes=30)).isoformat()
    post_message(
        ChatDeps(memory=memory, generator=FakeGenerator()),
        ChatPolicy(),
        Message(user_id="alice", session_id=sid, content="I'm back"),
    )
    from chatmemory.errors import Conflict

    with pytest.raises(Conflict):
        memory.end_session(sid, "2026-11-22T00:00:00.000Z", idle_before=before[:23] + "Z")


def test_documents_are_chunked_on_paragraphs_with_overlap_for_long_ones() -> None:
    text = "Intro line.\n\n" + " ".join(f"w{i}" for i in range(300)) + "\n\nLast paragraph."
    chunks = chunk_text(text, max_words=120, overlap_words=20)
    assert chunks[0] == "Intro line."
    assert chunks[1].split()[0] == "w0" and chunks[1].split()[-1] == "w119"
    assert chunks[2].split()[0] == "w100"  # 20 words shared with the previous passage
    assert chunks[-1].endswith("Last paragraph.")


@pytest.mark.parametrize(
    "paragraph",
    [
        "我们的退款政策规定，付款后十四天内可以全额退款。" * 200,  # Chinese: no spaces at all
        "返金は支払いから十四日以内に全額行われます。" * 200,  # Japanese
        "see https://example.com/" + "a1b2c3" * 2000,  # one unbroken run of Latin letters
    ],
    ids=["chinese", "japanese", "unbroken"],
)
def test_a_paragraph_without_spaces_is_cut_into_bounded_overlapping_passages(
    paragraph: str,
) -> None:
    chunks = chunk_text(paragraph, max_words=120, overlap_words=20, max_chars=1000)
    assert len(chunks) > 1 and all(len(c) <= 1000 for c in chunks)
    # Each passage is a piece of the text as written (no space where it had none), they cover
    # it from start to end, and each shares its start with the end of the one before.
    assert all(c in paragraph for c in chunks)
    assert chunks[0].startswith(paragraph[:100]) and paragraph.endswith(chunks[-1][-100:])
    assert all(a[-40:] in b for a, b in zip(chunks, chunks[1:], strict=False))


def test_english_passages_keep_their_word_bound_under_the_character_bound() -> None:
    text = " ".join(f"word{i}" for i in range(300))  # 300 words of 5 to 7 characters
    assert chunk_text(text, max_words=120, overlap_words=20) == chunk_text(
        text, max_words=120, overlap_words=20, max_chars=10**9
    )


def test_embedded_index_persists_on_disk(tmp_path) -> None:
    path = tmp_path / "memory.sqlite3"
    doc = MemoryDoc(
        doc_key="s1#summary",
        user_id="alice",
        kind="summary",
        text="sailing trip",
        created_at="2026-01-01T00:00:00.000Z",
        embedding=[1.0, 0.0],
        session_id="s1",
    )
    EmbeddedLongTermIndex(path).upsert(MEMORY_INDEX, [doc])
    reopened = EmbeddedLongTermIndex(path)
    [hit] = reopened.vector_search(Search(MEMORY_INDEX, [1.0, 0.0], "", 5, "alice"))
    assert hit.doc.text == "sailing trip" and hit.vector_score == pytest.approx(1.0)
    [lexical] = reopened.lexical_search(Search(MEMORY_INDEX, (), "sailing", 5, "alice"))
    assert lexical.doc.doc_key == "s1#summary" and lexical.lexical_score > 0
    assert reopened.vector_search(Search(MEMORY_INDEX, [1.0, 0.0], "", 5, "bob")) == []


def test_the_ingest_command_indexes_every_text_and_markdown_file(tmp_path, monkeypatch) -> None:
    from scripts.ingest import read_documents

    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "refunds.md").write_text("# Refunds\n\nPaid within 14 days.")
    (tmp_path / "faq.txt").write_text("Opening hours are 9 to 5.")  # short files: one passage
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    documents = read_documents(tmp_path)
    assert [d.doc_id for d in documents] == ["faq.txt", "policies/refunds.md"]
    from chatmemory.services.background.ingest import ingest_documents
    from tests.fakes import FakeEmbedder

    index = EmbeddedLongTermIndex()
    assert ingest_documents(documents, embedder=FakeEmbedder(), index=index) == 2
    assert ingest_documents(documents, embedder=FakeEmbedder(), index=index) == 2
    from chatmemory.schema import PASSAGE_INDEX

    assert indexed(index, PASSAGE_INDEX) == 2  # re-ingestion overwrites


def test_the_ingest_lambda_indexes_documents_of_its_event(tmp_path, monkeypatch, lambda_context):
    import pydantic

    from chatmemory import wiring
    from chatmemory.schema import PASSAGE_INDEX
    from handlers import ingest
    from tests.fakes import FakeEmbedder

    monkeypatch.setenv("LONG_TERM_BACKEND", "embedded")
    monkeypatch.setenv("MEMORY_PATH", str(tmp_path / "memory.sqlite3"))
    monkeypatch.setattr(wiring, "embedder", lambda cfg=None: FakeEmbedder())
    event = {"documents": [{"doc_id": "manual.md", "text": "# Reset\n\nHold the button 5 s."}]}
    assert ingest.handler(event, lambda_context) == {"documents": 1, "passages": 1}
    index = EmbeddedLongTermIndex(tmp_path / "memory.sqlite3")
    [hit] = index.lexical_search(Search(PASSAGE_INDEX, (), "button", 5, None))
    assert (hit.doc.doc_id, hit.doc.passage_id, hit.doc.title) == ("manual.md", "p1", "Reset")
    with pytest.raises(pydantic.ValidationError):
        ingest.handler({"documents": [{"doc_id": "", "text": "x"}]}, lambda_context)


# --- the sweep: every shard, page by page, and lost consolidations ------------------------------


def _ended_long_ago(memory: Any, count: int, *, at: datetime) -> list[str]:
    from chatmemory.domain import Session, SessionCreation, UserState

    sids = []
    for n in range(count):
        sid = f"s-{n:04d}"
        started = at.isoformat()
        memory.create_session(
            Session(sid, "alice", sid, "OPEN", started, started),
            SessionCreation(UserState("alice")),
        )
        sids.append(sid)
    return sids


def test_the_sweeper_ends_every_idle_session_not_one_page_a_shard() -> None:
    """Failed before: one page of at most 100 sessions a shard each sweep (about 5 sessions a
    second at 16 shards every 5 minutes): 100,000 sessions idle at midnight took hours."""
    from tests.memory_fake import InMemoryShortTermMemory

    memory = InMemoryShortTermMemory()
    long_ago = datetime(2026, 1, 1, tzinfo=UTC)
    sids = _ended_long_ago(memory, 2_000, at=long_ago)

    ended = sweep_idle_sessions(memory, now=long_ago + timedelta(hours=1), idle_minutes=30)

    assert sorted(ended) == sids  # 2,000 over 16 shards: more than a page of 100 in each


def test_a_sweep_short_of_time_stops_and_the_next_one_finds_the_rest() -> None:
    from tests.memory_fake import InMemoryShortTermMemory

    memory = InMemoryShortTermMemory()
    long_ago = datetime(2026, 1, 1, tzinfo=UTC)
    sids = _ended_long_ago(memory, 300, at=long_ago)
    budget = iter([100.0] * 20)  # 20 pages' worth of time, then out of it

    first = sweep_idle_sessions(
        memory,
        now=long_ago + timedelta(hours=1),
        idle_minutes=30,
        run=SweepPass(page_size=5, time_left=lambda: next(budget, 0.0)),
    )
    rest = sweep_idle_sessions(memory, now=long_ago + timedelta(hours=1), idle_minutes=30)

    assert 0 < len(first) < 300 and sorted(first + rest) == sids


def test_lost_consolidations_are_started_again_oldest_first_within_the_sweeps_budget() -> None:
    from chatmemory.services.background.maintenance import SweepPolicy, sweep
    from tests.memory_fake import InMemoryShortTermMemory

    memory = InMemoryShortTermMemory()
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    sids = _ended_long_ago(memory, 10, at=t0)
    for n, sid in enumerate(sids):  # ended a minute apart... over several buckets
        memory.end_session(sid, (t0 + timedelta(minutes=11 * n)).isoformat())
    memory.mark_consolidated(sids[0], "done", t0.isoformat())
    policy = SweepPolicy(retry_minutes=60, retries_per_sweep=4, run=SweepPass(workers=1))

    early = sweep(memory, now=t0 + timedelta(minutes=50), policy=policy)
    first = sweep(memory, now=t0 + timedelta(hours=4), policy=policy)
    second = sweep(memory, now=t0 + timedelta(hours=4, minutes=5), policy=policy)
    third = sweep(memory, now=t0 + timedelta(hours=4, minutes=10), policy=policy)

    assert early.retried == []  # none ended an hour before
    assert len(first.retried) == len(second.retried) == 4 and len(third.retried) == 1
    # Each lost one started again once (not the consolidated one), within the sweeps' budget.
    assert sorted(first.retried + second.retried + third.retried) == sids[1:]
    assert [memory._sessions[s].retries for s in sids] == [0] + [1] * 9
    assert first.oldest_unconsolidated == t0 + timedelta(minutes=10)  # s-0001's bucket
    # A period later, what is still not consolidated is started again.
    memory.mark_consolidated(sids[1], "done", t0.isoformat())
    later = sweep(memory, now=t0 + timedelta(hours=6), policy=policy)
    assert sids[1] not in later.retried and len(later.retried) == 4


def test_the_sweep_function_retries_lost_consolidations_and_reports_the_oldest_wait(
    dynamodb: Any, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    import json

    from chatmemory import schema
    from handlers import sweep_idle

    memory = wiring.short_term_memory()
    ended = datetime.now(UTC) - timedelta(hours=10)
    sids = _ended_long_ago(memory, 3, at=ended - timedelta(minutes=5))
    for sid in sids:
        memory.end_session(sid, ended.isoformat())
    monkeypatch.setenv(schema.ENV_CONSOLIDATION_RETRY_MINUTES, "360")
    # Metrics on, as deployed (a local-mode test in the same process may have turned them off
    # in the environment).
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    wiring.clear_caches()
    stream = StreamReader(dynamodb, schema.SESSIONS.logical_name)
    stream.records()  # what came before the sweep

    counts = sweep_idle.handler({}, lambda_context)

    assert counts["consolidations_retried"] == 3 and counts["ended"] == 0
    assert 10 * 3600 <= counts["oldest_unconsolidated_seconds"] <= 10 * 3600 + 700
    # Each a stream record the consolidation mapping takes (its filter, as deployed).
    from chatmemory.streams import matches

    taken = [
        r
        for r in stream.records()
        if any(matches(f, r) for f in schema.CONSOLIDATION_TRIGGER.filters)
    ]
    assert sorted(r["dynamodb"]["Keys"]["session_id"]["S"] for r in taken) == sids
    # The alarm's metric, as an embedded metric format line (no CloudWatch call).
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    [metric] = [m for m in lines if schema.OLDEST_UNCONSOLIDATED_METRIC in m]
    assert metric["service"] == schema.SWEEPER_SERVICE
    [waited] = metric[schema.OLDEST_UNCONSOLIDATED_METRIC]
    assert abs(waited - counts["oldest_unconsolidated_seconds"]) < 1
