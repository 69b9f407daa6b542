"""A chat turn costs the same DynamoDB requests at turn 3 as at turn 60, and sends the ones that
do not depend on each other beside each other."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.domain import MemoryRecord, Turn, message_key
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.conversation.sessions import (
    create_session,
    ensure_session,
    on_current_session,
)
from chatmemory.services.conversation.stacking import StackPolicy
from tests.fakes import FakeEmbedder, FakeGenerator
from tests.memory_fake import InMemoryShortTermMemory


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
            Message(
                user_id="alice",
                session_id=session.session_id,
                content=f"turn {i}",
                client_message_id=f"m{i}",
            ),
        )
        per_turn.append(Counter(calls))
    # BatchGetItem reads the session and the caller's generation together (forgetting).
    assert per_turn[2] == Counter(expected)
    assert per_turn[59] == Counter(expected)


def test_a_message_finds_its_session_reads_it_and_its_callers_state_in_one_request(
    dynamodb: Any,
) -> None:
    """As the message routes do (handlers/messages.py, handlers/stream.py): the alias of the
    id the caller names, the session and the caller's state come in one BatchGetItem; only an
    id that is a client id's (PUT /sessions/{id}) has its session read in a second one."""
    memory = DynamoShortTermMemory(dynamodb, "sessions", "conversations")
    deps = ChatDeps(memory=memory, generator=FakeGenerator())
    server = create_session(memory, "alice")
    ensure_session(memory, "alice", "my-conversation")
    calls = _count_calls(dynamodb)
    for name, reads in ((server.session_id, 1), ("my-conversation", 2)):
        for i in range(3):
            calls.clear()
            result = on_current_session(
                memory,
                "alice",
                name,
                lambda current, text=f"turn {i}": post_message(
                    deps,
                    ChatPolicy(),
                    Message(
                        user_id="alice",
                        session_id=current.session_id,
                        content=text,
                        found=current.found,
                    ),
                ),
            )
            assert result.turn.turn == i + 1
            assert calls == Counter({"BatchGetItem": reads, "Query": 1, "TransactWriteItems": 2})


def test_the_window_query_reads_only_the_last_n_turns(dynamodb: Any) -> None:
    memory = DynamoShortTermMemory(dynamodb, "sessions", "conversations")
    deps = ChatDeps(memory=memory, generator=FakeGenerator())
    session = create_session(memory, "alice")
    for i in range(25):
        post_message(
            deps,
            ChatPolicy(),
            Message(user_id="alice", session_id=session.session_id, content=f"t{i}"),
        )
    limits: list[int] = []
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.Query",
        lambda params, **_: limits.append(params.get("Limit")),
    )
    post_message(
        deps,
        ChatPolicy(window_turns=3),
        Message(user_id="alice", session_id=session.session_id, content="last"),
    )
    # Read before the message is written: the window and one more (a message waiting to be
    # answered with it), as the read after the write held the message, the window and one more.
    assert limits == [3 + StackPolicy().read_ahead - 1]
    limits.clear()
    post_message(
        deps,
        ChatPolicy(window_turns=3, stack=StackPolicy(enabled=False)),
        Message(user_id="alice", session_id=session.session_id, content="last, alone"),
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
            Message(
                user_id="alice",
                session_id=session.session_id,
                content=f"t{i}",
                client_message_id=f"m{i}",
            ),
        )
    stored = memory.get_session(session.session_id)
    assert stored is not None
    assert stored.recent_messages == {message_key(f"m{i}"): i + 1 for i in range(7, 12)}
    assert [stored.turn_of(f"m{i}") for i in (6, 7, 11)] == [None, 8, 12]


def test_the_profile_is_one_bounded_query_and_one_consistent_read_whatever_is_stored(
    dynamodb: Any,
) -> None:
    """A user with many records, most of them not the profile's (a client's items, events,
    summaries), costs a turn the same requests as one with a few: the profile index holds only
    what the block may show, and its Query reads at most `candidates` of them."""
    from chatmemory.adapters.embedded import EmbeddedLongTermIndex
    from chatmemory.domain import MemoryRecord
    from chatmemory.schema import RecordOrigin, RecordType
    from tests.fakes import FakeEmbedder

    memory = DynamoShortTermMemory(dynamodb, "sessions", "conversations")
    deps = ChatDeps(
        memory=memory,
        generator=FakeGenerator(),
        embedder=FakeEmbedder(),
        long_term=EmbeddedLongTermIndex(),
    )
    policy = ChatPolicy(window_turns=4, stack=StackPolicy(enabled=False))

    def stored(user: str, n: int, category: str, **kw: Any) -> None:
        for i in range(n):
            at = f"2026-01-01T00:00:{i % 60:02d}.{i:03d}Z"
            memory.put_record(
                MemoryRecord(
                    f"{category}-{i:04d}", user, RecordType.FACT, f"I am fact {i}", at, at,
                    RecordOrigin.STATED, category=category, **kw,
                )
            )  # fmt: skip

    stored("few", 3, "health")
    stored("many", 300, "health")
    stored("many", 200, "event")
    stored("many", 200, "", namespace=("agent", "notes"))
    limits: list[int] = []
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.Query",
        lambda params, **_: limits.append(params.get("Limit")) if params.get("IndexName") else None,
    )
    counts = []
    for user in ("few", "many"):
        session = create_session(memory, user)
        calls = _count_calls(dynamodb)
        post_message(
            deps, policy, Message(user_id=user, session_id=session.session_id, content="hi!")
        )
        counts.append(Counter(calls))
    # The session and the generation; the window and the profile; the profile's liveness.
    assert (
        counts[0] == counts[1] == Counter({"BatchGetItem": 2, "Query": 2, "TransactWriteItems": 1})
    )
    assert limits == [policy.profile.candidates] * 2


