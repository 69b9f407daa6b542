"""The migration of a domain's memory index to a new generation (more shards, vectors on disk,
no vector in `_source`): services/background/migrate.py on OpenSearchLongTermIndex, against the
in-memory domain (tests/opensearch_fake.py) and moto's DynamoDB. An index made before routing
(one shard, every owner together) is copied into the new one routed by owner; its vector is
taken from `_source` where the old index kept it, else made again from the entry's text; what
was deleted or forgotten is not brought back; a run that fails resumes from its token to the
same end state; a deletion while it runs is honoured in both indexes."""

from __future__ import annotations

import copy
import io
import json
import math
from typing import Any

import pytest
from opensearchpy.exceptions import ConnectionError as Unreachable

from chatmemory import schema, wiring
from chatmemory.adapters.opensearch import OpenSearchLongTermIndex
from chatmemory.errors import ConfigurationError
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.background.migrate import MigrationProgress, migrate_shared_index
from chatmemory.services.conversation.chat import ChatDeps
from chatmemory.settings import Settings
from tests.fakes import FakeEmbedder, FakeGenerator
from tests.opensearch_fake import Domain
from tests.purging import Purger, recalled
from tests.unit.test_chat_api import Api
from tests.unit.test_s3vectors_adapter import _consolidate, _ended

OLD = MEMORY_INDEX  # made before routing: one shard, every owner's memories together
NEW = schema.memory_index_base(1)
SHARDS = 4


class _Services:
    """The chat handler, its deps and the purge on one adapter of the domain."""

    def __init__(self, index: OpenSearchLongTermIndex, env: Any) -> None:
        from handlers import chat_api

        dynamodb, monkeypatch, context = env
        self.index = index
        self.embedder = FakeEmbedder()
        self.deps = ChatDeps(
            memory=wiring.short_term_memory(),
            generator=FakeGenerator(reply=lambda prompt: "grounded answer"),
            embedder=self.embedder,
            long_term=index,
        )
        monkeypatch.setattr(wiring, "chat_deps", lambda: self.deps)
        self.api = Api(chat_api.handler, context)
        self.purger = Purger(dynamodb, self.deps.memory, index, monkeypatch, context)


@pytest.fixture(params=["vectors-in-source", "vectors-excluded"])
def legacy(request: Any, dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any):
    """alice's and bob's consolidated sessions and a stated record, written by the adapter of a
    deployment made before generations into `conversation-memories` (one shard); the index made
    either as an earlier version made it (vectors in `_source`) or as this one does. Then the
    upgraded deployment: generation 1 with SHARDS shards, migrating from the old index."""
    domain = Domain()
    embedder = FakeEmbedder()
    body = schema.long_term_index_body(embedder.dimension)
    if request.param == "vectors-in-source":
        del body["mappings"]["_source"]
    domain.create(OLD, body)
    old = OpenSearchLongTermIndex(domain.client(), dimension=embedder.dimension)
    old.ensure_indexes()  # the passages' index; the memory index exists already
    env = (dynamodb, monkeypatch, lambda_context)
    before = _Services(old, env)
    sessions = {
        "alice-dog": _ended(
            before.api, "alice", "We are adopting a rescue greyhound named Biscuit"
        ),
        "alice-job": _ended(before.api, "alice", "I work as a nurse at the children's hospital"),
        "alice-trip": _ended(before.api, "alice", "We planned a trip to Lisbon in May"),
        "bob-stamps": _ended(before.api, "bob", "I collect stamps from Portugal"),
    }
    for sid in sessions.values():
        assert _consolidate(before.deps, sid) == "consolidated"
    status, _ = before.api.call("POST", "/memories/records", {"text": "I prefer aisle seats."})
    assert status == 201
    assert len(domain.indexes[OLD].docs) > 10
    new = OpenSearchLongTermIndex(
        domain.client(),
        dimension=embedder.dimension,
        shards=SHARDS,
        memory_generation=1,
        previous_memory_indexes=(OLD,),
    )
    new.ensure_indexes()
    return domain, _Services(new, env), sessions, request.param


def _run(services: _Services, **kwargs: Any) -> MigrationProgress:
    return migrate_shared_index(
        services.index,
        services.deps.memory,
        **{"token": None, "time_left": lambda: math.inf, "embedder": services.embedder, **kwargs},
    )


def test_the_new_index_is_made_with_the_current_body_and_the_old_one_is_left_as_it_was(
    legacy: Any,
) -> None:
    domain, _, _, shape = legacy
    assert domain.indexes[NEW].shards == SHARDS
    assert domain.indexes[NEW].excludes == schema.SOURCE_EXCLUDES
    assert domain.indexes[OLD].shards == 1
    assert domain.indexes[OLD].excludes == (() if shape == "vectors-in-source" else ("embedding",))
    assert ("PUT", f"/{OLD}") not in {(m, p) for m, p, _ in domain.requests[-10:]}


