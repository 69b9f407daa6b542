"""Parallel messages against a real DynamoDB Local (requests really interleave, unlike moto's
serialized client): every accepted message is stored exactly once, turn numbers are contiguous,
and each client_message_id appears once."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from chatmemory.clock import utc_now
from chatmemory.errors import Conflict, ModelUnavailable, SessionEnded
from chatmemory.ports import GenerationOptions, Piece, TextGenerator
from chatmemory.services.conversation.chat import (
    ChatDeps,
    ChatPolicy,
    Message,
    TurnResult,
    post_message,
)
from chatmemory.services.conversation.sessions import create_session, end_session
from chatmemory.services.conversation.turns import ClientTurn, Stored, TurnWriting, store_turn
from tests.fakes import FakeGenerator
from tests.faults.conftest import Store

pytestmark = pytest.mark.integration


def _once(deps: ChatDeps, user: str, session_id: str, content: str, cmid: str) -> TurnResult:
    return post_message(
        deps,
        ChatPolicy(),
        Message(user_id=user, session_id=session_id, content=content, client_message_id=cmid),
    )


def _say(deps: ChatDeps, user: str, session_id: str, content: str, cmid: str) -> TurnResult:
    """A client that retries a 409 "busy" answer with the same client_message_id."""
    for _ in range(20):
        try:
            return _once(deps, user, session_id, content, cmid)
        except Conflict:
            continue
    raise AssertionError(f"{cmid} was refused 20 times")


def _in_parallel(workers: int, jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run the jobs on `workers` threads released together; their results in job order."""
    start = threading.Barrier(workers)

    def run(chunk: list[Callable[[], Any]]) -> list[Any]:
        start.wait()
        return [job() for job in chunk]

    chunks = [jobs[i::workers] for i in range(workers)]
    with ThreadPoolExecutor(workers) as pool:
        done = list(pool.map(run, chunks))
    results: list[Any] = [None] * len(jobs)
    for i, chunk_results in enumerate(done):
        results[i::workers] = chunk_results
    return results


def _assert_contiguous(
    store: Store, session_id: str, expected_inputs: set[str], *, pending_ok: bool = False
) -> None:
    turns = store.turns(session_id)
    assert [t["turn"] for t in turns] == list(range(1, len(turns) + 1))
    assert Counter(t["input"] for t in turns) == Counter(expected_inputs)  # each exactly once
    cmids = [t["client_message_id"] for t in turns]
    assert len(cmids) == len(set(cmids))
    assert pending_ok or not any(t.get("pending") for t in turns)
    # Each message answered once: by its own response, or by the later turn that covered it.
    answered = {t["turn"] for t in turns if t.get("response")}
    for turn in turns:
        if turn.get("pending"):
            continue
        assert bool(turn.get("response")) != ("answered_by" in turn), turn
        assert "answered_by" not in turn or turn["answered_by"] in answered
    assert store.session(session_id)["num_turns"] == len(turns)


def test_eight_threads_of_ten_messages_on_one_session_are_stored_once_in_order(
    store: Store,
) -> None:
    deps = ChatDeps(memory=store.memory, generator=FakeGenerator())
    sid = create_session(store.memory, "alice").session_id

    def sender(thread: int) -> Callable[[], list[TurnResult]]:
        return lambda: [
            _say(deps, "alice", sid, f"t{thread} m{i}", f"t{thread}-{i}") for i in range(10)
        ]

    results = [r for batch in _in_parallel(8, [sender(t) for t in range(8)]) for r in batch]

    expected = {f"t{t} m{i}" for t in range(8) for i in range(10)}
    _assert_contiguous(store, sid, expected)
    # Each reply names the turn its message was stored as.
    stored = {t["client_message_id"]: t["turn"] for t in store.turns(sid)}
    assert {r.turn.client_message_id: r.turn.turn for r in results} == stored
    # A thread's own messages keep their order.
    for t in range(8):
        mine = [stored[f"t{t}-{i}"] for i in range(10)]
        assert mine == sorted(mine)


