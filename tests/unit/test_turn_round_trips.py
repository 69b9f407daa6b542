"""A chat turn costs the same DynamoDB requests at turn 3 as at turn 60."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.domain import message_key
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, post_message
from chatmemory.services.conversation.sessions import create_session
from chatmemory.services.conversation.stacking import StackPolicy
from tests.fakes import FakeGenerator


def _count_calls(client: Any) -> Counter[str]:
    calls: Counter[str] = Counter()

    def record(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    client.meta.events.register("before-call.dynamodb.*", record)
    return calls


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        # The message is written before it is answered (so that messages sent meanwhile are
        # answered with it), and the answer after: one write more than without stacking.
        (True, {"BatchGetItem": 1, "Query": 1, "TransactWriteItems": 2}),
        (False, {"BatchGetItem": 1, "Query": 1, "TransactWriteItems": 1}),
    ],
)
def test_each_turn_is_the_same_requests_however_long_the_session(
    dynamodb: Any, stack: bool, expected: dict[str, int]
) -> None:
    memory = DynamoShortTermMemory(dynamodb, "sessions", "conversations")
    deps = ChatDeps(memory=memory, generator=FakeGenerator())
    policy = ChatPolicy(window_turns=4, stack=StackPolicy(enabled=stack))
    session = create_session(memory, "alice")
    calls = _count_calls(dynamodb)
    per_turn: list[Counter[str]] = []
    for i in range(60):
        calls.clear()
        post_message(
            deps,
            policy,
            user_id="alice",
            session_id=session.session_id,
            content=f"turn {i}",
            client_message_id=f"m{i}",
        )
        per_turn.append(Counter(calls))
    # BatchGetItem reads the session and the caller's generation together (forgetting).
    assert per_turn[2] == Counter(expected)
    assert per_turn[59] == Counter(expected)


def test_the_window_query_reads_only_the_last_n_turns(dynamodb: Any) -> None:
    memory = DynamoShortTermMemory(dynamodb, "sessions", "conversations")
    deps = ChatDeps(memory=memory, generator=FakeGenerator())
    session = create_session(memory, "alice")
    for i in range(25):
        post_message(
            deps, ChatPolicy(), user_id="alice", session_id=session.session_id, content=f"t{i}"
        )
    limits: list[int] = []
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.Query",
        lambda params, **_: limits.append(params.get("Limit")),
    )
    post_message(
        deps,
        ChatPolicy(window_turns=3),
        user_id="alice",
        session_id=session.session_id,
        content="last",
    )
    # The window, the message itself and one more: a message that arrived meanwhile.
    assert limits == [3 + StackPolicy().read_ahead]
    limits.clear()
    post_message(
        deps,
        ChatPolicy(window_turns=3, stack=StackPolicy(enabled=False)),
        user_id="alice",
        session_id=session.session_id,
        content="last, alone",
    )
    assert limits == [3]


def test_session_remembers_a_bounded_number_of_message_ids(dynamodb: Any) -> None:
    memory = DynamoShortTermMemory(dynamodb, "sessions", "conversations")
    deps = ChatDeps(memory=memory, generator=FakeGenerator())
    session = create_session(memory, "alice")
    policy = ChatPolicy(keep_message_ids=5)
    for i in range(12):
        post_message(
            deps,
            policy,
            user_id="alice",
            session_id=session.session_id,
            content=f"t{i}",
            client_message_id=f"m{i}",
        )
    stored = memory.get_session(session.session_id)
    assert stored is not None
    assert stored.recent_messages == {message_key(f"m{i}"): i + 1 for i in range(7, 12)}
    assert [stored.turn_of(f"m{i}") for i in (6, 7, 11)] == [None, 8, 12]
