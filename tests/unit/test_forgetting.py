"""Deleting is final: after DELETE /sessions/{id} or DELETE /memories returns, nothing of what was
deleted can be recalled, listed or searched, whatever consolidation is doing at that moment.

The race of the bug report (a session deleted while it is being consolidated) is made
deterministic: the long-term index pauses consolidation right after its write, the test
deletes (and runs the purge, or not) at that point, then lets consolidation finish."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.ports import MemoryDoc
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.background.consolidation import ConsolidationPolicy, consolidate_session
from chatmemory.services.conversation.chat import ChatDeps
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer, PausesOnUpsert
from tests.purging import DELETES, Purger, recalled
from tests.unit.test_chat_api import Api


class PausingIndex(PausesOnUpsert, EmbeddedLongTermIndex):
    """The embedded index, pausing just before or just after its next write: the moments a
    concurrent delete hurt before the fix (session read, documents about to be or just written,
    session not yet marked CONSOLIDATED)."""


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any):
    from handlers import chat_api

    index = PausingIndex()
    deps = ChatDeps(
        memory=wiring.short_term_memory(),
        generator=FakeGenerator(reply=lambda prompt: "grounded answer"),
        embedder=FakeEmbedder(),
        long_term=index,
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    api = Api(chat_api.handler, lambda_context)
    purger = Purger(dynamodb, deps.memory, index, monkeypatch, lambda_context)
    return api, deps, index, purger


def _ended(api: Api, user: str, text: str) -> str:
    sid = api.new_session(user=user)
    api.say(sid, text, user=user)
    assert api.call("POST", f"/sessions/{sid}/end", user=user)[0] == 200
    return sid


def _consolidate(deps: ChatDeps, sid: str, owner: str | None = None) -> str:
    return consolidate_session(
        sid,
        memory=deps.memory,
        summarizer=FakeSummarizer(),
        embedder=deps.embedder,
        index=deps.long_term,
        policy=ConsolidationPolicy(),
        now=datetime.now(UTC),
        owner=owner,
    ).outcome


def _indexed(index: EmbeddedLongTermIndex, sid: str) -> int:
    rows = index._db.execute(
        "SELECT count(*) FROM docs WHERE idx = ? AND session_id = ?", (MEMORY_INDEX, sid)
    )
    return int(rows.fetchone()[0])


@pytest.mark.parametrize("delete", DELETES, ids=list(DELETES))
@pytest.mark.parametrize("purge_during", [True, False], ids=["purged-meanwhile", "purged-after"])
@pytest.mark.parametrize("moment", ["before", "after"], ids=["before-write", "after-write"])
def test_a_delete_while_consolidation_writes_the_index_leaves_nothing_recallable(
    world: Any, delete: str, purge_during: bool, moment: str
) -> None:
    """Failed first (10 of 10 rounds in the bug report): consolidation wrote the index without
    checking the session still existed, and its final conditional write failed silently."""
    api, deps, index, purger = world
    sid = _ended(api, "alice", "We are adopting a rescue greyhound named Biscuit")
    kept = _ended(api, "bob", "Bob's greyhound is called Biscuit too")
    assert _consolidate(deps, kept) == "consolidated"
    seen_during: list[set[str]] = []

    def delete_now() -> None:
        assert (_indexed(index, sid) > 0) == (moment == "after")
        assert DELETES[delete](api, sid)[0] == 204
        # The index still holds the documents, yet nothing of them is recalled any more.
        seen_during.append(recalled(api, "alice", "greyhound Biscuit"))
        if purge_during:
            purger.drain()

    index.hook, index.moment = delete_now, moment
    # A forgotten user's session is still ENDED under the old owner key until the purge marks
    # it: consolidating it then is harmless (nobody can reach that key), the purge cleans up.
    late_forget = delete == "everything" and not purge_during
    assert _consolidate(deps, sid) == ("consolidated" if late_forget else "deleted")
    purger.drain()

    assert seen_during == [set()]
    assert _indexed(index, sid) == 0
    assert recalled(api, "alice", "greyhound Biscuit") == set()
    assert api.call("GET", f"/sessions/{sid}", user="alice")[0] == 404
    assert api.call("GET", "/sessions", user="alice")[1]["sessions"] == []
    purger.drain()  # the /past sessions the checks made and deleted
    assert api.call("GET", "/deletions", user="alice")[1]["complete"] is True
    # Another user's memory of the same words is untouched.
    assert recalled(api, "bob", "greyhound Biscuit") == {kept}


def test_a_redelivered_record_of_a_purged_session_deletes_what_a_crashed_attempt_indexed(
    world: Any,
) -> None:
    """An attempt that indexed and then died (before marking the session) is retried from the
    stream after the session was deleted and purged: the retry removes the orphans, using the
    owner in the stream record since the session item is gone."""
    api, deps, index, purger = world
    sid = _ended(api, "alice", "my passport number is in the blue folder")
    orphan = MemoryDoc(
        doc_key=f"{sid}#summary",
        user_id="alice",
        kind="summary",
        text="passport in the blue folder",
        created_at="2026-11-01T00:00:00.000Z",
        embedding=FakeEmbedder().embed(["passport in the blue folder"])[0],
        session_id=sid,
    )
    index.upsert(MEMORY_INDEX, [orphan])  # what the crashed attempt left
    assert api.call("DELETE", f"/sessions/{sid}", user="alice")[0] == 204
    purger.drain()
    index.upsert(MEMORY_INDEX, [orphan])  # ...written again by a zombie write after the purge
    assert recalled(api, "alice", "passport blue folder") == set()

    assert _consolidate(deps, sid, owner="alice") == "deleted"
    assert _indexed(index, sid) == 0


def test_a_purge_that_runs_out_of_time_hands_over_and_finishes(world: Any) -> None:
    """A very long session is purged in several invocations (each touches the item, which the
    stream turns into the next invocation), never leaving its turns behind."""
    from chatmemory.services.background.forget import PurgePolicy, Purging, purge_session

    api, deps, index, purger = world
    sid = api.new_session(user="alice")
    for i in range(12):
        api.say(sid, f"note {i}", user="alice")
    assert api.call("DELETE", f"/sessions/{sid}", user="alice")[0] == 204
    result = purge_session(
        sid,
        Purging(deps.memory, index, PurgePolicy(turns_per_round=5, reserve_seconds=10)),
        time_left=lambda: 1.0,  # seconds left in this invocation: below the reserve at once
    )
    assert (result.outcome, result.deleted) == ("continued", 5)
    assert len(list(deps.memory.all_turns(sid))) == 7
    purger.drain()  # the touch re-triggers the purge, which finishes
    assert deps.memory.get_session(sid) is None
    assert list(deps.memory.all_turns(sid)) == []


def test_a_forget_whose_purge_record_was_dead_lettered_is_restarted_by_the_redrive(
    world: Any, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweeper restarts stalled session purges; a user purge whose stream retries ran out
    is restarted by the operator's redrive (handlers.redrive), which touches the user item."""
    from handlers import redrive

    api, deps, index, purger = world
    sid = _ended(api, "alice", "a secret about the garden")
    assert api.call("DELETE", "/memories", user="alice")[0] == 204
    for reader in purger._readers:  # the purge's records are lost (dead-lettered)
        reader.records()
    assert api.call("GET", "/deletions", user="alice")[1]["forget_requests_pending"] == 1

    consolidation = wiring.ConsolidationDeps(
        deps.memory, FakeSummarizer(), deps.embedder, index, ConsolidationPolicy()
    )
    monkeypatch.setattr(wiring, "consolidation_deps", lambda: consolidation)
    assert redrive.handler({}, lambda_context)["purges_restarted"] == ["alice"]
    purger.drain()

    assert deps.memory.get_session(sid) is None
    assert api.call("GET", "/deletions", user="alice")[1]["complete"] is True
