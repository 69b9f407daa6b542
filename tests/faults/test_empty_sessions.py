"""Sessions with nothing left to summarize, on DynamoDB Local (which, like DynamoDB, refuses a
key condition `BETWEEN a AND b` with a > b): every way a session can end without a turn, and an
import summarized to its end, is consolidated, not FAILED.

Failed first: the summary read the turns after `summary_through_turn` up to `num_turns`, which
for a session without a turn is `BETWEEN 1 AND 0`; every such session ended FAILED, and the
redrive repeated the failure (moto, and the in-memory fake, answered an empty list)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.api_models import ImportDocument
from chatmemory.schema import SessionStatus
from chatmemory.services.background.consolidation import ConsolidationPolicy, consolidate_session
from chatmemory.services.background.maintenance import sweep_idle_sessions
from chatmemory.services.conversation import sessions
from tests.fakes import FakeEmbedder, FakeSummarizer
from tests.faults.conftest import Store

pytestmark = pytest.mark.integration


def _consolidated(store: Store, session_id: str) -> str:
    result = consolidate_session(
        session_id,
        memory=store.memory,
        summarizer=FakeSummarizer(),
        embedder=FakeEmbedder(),
        index=EmbeddedLongTermIndex(),
        policy=ConsolidationPolicy(max_attempts=1),
        now=datetime.now(UTC),
    )
    session = store.memory.get_session(session_id)
    assert session is not None
    assert session.status == SessionStatus.CONSOLIDATED, (result, session.failure_reason)
    return result.outcome


def _empty(store: Store) -> str:
    return sessions.create_session(store.memory, "alice").session_id


def test_a_session_ended_without_a_turn_is_consolidated(store: Store) -> None:
    sid = _empty(store)
    sessions.end_session(store.memory, "alice", sid)
    assert _consolidated(store, sid) == "consolidated"


def test_sessions_ended_by_end_previous_and_by_continue_from_are_consolidated(
    store: Store,
) -> None:
    first, second = _empty(store), _empty(store)
    third = sessions.create_session(store.memory, "alice", end_previous=True).session_id
    sessions.create_session(store.memory, "alice", continue_from=third)
    for sid in (first, second, third):
        _consolidated(store, sid)


def test_a_session_the_sweeper_ended_without_a_turn_is_consolidated(store: Store) -> None:
    sid = _empty(store)
    later = datetime.now(UTC) + timedelta(days=1)
    assert sid in sweep_idle_sessions(store.memory, now=later, idle_minutes=30)
    _consolidated(store, sid)


@pytest.mark.parametrize("through", [1, 5])
def test_an_import_summarized_to_its_end_is_consolidated(store: Store, through: int) -> None:
    document = ImportDocument.model_validate(
        {
            "session": {
                "running_summary": "We planned the garden.",
                "summary_through_turn": through,
            },
            "messages": [{"input": "plant tomatoes", "response": "In May."}],
        }
    )
    sid = sessions.import_session(store.memory, "alice", document.imported()).session_id
    sessions.end_session(store.memory, "alice", sid)
    _consolidated(store, sid)
