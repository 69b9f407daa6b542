"""The migration of a deployment's shared S3 Vectors memory index to one index per owner
(services/background/migrate.py, handlers/migrate_memory.py), on the in-memory S3 Vectors and
moto's DynamoDB: what was live is copied as it was, what was deleted stays deleted, a run that
stops resumes from its token, a deletion racing the copy leaves nothing, and running it again
changes nothing."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from chatmemory import wiring
from chatmemory.adapters.s3vectors import S3VectorsLongTermIndex
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.background.migrate import migrate_shared_index
from chatmemory.services.conversation.chat import ChatDeps
from tests.purging import recalled
from tests.s3vectors_fake import FakeS3Vectors, Index
from tests.unit.test_s3vectors_adapter import (
    BUCKET,
    _consolidate,
    _ended,
    services_on_s3vectors,
)


@pytest.fixture
def legacy(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any):
    """A deployment as it was before per-user indexes: alice's and bob's consolidated sessions
    and stated records all in one shared memory index of the stack's bucket. They are written by
    the adapter (into per-user indexes) and then moved into the shared index, keys and metadata
    as they were, which is what the older adapter wrote."""
    api, deps, index, fake, purger = services_on_s3vectors(
        dynamodb, monkeypatch, lambda_context, shared_index=True
    )
    sessions = {
        "alice-dog": _ended(api, "alice", "We are adopting a rescue greyhound named Biscuit"),
        "alice-job": _ended(api, "alice", "I work as a nurse at the children's hospital"),
        "alice-trip": _ended(api, "alice", "We planned a trip to Lisbon in May"),
        "bob-stamps": _ended(api, "bob", "I collect stamps from Portugal"),
    }
    for sid in sessions.values():
        assert _consolidate(deps, sid) == "consolidated"
    status, _ = api.call("POST", "/memories/records", {"text": "I prefer aisle seats on trains."})
    assert status == 201
    shared = fake.indexes[MEMORY_INDEX]
    for (bucket, name), owners in fake.user_indexes().items():
        shared.vectors.update(owners.vectors)
        del fake.buckets[bucket][name]
    assert fake.user_indexes() == {} and len(shared.vectors) > 10
    return api, deps, index, fake, purger, sessions


def _owners_vectors(fake: FakeS3Vectors) -> dict[str, tuple[list[float], dict[str, Any]]]:
    return {k: v for found in fake.user_indexes().values() for k, v in found.vectors.items()}


def _run(index: S3VectorsLongTermIndex, deps: ChatDeps, **kwargs: Any) -> Any:
    return migrate_shared_index(
        index, deps.memory, **{"token": None, "time_left": lambda: math.inf, **kwargs}
    )


def test_live_entries_move_to_their_owners_indexes_as_they_were_and_recall_finds_them(
    legacy: Any,
) -> None:
    api, deps, index, fake, _, sessions = legacy
    before = copy.deepcopy(fake.indexes[MEMORY_INDEX].vectors)
    # Nothing recalled from the shared index: reads go to the owners' own indexes.
    assert recalled(api, "alice", "greyhound Biscuit") == set()

    progress = _run(index, deps, page_size=4)

    assert progress.done and progress.skipped == 0 and progress.copied == len(before)
    assert progress.pages == math.ceil(len(before) / 4)
    assert _owners_vectors(fake) == before  # key, vector and metadata, each as it was
    for (_, name), found in fake.user_indexes().items():
        owners = {metadata["user_id"] for _, metadata in found.vectors.values()}
        assert len(owners) == 1 and name == index.location(MEMORY_INDEX, owners.pop())[1]
    assert sessions["alice-dog"] in recalled(api, "alice", "greyhound Biscuit")
    assert recalled(api, "bob", "greyhound Biscuit") <= {sessions["bob-stamps"]}


def test_a_run_that_stops_resumes_from_its_token_and_a_second_pass_changes_nothing(
    legacy: Any,
) -> None:
    _, deps, index, fake, _, _ = legacy
    total = len(fake.indexes[MEMORY_INDEX].vectors)
    clock = iter([100.0, 5.0])  # time enough for one page, then short of the reserve

    first = _run(index, deps, page_size=3, time_left=lambda: next(clock))

    assert first.pages == 2 and first.copied == 6 and not first.done
    rest = _run(index, deps, page_size=3, token=first.next_token)
    assert rest.done and first.copied + rest.copied == total
    migrated = copy.deepcopy(_owners_vectors(fake))
    puts = sum(1 for operation, _ in fake.calls if operation == "PutVectors")

    again = _run(index, deps, page_size=3)  # from the start: the same keys, overwritten

    assert again.copied == total and _owners_vectors(fake) == migrated
    assert sum(1 for operation, _ in fake.calls if operation == "PutVectors") > puts


def test_what_was_deleted_before_or_while_it_runs_is_not_brought_back(legacy: Any) -> None:
    api, deps, index, fake, purger, sessions = legacy
    # Deleted and purged before the migration: gone from the shared index too.
    assert api.call("DELETE", f"/sessions/{sessions['alice-job']}", user="alice")[0] == 204
    purger.drain()
    # Deleted, its purge not run yet: its entries are still in the shared index.
    assert api.call("DELETE", f"/sessions/{sessions['alice-trip']}", user="alice")[0] == 204
    assert any(sessions["alice-trip"] in m["doc"] for m in fake.metadata(MEMORY_INDEX))
    # Deleted while its entries are copied: after the copy's write, before its check.
    racing = sessions["alice-dog"]
    put_vectors: Callable[..., None] = index.put_vectors

    def delete_during_copy(name: str, owner: str, vectors: Any) -> None:
        put_vectors(name, owner, vectors)
        if any(v["metadata"].get("session_id") == racing for v in vectors):
            assert api.call("DELETE", f"/sessions/{racing}", user="alice")[0] == 204
            purger.drain()

    index.put_vectors = delete_during_copy  # type: ignore[method-assign]

    progress = _run(index, deps)

    deleted = {sessions["alice-job"], sessions["alice-trip"], racing}
    left = {m.get("session_id") for _, m in _owners_vectors(fake).values()}
    assert not left & deleted and sessions["bob-stamps"] in left
    assert progress.skipped > 0
    purger.drain()
    assert not recalled(api, "alice", "greyhound Biscuit Lisbon nurse") & deleted


def test_a_forgotten_owners_entries_are_not_copied(legacy: Any) -> None:
    api, deps, index, fake, _, sessions = legacy
    assert api.call("DELETE", "/memories", user="alice")[0] == 204  # purge not run yet

    _run(index, deps)

    owners = {m["user_id"] for _, m in _owners_vectors(fake).values()}
    assert owners == {"bob"}


def test_the_handler_answers_where_to_continue(
    legacy: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    from handlers import migrate_memory

    _, _, index, fake, _, _ = legacy
    monkeypatch.setattr(wiring, "shared_memory_index", lambda: index)
    total = len(fake.indexes[MEMORY_INDEX].vectors)

    answer = migrate_memory.handler({}, lambda_context)

    assert answer == {
        "copied": total,
        "skipped": 0,
        "pages": 1,
        "next_token": None,
        "done": True,
    }
    with pytest.raises(ValueError, match="token"):
        migrate_memory.handler({"token": 7}, lambda_context)


def test_without_a_shared_index_there_is_nothing_to_migrate(dynamodb: Any) -> None:
    s3vectors = boto3.client("s3vectors", region_name="us-east-1")
    fake = FakeS3Vectors(s3vectors, BUCKET)
    fake.indexes["verified-passages"] = Index({})
    index = S3VectorsLongTermIndex(s3vectors, BUCKET, dimension=3, shared_index=True)

    progress = migrate_shared_index(
        index, wiring.short_term_memory(), token=None, time_left=lambda: math.inf
    )

    assert progress.done and progress.copied == progress.skipped == 0


@pytest.mark.parametrize("moment", ["before-write", "after-write"])
def test_a_forget_racing_the_copy_leaves_no_index_of_the_forgotten_key(
    legacy: Any, moment: str
) -> None:
    """The forget and its purge (which erases the old key's index) between the copy's first
    check and its write, or between its write and its second check."""
    api, deps, index, fake, purger, _ = legacy
    put_vectors: Callable[..., None] = index.put_vectors
    forgotten: list[bool] = []

    def forget_during_copy(name: str, owner: str, vectors: Any) -> None:
        def forget() -> None:
            if owner == "alice" and not forgotten:
                forgotten.append(True)
                assert api.call("DELETE", "/memories", user="alice")[0] == 204
                purger.drain()

        if moment == "before-write":
            forget()
        put_vectors(name, owner, vectors)
        if moment == "after-write":
            forget()

    index.put_vectors = forget_during_copy  # type: ignore[method-assign]

    _run(index, deps)

    assert forgotten
    assert index.location(MEMORY_INDEX, "alice")[1] not in {n for _, n in fake.user_indexes()}
    assert {m["user_id"] for _, m in _owners_vectors(fake).values()} == {"bob"}


class _Lambda:
    """The MigrateMemory function as `aws lambda invoke` sees it: pages of a shared index of
    five pages, each invocation doing two; `fail_at` makes one invocation fail."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.tokens: list[str | None] = []
        self.fail_at = fail_at

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:  # noqa: N803
        import io
        import json

        token = json.loads(Payload)["token"]
        self.tokens.append(token)
        if len(self.tokens) == self.fail_at:
            body = {"errorMessage": "Task timed out", "errorType": "Sandbox.Timedout"}
            return {"FunctionError": "Unhandled", "Payload": io.BytesIO(json.dumps(body).encode())}
        page = int(token or 0) + 2
        done = page >= 5
        answer = {"copied": 20, "skipped": 1, "pages": 2, "next_token": None if done else str(page)}
        answer["done"] = done
        return {"Payload": io.BytesIO(json.dumps(answer).encode())}


def test_the_command_invokes_until_done_and_resumes_from_its_state_after_a_failure(
    tmp_path: Any,
) -> None:
    from scripts.migrate_memory import migrate

    state = tmp_path / "migrate-memory-ChatMemory-dev.json"
    failing = _Lambda(fail_at=2)
    with pytest.raises(SystemExit, match="run again to resume"):
        migrate(failing, "fn", state, report=lambda _: None)
    assert failing.tokens == [None, "2"]

    resumed = _Lambda()
    totals = migrate(resumed, "fn", state, report=lambda _: None)

    assert resumed.tokens == ["2", "4"]  # from where the failed invocation started
    assert totals == {"copied": 40, "skipped": 2, "invocations": 2}
    assert not state.exists()  # done: a next run starts over