def test_parallel_messages_on_many_sessions_stay_in_their_own_session(store: Store) -> None:
    deps = ChatDeps(memory=store.memory, generator=FakeGenerator())
    users = [f"user-{i % 4}" for i in range(12)]
    sids = [create_session(store.memory, user).session_id for user in users]
    jobs = [
        (lambda s=s, u=u, i=i: _say(deps, u, sids[s], f"s{s} m{i}", f"s{s}-{i}"))
        for i in range(5)
        for s, u in enumerate(users)
    ]

    _in_parallel(8, jobs)

    for s, sid in enumerate(sids):
        _assert_contiguous(store, sid, {f"s{s} m{i}" for i in range(5)})
        assert {t["user_id"] for t in store.turns(sid)} == {users[s]}


def test_the_same_message_sent_twice_at_once_is_stored_once(store: Store) -> None:
    deps = ChatDeps(memory=store.memory, generator=FakeGenerator())
    sid = create_session(store.memory, "alice").session_id
    jobs = [
        (lambda i=i: _say(deps, "alice", sid, f"double {i}", f"d-{i}"))
        for i in range(6)
        for _ in range(2)
    ]

    results = _in_parallel(8, jobs)

    _assert_contiguous(store, sid, {f"double {i}" for i in range(6)})
    for i in range(6):
        first, second = results[2 * i], results[2 * i + 1]
        assert first.turn.turn == second.turn.turn
        assert first.turn.response == second.turn.response  # the stored answer, both times
        assert first.replayed or second.replayed


def test_messages_racing_with_the_end_of_the_session_are_stored_only_if_accepted(
    store: Store,
) -> None:
    deps = ChatDeps(memory=store.memory, generator=FakeGenerator())
    sid = create_session(store.memory, "alice").session_id
    accepted: list[str] = []
    refused: list[str] = []
    lock = threading.Lock()

    def send(i: int) -> None:
        try:
            _say(deps, "alice", sid, f"late {i}", f"l-{i}")
        except SessionEnded:
            with lock:
                refused.append(f"late {i}")
            return
        with lock:
            accepted.append(f"late {i}")

    jobs: list[Callable[[], Any]] = [lambda i=i: send(i) for i in range(24)]
    jobs.insert(8, lambda: end_session(store.memory, "alice", sid))

    _in_parallel(6, jobs)

    assert len(accepted) + len(refused) == 24
    # A refused message was either refused before it was written, or written (stacked messages
    # are written before they are answered) and kept unanswered, as a message whose model call
    # failed is: never answered after the end.
    kept = [t for t in store.turns(sid) if t.get("pending")]
    assert all(t["input"] in refused and not t.get("response") for t in kept)
    _assert_contiguous(store, sid, set(accepted) | {t["input"] for t in kept}, pending_ok=True)
    assert all(not t.get("pending") for t in store.turns(sid) if t["input"] in accepted)
    assert store.session(sid)["status"] == "ENDED"


class _HeldModel(TextGenerator):
    """A generator that fails its first call; each later call is held until some retry is
    waiting on the claim (its `sleep` ran), so the retries really overlap with the answer."""

    def __init__(self) -> None:
        self.inner = FakeGenerator(fail_next=1)
        self.name, self.context_tokens = "held", 512
        self.waiting = threading.Event()
        self.calls = 0
        self._failed = False

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        self.calls += 1
        if not self._failed:
            self._failed = True
            return self.inner.pieces(prompt, options, stream=stream)
        assert self.waiting.wait(10), "no retry ever waited on the claim"
        return self.inner.pieces(prompt, options, stream=stream)

    def sleep(self, seconds: float) -> None:
        self.waiting.set()
        time.sleep(min(seconds, 0.05))


def test_concurrent_retries_of_a_pending_message_call_the_model_once_and_all_get_the_answer(
    store: Store,
) -> None:
    """On DynamoDB Local (the claim's conditional write for real): one of eight retries claims
    the message and calls the model, held until another is waiting; the others wait for its
    answer and return the stored turn. (The same with the fake, counted per thread, is in
    tests/unit/test_stacked_messages.py.)"""
    model = _HeldModel()
    deps = ChatDeps(memory=store.memory, generator=model, sleep=model.sleep)
    sid = create_session(store.memory, "alice").session_id
    with pytest.raises(ModelUnavailable):
        _once(deps, "alice", sid, "my cat is called Tom", "m-1")

    results = _in_parallel(
        8, [lambda: _once(deps, "alice", sid, "my cat is called Tom", "m-1")] * 8
    )

    assert model.calls == 2  # the failed call, then one answer for all eight retries
    turns = store.turns(sid)
    assert len(turns) == 1 and not turns[0].get("pending")
    assert {r.turn.turn for r in results} == {1}
    assert {r.turn.response for r in results} == {turns[0]["response"]}
    assert all(r.replayed for r in results)