def test_live_entries_move_routed_by_owner_with_their_vectors_and_recall_finds_them(
    legacy: Any,
) -> None:
    domain, services, sessions, shape = legacy
    before = copy.deepcopy(domain.sources(OLD))
    # Until migrated, the new generation has nothing to recall.
    assert recalled(services.api, "alice", "greyhound Biscuit") == set()
    services.embedder.calls = 0

    progress = _run(services, page_size=4)

    assert progress.done and progress.skipped == 0 and progress.copied == len(before)
    assert progress.pages == math.ceil(len(before) / 4) + (len(before) % 4 == 0)
    # The same documents, each with its vector, under the same _id, routed by its owner.
    assert domain.sources(NEW) == before
    for doc in domain.indexes[NEW].docs.values():
        assert doc.routing == doc.source["user_id"]
    assert domain.sources(OLD) == before  # the old index is read, never written
    # The vector came from `_source` where the old index kept it, else from the embedder.
    assert (services.embedder.calls == 0) == (shape == "vectors-in-source")
    assert sessions["alice-dog"] in recalled(services.api, "alice", "greyhound Biscuit")
    assert recalled(services.api, "bob", "greyhound Biscuit") <= {sessions["bob-stamps"]}


def test_a_page_copied_again_is_the_same(legacy: Any) -> None:
    domain, services, _, _ = legacy
    _run(services, page_size=3)
    migrated = copy.deepcopy(domain.sources(NEW))

    again = _run(services, page_size=5)

    assert again.done and domain.sources(NEW) == migrated


def test_what_was_deleted_before_or_while_it_runs_is_not_brought_back_nor_left_behind(
    legacy: Any,
) -> None:
    domain, services, sessions, _ = legacy
    api, purger = services.api, services.purger
    # Deleted and purged before the migration: the purge removed it from the old index too.
    assert api.call("DELETE", f"/sessions/{sessions['alice-job']}", user="alice")[0] == 204
    purger.drain()
    assert not _of_session(domain, OLD, sessions["alice-job"])
    # Deleted, its purge not run yet: still in the old index, skipped by the copy.
    assert api.call("DELETE", f"/sessions/{sessions['alice-trip']}", user="alice")[0] == 204
    assert _of_session(domain, OLD, sessions["alice-trip"])
    # Deleted and purged while its entries are copied: after the copy's write, before its check.
    racing = sessions["alice-dog"]
    raced: list[bool] = []

    def delete_after_the_write(method: str, path: str) -> None:
        if path == f"/{NEW}/_bulk" and not raced and _of_session(domain, NEW, racing):
            raced.append(True)
            assert api.call("DELETE", f"/sessions/{racing}", user="alice")[0] == 204
            purger.drain()

    domain.after.append(delete_after_the_write)

    progress = _run(services, page_size=50)

    deleted = {sessions["alice-job"], sessions["alice-trip"], racing}
    left = {doc.source.get("session_id") for doc in domain.indexes[NEW].docs.values()}
    assert not left & deleted and sessions["bob-stamps"] in left
    assert raced and progress.skipped > 0
    purger.drain()
    assert not _of_session(domain, OLD, sessions["alice-trip"])
    assert not _of_session(domain, OLD, racing)
    assert not recalled(api, "alice", "greyhound Biscuit Lisbon nurse") & deleted


def test_a_forgotten_owners_entries_are_not_copied_and_leave_the_old_index(legacy: Any) -> None:
    domain, services, _, _ = legacy
    assert services.api.call("DELETE", "/memories", user="alice")[0] == 204  # purge not run yet

    _run(services)

    assert {d.source["user_id"] for d in domain.indexes[NEW].docs.values()} == {"bob"}
    services.purger.drain()
    assert {d.source["user_id"] for d in domain.indexes[OLD].docs.values()} == {"bob"}


class _Lambda:
    """The MigrateMemory function as `aws lambda invoke` sees it: each invocation runs the
    migration for two pages of three entries (its time then runs short), and answers as
    handlers/migrate_memory.py does, or fails as a function that raised."""

    def __init__(self, services: _Services) -> None:
        self.services = services
        self.tokens: list[str | None] = []

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:  # noqa: N803
        token = json.loads(Payload)["token"]
        self.tokens.append(token)
        clock = iter([100.0] + [5.0] * 1000)
        try:
            progress = _run(self.services, token=token, page_size=3, time_left=lambda: next(clock))
        except Exception as error:
            body = {"errorMessage": str(error), "errorType": type(error).__name__}
            return {"FunctionError": "Unhandled", "Payload": io.BytesIO(json.dumps(body).encode())}
        return {"Payload": io.BytesIO(json.dumps(progress.answer()).encode())}