class _WindowAfterProfile(InMemoryShortTermMemory):
    """The window read waits (a bounded while) for the profile's candidates read to start:
    a turn that reads them one after the other never has both at once."""

    def __init__(self) -> None:
        super().__init__()
        self.profile_started = threading.Event()
        self.window_saw_it: list[bool] = []

    def profile_records(self, owner: str, limit: int) -> list[MemoryRecord]:
        self.profile_started.set()
        return super().profile_records(owner, limit)

    def recent_turns(self, session_id: str, count: int) -> list[Turn]:
        self.window_saw_it.append(self.profile_started.wait(timeout=10))
        return super().recent_turns(session_id, count)


@pytest.mark.parametrize("stack", [True, False])
def test_the_profile_is_read_beside_the_turns_write_and_window_not_after_them(
    stack: bool,
) -> None:
    memory = _WindowAfterProfile()
    deps = ChatDeps(
        memory=memory,
        generator=FakeGenerator(),
        embedder=FakeEmbedder(),
        long_term=EmbeddedLongTermIndex(),
    )
    session = create_session(memory, "alice")
    result = post_message(
        deps,
        ChatPolicy(stack=StackPolicy(enabled=stack)),
        Message(
            user_id="alice",
            session_id=session.session_id,
            content="What should I pack for the trip to Lisbon?",
        ),
    )
    assert result.turn.response and result.profile is not None
    assert memory.window_saw_it == [True]


class _EmbedderSeen(FakeEmbedder):
    """Records every text it embeds, and when the message itself starts being embedded."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.embedding_started = threading.Event()
        self.texts: list[str] = []

    def embed(self, texts: Any) -> list[list[float]]:
        self.texts += texts
        if self.message in texts:
            self.embedding_started.set()
        return super().embed(texts)


class _WindowAfterEmbedding(InMemoryShortTermMemory):
    """The turn's write and its window read wait (a bounded while) for the message's embedding
    to start: a turn that embeds it after them never has both at once."""

    def __init__(self, embedder: _EmbedderSeen) -> None:
        super().__init__()
        self.embedder = embedder
        self.saw_it: list[bool] = []

    def recent_turns(self, session_id: str, count: int) -> list[Turn]:
        self.saw_it.append(self.embedder.embedding_started.wait(timeout=10))
        return super().recent_turns(session_id, count)


@pytest.mark.parametrize("stack", [True, False])
def test_auto_recall_embeds_the_message_beside_the_turns_write_and_window_not_after_them(
    stack: bool,
) -> None:
    message = "What should I pack for the trip to Lisbon?"
    embedder = _EmbedderSeen(message)
    memory = _WindowAfterEmbedding(embedder)
    index = EmbeddedLongTermIndex()
    deps = ChatDeps(memory=memory, generator=FakeGenerator(), embedder=embedder, long_term=index)
    session = create_session(memory, "alice")
    result = post_message(
        deps,
        ChatPolicy(stack=StackPolicy(enabled=stack)),
        Message(user_id="alice", session_id=session.session_id, content=message),
    )
    assert result.recalled is not None and result.recalled.query == message
    assert memory.saw_it == [True]
    assert embedder.texts.count(message) == 1  # searched once, not again with the prompt


def test_a_follow_up_is_searched_after_the_window_with_the_words_it_borrows() -> None:
    """A follow-up's query needs the previous message: its search is not started before the
    window is read, and borrows from it as before."""
    memory = InMemoryShortTermMemory()
    embedder = _EmbedderSeen("what about May?")
    deps = ChatDeps(
        memory=memory,
        generator=FakeGenerator(),
        embedder=embedder,
        long_term=EmbeddedLongTermIndex(),
    )
    session = create_session(memory, "alice")
    for text in ("Tell me about the trip to Lisbon we planned", "what about May?"):
        result = post_message(
            deps,
            ChatPolicy(),
            Message(user_id="alice", session_id=session.session_id, content=text),
        )
    assert result.recalled is not None
    assert result.recalled.query.startswith("Tell me about the trip to Lisbon")
    assert result.recalled.query.endswith("what about May?")
    assert "what about May?" not in embedder.texts  # never searched as it stands