def _store(store: Store, session_id: str, content: str, cmid: str) -> Stored:
    """A client of the store-only route that retries a 409 "busy" with the same id."""
    for _ in range(20):
        try:
            return store_turn(
                store.memory,
                ClientTurn(content, f"answer to {content}", cmid),
                TurnWriting(utc_now, lambda _: None),
                user_id="alice",
                session_id=session_id,
                max_input_chars=4000,
            )
        except Conflict:
            continue
    raise AssertionError(f"{cmid} was refused 20 times")


def test_stored_turns_racing_with_chat_turns_and_their_own_retries_are_stored_once(
    store: Store,
) -> None:
    """Agents storing turns (POST /turns) follow the chat route's rules: threads of stored
    turns, each sent twice at once, interleaved with chat turns on the same session."""
    deps = ChatDeps(memory=store.memory, generator=FakeGenerator())
    sid = create_session(store.memory, "alice").session_id
    jobs: list[Callable[[], Any]] = []
    for i in range(12):
        jobs += [(lambda i=i: _store(store, sid, f"stored {i}", f"s-{i}"))] * 2
        jobs.append(lambda i=i: _say(deps, "alice", sid, f"chat {i}", f"c-{i}"))

    results = _in_parallel(6, jobs)

    expected = {f"stored {i}" for i in range(12)} | {f"chat {i}" for i in range(12)}
    _assert_contiguous(store, sid, expected)
    origins = Counter(t.get("origin", "chat") for t in store.turns(sid))
    assert origins == {"client": 12, "chat": 12}
    for i in range(12):
        first, second = results[3 * i], results[3 * i + 1]
        assert first.turn.turn == second.turn.turn
        assert first.replayed or second.replayed
    # Every chat turn is answered, and no chat message costs more than two model calls. Chat
    # turns that overlap are stacked (docs/concepts/stacked-messages.md): the later one's answer
    # covers the earlier, which then has answered_by; an answer whose call began before a newer
    # message arrived is dropped unwritten and the newer request answers both. A message
    # answered alone asks the model beside its own write, and that call is dropped unshown when
    # another turn took its number meanwhile (a stored turn here); the message then goes the
    # stack's way. So each answer is one call, and a call more than the answers is a dropped
    # one: at most one of each kind per chat message.
    chat = [t for t in store.turns(sid) if t.get("origin", "chat") == "chat"]
    answers = {t["turn"] for t in chat if t.get("response")}
    assert all(t["turn"] in answers or t.get("answered_by") in answers for t in chat)
    assert len(answers) <= deps.generator.calls <= 2 * len(chat)  # type: ignore[attr-defined]


def test_ten_identical_statements_at_once_leave_one_active_record(store: Store) -> None:
    """On DynamoDB Local, ten threads state the same words at once (POST /memories/records
    without a record_id): each answers the one record that holds them. Failed before (issue 42):
    statements that read the records before any was written each wrote one (two ACTIVE records
    in local mode)."""
    from chatmemory.adapters.embedded import EmbeddedLongTermIndex
    from chatmemory.services.profile import profile
    from tests.fakes import FakeEmbedder

    index, owner = EmbeddedLongTermIndex(), f"cellist-{time.monotonic_ns()}"
    text = "I play the cello on Sundays"

    def state() -> str:
        return profile.state_record(
            owner,
            text,
            profile.Editing(store.memory, FakeEmbedder(), index, utc_now()),
            record_type=None,
        ).record_id

    ids = _in_parallel(10, [state] * 10)

    records = list(store.memory.records_of_owner(owner))
    active = [r.record_id for r in records if r.status == "ACTIVE" and r.text == text]
    assert len(active) == 1, records
    assert set(ids) == set(active)