def test_an_interrupted_run_resumes_from_its_state_file_to_the_same_end_state(
    legacy: Any, tmp_path: Any
) -> None:
    from scripts.migrate_memory import migrate

    domain, services, _, _ = legacy
    expected = copy.deepcopy(domain.sources(OLD))
    state = tmp_path / "migrate-memory-ChatMemory-dev.json"
    interrupted = _Lambda(services)
    failed: list[bool] = []

    def fail_a_write_of_the_second_invocation(method: str, path: str) -> None:
        if path == f"/{NEW}/_bulk" and len(interrupted.tokens) == 2 and not failed:
            failed.append(True)
            raise Unreachable("N/A", "the domain went away", None)

    domain.hooks.append(fail_a_write_of_the_second_invocation)

    with pytest.raises(SystemExit, match="run again to resume"):
        migrate(interrupted, "fn", state, report=lambda _: None)

    kept = json.loads(state.read_text())["token"]
    assert failed and len(interrupted.tokens) == 2
    assert kept == interrupted.tokens[-1]  # the failed invocation's start
    assert 0 < len(domain.indexes[NEW].docs) < len(expected)

    resumed = _Lambda(services)
    totals = migrate(resumed, "fn", state, report=lambda _: None)

    assert resumed.tokens[0] == kept
    assert domain.sources(NEW) == expected
    assert not state.exists()
    assert 0 < totals["copied"] <= len(expected)


def test_the_handler_runs_it_with_the_deployments_embedder(
    legacy: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    from handlers import migrate_memory

    domain, services, _, _ = legacy
    monkeypatch.setattr(wiring, "shared_memory_index", lambda: services.index)
    monkeypatch.setattr(wiring, "short_term_memory", lambda: services.deps.memory)
    monkeypatch.setattr(wiring, "migration_embedder", lambda: services.embedder)

    answer = migrate_memory.handler({}, lambda_context)

    assert answer["done"] and answer["next_token"] is None
    assert answer["copied"] == len(domain.indexes[OLD].docs) == len(domain.indexes[NEW].docs)


def test_the_token_names_the_old_index_and_the_last_key_read(legacy: Any) -> None:
    _, services, _, _ = legacy
    entries, token = services.index.shared_page(None, 2)

    assert token == json.dumps({"index": 0, "after": entries[-1].doc.doc_key}).replace(" ", "")
    with pytest.raises(ValueError, match="not a token"):
        services.index.shared_page("s3-vectors-token", 2)


def test_an_old_index_that_is_missing_has_nothing_to_migrate(dynamodb: Any) -> None:
    domain = Domain()
    index = OpenSearchLongTermIndex(
        domain.client(), dimension=8, memory_generation=1, previous_memory_indexes=("gone",)
    )

    progress = migrate_shared_index(
        index, wiring.short_term_memory(), token=None, time_left=lambda: math.inf
    )

    assert progress.done and progress.copied == progress.skipped == 0


def test_the_wiring_builds_the_domain_to_migrate_from_settings_and_refuses_without_one() -> None:
    env = {
        schema.ENV_LONG_TERM_BACKEND: "opensearch",
        schema.ENV_OPENSEARCH_ENDPOINT: "search-x.eu-west-1.es.amazonaws.com",
        schema.ENV_OPENSEARCH_MEMORY_GENERATION: "1",
        schema.ENV_OPENSEARCH_PREVIOUS_MEMORY_INDEXES: "conversation-memories",
    }
    migrating = Settings.from_env(env)
    assert migrating.opensearch_previous_memory_indexes == (OLD,)
    assert isinstance(wiring.shared_memory_index(migrating), OpenSearchLongTermIndex)

    done = Settings.from_env({**env, schema.ENV_OPENSEARCH_PREVIOUS_MEMORY_INDEXES: ""})
    with pytest.raises(ConfigurationError, match="OPENSEARCH_PREVIOUS_MEMORY_INDEXES"):
        wiring.shared_memory_index(done)
    with pytest.raises(Exception, match="index names"):
        Settings.from_env({**env, schema.ENV_OPENSEARCH_PREVIOUS_MEMORY_INDEXES: "a/b"})


def _of_session(domain: Domain, index: str, session_id: str) -> list[str]:
    docs = domain.indexes[index].docs
    return [i for i, d in docs.items() if d.source.get("session_id") == session_id]
