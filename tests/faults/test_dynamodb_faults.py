"""DynamoDB throttling, lost answers and cancelled transactions during a chat turn, on DynamoDB
Local through a client with standard retries (as wiring.aws_client builds it); the faults are
injected by the client's own event hooks (tests/faults/inject.py)."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.errors import ModelUnavailable
from chatmemory.services.conversation.chat import (
    ChatDeps,
    ChatPolicy,
    Message,
    TurnResult,
    post_message,
)
from chatmemory.services.conversation.sessions import create_session
from chatmemory.services.conversation.stacking import StackPolicy
from tests.fakes import FakeGenerator
from tests.faults.conftest import Store
from tests.faults.inject import LOST, DynamoFaults, cancelled, error, throttled

pytestmark = pytest.mark.integration


# Stacked messages on (the default: a message is written, then its answer, two transactions) and
# off (one transaction after the model call): the same guarantees either way.
STACKING = [pytest.param(True, id="stacked"), pytest.param(False, id="unstacked")]


def _say(deps: ChatDeps, session_id: str, content: str, cmid: str | None = None) -> TurnResult:
    return post_message(
        deps,
        ChatPolicy(stack=StackPolicy(enabled=deps.stacked)),
        Message(user_id="alice", session_id=session_id, content=content, client_message_id=cmid),
    )


def _stored(store: Store, session_id: str) -> list[tuple[int, str, str | None, bool]]:
    """(turn, input, client_message_id, pending) of every stored turn; and the session's counter
    must agree with them."""
    turns = store.turns(session_id)
    assert store.session(session_id)["num_turns"] == len(turns)
    return [
        (t["turn"], t["input"], t.get("client_message_id"), bool(t.get("pending"))) for t in turns
    ]


@pytest.fixture(params=STACKING)
def chat(store: Store, request: pytest.FixtureRequest) -> tuple[ChatDeps, FakeGenerator, str]:
    model = FakeGenerator()
    session = create_session(store.memory, "alice")
    deps = ChatDeps(memory=store.memory, generator=model)
    deps.stacked = request.param  # type: ignore[attr-defined]
    return deps, model, session.session_id


def _writes(deps: ChatDeps) -> int:
    """Transactions per answered message."""
    return 2 if deps.stacked else 1  # type: ignore[attr-defined]


def test_throttled_session_reads_and_window_queries_are_retried_and_the_turn_stored_once(
    store: Store, chat: Any, no_backoff: list[float]
) -> None:
    deps, model, sid = chat
    faults = DynamoFaults(store.client)
    faults.fail("BatchGetItem", throttled(), throttled("ThrottlingException"))
    faults.fail("Query", throttled(), throttled("RequestLimitExceeded"))

    result = _say(deps, sid, "hello", "m-1")

    assert result.turn.turn == 1 and not result.replayed
    assert len(faults.attempts["BatchGetItem"]) == 3 and len(faults.attempts["Query"]) == 3
    assert len(no_backoff) == 4  # botocore waited before each retry
    assert model.calls == 1
    assert _stored(store, sid) == [(1, "hello", "m-1", False)]


def test_a_throttled_transaction_is_retried_by_the_sdk_with_one_idempotency_token(
    store: Store, chat: Any, no_backoff: list[float]
) -> None:
    deps, model, sid = chat
    faults = DynamoFaults(store.client)
    faults.fail(
        "TransactWriteItems",
        throttled(),
        throttled("ThrottlingException"),
        error("InternalServerError", "Internal server error", status=500),
    )

    result = _say(deps, sid, "hello", "m-1")

    attempts = faults.attempts["TransactWriteItems"]
    assert len(attempts) == 4 + _writes(deps) - 1
    # The same ClientRequestToken on every attempt: DynamoDB applies the transaction once.
    assert len({a["ClientRequestToken"] for a in attempts[:4]}) == 1
    assert result.turn.turn == 1 and model.calls == 1
    assert _stored(store, sid) == [(1, "hello", "m-1", False)]


def test_a_transaction_whose_answer_was_lost_is_not_written_twice(
    store: Store, chat: Any, no_backoff: list[float]
) -> None:
    """No client_message_id: only the transaction's idempotency token prevents a second turn
    when DynamoDB applied the write but the client timed out reading the answer."""
    deps, model, sid = chat
    faults = DynamoFaults(store.client)
    faults.fail("TransactWriteItems", LOST)

    first = _say(deps, sid, "written once")
    second = _say(deps, sid, "and the next one")

    attempts = faults.attempts["TransactWriteItems"]
    # The lost one and its retry, then the other writes of both messages.
    assert len(attempts) == 2 + 2 * _writes(deps) - 1
    assert attempts[0]["ClientRequestToken"] == attempts[1]["ClientRequestToken"]
    assert (first.turn.turn, second.turn.turn) == (1, 2)
    assert _stored(store, sid) == [
        (1, "written once", None, False),
        (2, "and the next one", None, False),
    ]


def test_cancelled_transactions_are_retried_as_lost_races_without_calling_the_model_again(
    store: Store, chat: Any
) -> None:
    deps, model, sid = chat
    _say(deps, sid, "first", "m-1")
    faults = DynamoFaults(store.client)
    faults.fail(
        "TransactWriteItems",
        cancelled("None", "TransactionConflict"),
        cancelled("None", "ThrottlingError"),
        cancelled("None", "ConditionalCheckFailed"),
    )

    result = _say(deps, sid, "second", "m-2")

    assert result.turn.turn == 2 and not result.replayed
    assert len(faults.attempts["TransactWriteItems"]) == 4 + _writes(deps) - 1
    assert model.calls == 2  # one per message: a write retry reuses the answer
    assert _stored(store, sid) == [(1, "first", "m-1", False), (2, "second", "m-2", False)]


def test_a_failed_model_call_keeps_the_message_through_a_conflict_and_the_retry_completes_it(
    store: Store, chat: Any, no_backoff: list[float]
) -> None:
    deps, model, sid = chat
    model.fail_next = 1
    faults = DynamoFaults(store.client)
    faults.fail("TransactWriteItems", cancelled("None", "TransactionConflict"))

    with pytest.raises(ModelUnavailable):
        _say(deps, sid, "remember the blue door", "m-1")
    assert _stored(store, sid) == [(1, "remember the blue door", "m-1", True)]

    # The completion of the pending turn (a transaction checking the session too) is throttled.
    faults.fail("TransactWriteItems", throttled())
    result = _say(deps, sid, "remember the blue door", "m-1")

    assert result.turn.turn == 1 and result.turn.response.startswith("reply #2")
    # The message's write (a conflict, then written), then the completion and its retry.
    assert len(faults.attempts["TransactWriteItems"]) == 4
    assert model.calls == 2
    assert _stored(store, sid) == [(1, "remember the blue door", "m-1", False)]
    assert _say(deps, sid, "remember the blue door", "m-1").replayed
    assert model.calls == 2


@pytest.mark.parametrize(
    ("operation", "kept"),
    [
        ("BatchGetItem", []),  # the session could not be read: nothing to write to
        # The window, read before a message answered alone is written (its model is asked
        # beside the write: services/conversation/turn/stacked.py): nothing written yet.
        ("Query", []),
        ("TransactWriteItems", []),  # the write itself
    ],
)
def test_throttling_past_the_sdk_retries_answers_503_and_a_retry_stores_the_turn_once(
    store: Store,
    chat: Any,
    no_backoff: list[float],
    monkeypatch: pytest.MonkeyPatch,
    lambda_context: Any,
    operation: str,
    kept: list[Any],
) -> None:
    """Failed first: botocore's error after its retries was an unexpected 500 ("internal
    error"); the DynamoDB adapter now reports it as short_term_memory_unavailable (503)."""
    from handlers import chat_api
    from tests.unit.test_chat_api import Api

    deps, model, sid = chat
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    api = Api(chat_api.handler, lambda_context)
    faults = DynamoFaults(store.client)
    faults.fail(operation, *[throttled()] * 20)
    body = {"content": "are you there?", "client_message_id": "m-1"}

    status, answer = api.call("POST", f"/sessions/{sid}/messages", body)

    assert status == 503, answer
    assert answer["error"]["code"] == "short_term_memory_unavailable"
    assert "retry" in answer["error"]["message"]
    assert 1 < len(faults.attempts[operation]) < 20  # retried, then given up
    faults.recover()
    assert _stored(store, sid) == kept

    status, answer = api.call("POST", f"/sessions/{sid}/messages", body)

    assert status == 200 and answer["turn"]["turn"] == 1
    assert _stored(store, sid) == [(1, "are you there?", "m-1", False)]
