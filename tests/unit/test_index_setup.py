"""The index-setup on_event handler of the custom-resource Provider: what it asks OpenSearch, what
it returns to the framework, and that a failure raises (the framework reports it)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chatmemory import schema, wiring
from chatmemory.adapters import opensearch as opensearch_adapter
from chatmemory.adapters.opensearch import OpenSearchLongTermIndex
from chatmemory.adapters.opensearch_security import RUNTIME_ROLE_BODY, OpenSearchSecurity
from chatmemory.errors import ConfigurationError
from handlers import index_setup

ROLES = [
    "arn:aws:iam::123456789012:role/Consolidate",
    "arn:aws:iam::123456789012:role/Chat",
]


class FakeOpenSearch:
    """Records the calls the setup makes; indexes exist once created. An index in `existing`
    has the mapping in `mappings`, or schema.py's current one."""

    def __init__(self, failures: int = 0) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.existing: set[str] = set()
        self.mappings: dict[str, dict[str, Any]] = {}
        self.failures = failures
        self.regions: list[str] = []
        self.indices = self._Indices(self)
        self.security = self._Security(self)

    class _Indices:
        def __init__(self, outer: FakeOpenSearch) -> None:
            self.outer = outer

        def exists(self, *, index: str) -> bool:
            if self.outer.failures:
                self.outer.failures -= 1
                from opensearchpy.exceptions import ConnectionError as Unreachable

                raise Unreachable("N/A", "domain not reachable yet", None)
            return index in self.outer.existing

        def create(self, *, index: str, body: dict[str, Any]) -> None:
            self.outer.calls.append(("create", index, body))
            self.outer.existing.add(index)
            self.outer.mappings[index] = dict(body["mappings"]["properties"])

        def get_mapping(self, *, index: str) -> dict[str, Any]:
            current = schema.long_term_index_body(8)["mappings"]["properties"]
            properties = self.outer.mappings.get(index, current)
            return {index: {"mappings": {"dynamic": "strict", "properties": properties}}}

        def put_mapping(self, *, index: str, body: dict[str, Any]) -> None:
            self.outer.calls.append(("put_mapping", index, body))
            # Adding fields merges them into the mapping (OpenSearch refuses nothing here).
            self.outer.mappings.setdefault(index, {}).update(body["properties"])

    class _Security:
        def __init__(self, outer: FakeOpenSearch) -> None:
            self.outer = outer

        def create_role(self, *, role: str, body: dict[str, Any]) -> None:
            self.outer.calls.append(("role", role, body))

        def create_role_mapping(self, *, role: str, body: dict[str, Any]) -> None:
            self.outer.calls.append(("mapping", role, body))


@pytest.fixture
def fake_search(monkeypatch: pytest.MonkeyPatch) -> FakeOpenSearch:
    client = FakeOpenSearch()

    def connect(endpoint: str, region: str, **kwargs: Any) -> FakeOpenSearch:
        client.regions.append(region)
        return client

    monkeypatch.setenv(schema.ENV_LONG_TERM_BACKEND, "opensearch")
    monkeypatch.setenv(schema.ENV_OPENSEARCH_ENDPOINT, "search-memory.eu-west-1.es.amazonaws.com")
    monkeypatch.setenv(schema.ENV_EMBED_DIMENSION, "8")
    monkeypatch.setattr(opensearch_adapter, "opensearch_client", connect)
    wiring.clear_caches()
    return client


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without the real pause between attempts."""
    monkeypatch.setattr(index_setup, "PAUSE_SECONDS", 0.0)


class LongContext:
    function_name = "index-setup"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:index-setup"
    aws_request_id = "11111111-1111-1111-1111-111111111111"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 300_000


def _event(kind: str, **extra: Any) -> dict[str, Any]:
    """A request as the Provider framework passes it on (it keeps the response URL to itself)."""
    return {
        "RequestType": kind,
        "ServiceToken": "arn:aws:lambda:eu-west-1:123456789012:function:framework-onEvent",
        "ResponseURL": "...",
        "StackId": "arn:aws:cloudformation:eu-west-1:123456789012:stack/ChatMemory-dev/x",
        "RequestId": "req-1",
        "LogicalResourceId": "LongTermMemoryLongTermIndexes",
        "ResourceType": "Custom::LongTermIndexes",
        "ResourceProperties": {"ServiceToken": "arn:...", "RuntimeRoleArns": ROLES},
        **extra,
    }


def test_create_on_a_domain_maps_the_runtime_roles_then_creates_both_indexes(
    fake_search: FakeOpenSearch,
) -> None:
    answer = index_setup.on_event(_event("Create"), LongContext())

    assert answer == {
        "PhysicalResourceId": index_setup.PHYSICAL_ID,
        "Data": {"Indexes": ",".join(schema.LONG_TERM_INDEXES)},
    }
    role, mapping, *creates = fake_search.calls
    assert role == ("role", schema.OPENSEARCH_RUNTIME_ROLE, RUNTIME_ROLE_BODY)
    assert mapping[:2] == ("mapping", schema.OPENSEARCH_RUNTIME_ROLE)
    assert mapping[2]["backend_roles"] == sorted(ROLES)
    assert [(kind, name) for kind, name, _ in creates] == [
        ("create", name) for name in schema.LONG_TERM_INDEXES
    ]
    assert creates[0][2] == schema.long_term_index_body(8)


def test_the_security_client_signs_for_the_functions_own_region(
    fake_search: FakeOpenSearch,
) -> None:
    index_setup.on_event(_event("Create"), LongContext())
    assert "eu-west-1" in fake_search.regions


def test_runtime_role_may_only_touch_documents_of_the_two_indexes() -> None:
    (permission,) = RUNTIME_ROLE_BODY["index_permissions"]
    assert permission["index_patterns"] == list(schema.LONG_TERM_INDEXES)
    # Documents, and the refresh that ends a delete-by-query with refresh=true (without it the
    # security plugin refuses every delete of the purge with 403).
    assert permission["allowed_actions"] == ["crud", "indices:admin/refresh*"]
    assert "all_access" not in json.dumps(RUNTIME_ROLE_BODY)


def test_mapping_no_role_at_all_is_refused() -> None:
    with pytest.raises(ValueError, match="no runtime roles"):
        OpenSearchSecurity(FakeOpenSearch()).map_runtime_roles([])


def test_on_serverless_no_role_mapping_and_no_shard_setting(
    fake_search: FakeOpenSearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(schema.ENV_OPENSEARCH_SERVERLESS, "true")
    answer = index_setup.on_event(
        _event("Update", PhysicalResourceId=index_setup.PHYSICAL_ID), LongContext()
    )
    assert [call[0] for call in fake_search.calls] == ["create", "create"]
    assert "number_of_shards" not in fake_search.calls[0][2]["settings"]["index"]
    assert answer["PhysicalResourceId"] == index_setup.PHYSICAL_ID


def test_update_maps_the_new_role_list_and_leaves_existing_indexes_alone(
    fake_search: FakeOpenSearch,
) -> None:
    fake_search.existing.update(schema.LONG_TERM_INDEXES)
    answer = index_setup.on_event(
        _event("Update", PhysicalResourceId=index_setup.PHYSICAL_ID), LongContext()
    )
    assert [call[0] for call in fake_search.calls] == ["role", "mapping"]
    # The same physical id: CloudFormation updates the resource in place, never replaces it.
    assert answer["PhysicalResourceId"] == index_setup.PHYSICAL_ID


def test_update_adds_the_new_fields_to_indexes_of_an_earlier_deployment_once(
    fake_search: FakeOpenSearch,
) -> None:
    """Indexes created before the profile records (issue 13) lack record_id, valid_until and
    sessions, and their mapping is strict: the deployment that brings the records adds them,
    and a later deployment (or a retry) finds nothing to add."""
    current = schema.long_term_index_body(8)["mappings"]["properties"]
    new_fields = ("record_id", "valid_until", "sessions")
    fake_search.existing.update(schema.LONG_TERM_INDEXES)
    for name in schema.LONG_TERM_INDEXES:
        fake_search.mappings[name] = {k: v for k, v in current.items() if k not in new_fields}
    event = _event("Update", PhysicalResourceId=index_setup.PHYSICAL_ID)

    index_setup.on_event(event, LongContext())

    puts = [call for call in fake_search.calls if call[0] == "put_mapping"]
    assert puts == [
        ("put_mapping", name, {"properties": {k: current[k] for k in new_fields}})
        for name in schema.LONG_TERM_INDEXES
    ]
    assert not [call for call in fake_search.calls if call[0] == "create"]
    assert all(fake_search.mappings[name] == current for name in schema.LONG_TERM_INDEXES)

    fake_search.calls.clear()
    index_setup.on_event(event, LongContext())
    assert [call[0] for call in fake_search.calls] == ["role", "mapping"]


def test_delete_touches_nothing_and_keeps_the_physical_id(fake_search: FakeOpenSearch) -> None:
    answer = index_setup.on_event(
        _event("Delete", PhysicalResourceId=index_setup.PHYSICAL_ID), LongContext()
    )
    assert fake_search.calls == []
    assert answer == {"PhysicalResourceId": index_setup.PHYSICAL_ID}


def test_a_domain_that_is_not_reachable_yet_is_retried(fake_search: FakeOpenSearch) -> None:
    fake_search.failures = 2
    index_setup.on_event(_event("Create"), LongContext())
    assert [c[1] for c in fake_search.calls if c[0] == "create"] == list(schema.LONG_TERM_INDEXES)


def test_a_lasting_failure_raises_for_the_framework_to_report(
    fake_search: FakeOpenSearch,
) -> None:
    fake_search.failures = 1000
    with pytest.raises(Exception, match="(?i)unreachable"):
        index_setup.on_event(_event("Create"), LongContext())
    assert fake_search.failures == 1000 - index_setup.ATTEMPTS


def test_without_opensearch_settings_the_setup_fails_clearly_and_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(schema.ENV_LONG_TERM_BACKEND, "none")
    wiring.clear_caches()
    attempts: list[int] = []
    setup = index_setup.setup

    def counted(*args: Any, **kwargs: Any) -> None:
        attempts.append(1)
        setup(*args, **kwargs)

    monkeypatch.setattr(index_setup, "setup", counted)
    with pytest.raises(ConfigurationError, match="LONG_TERM_BACKEND=opensearch"):
        index_setup.on_event(_event("Create"), LongContext())
    assert attempts == [1]  # a configuration error is not retried


def test_the_index_built_for_setup_is_the_runtime_adapter(fake_search: FakeOpenSearch) -> None:
    assert isinstance(wiring.long_term_index(), OpenSearchLongTermIndex)


# --- the custom resource of stacks deployed before the Provider framework --------------------


@pytest.fixture
def cloudformation() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local stand-in for CloudFormation's pre-signed response URL."""
    answers: list[dict[str, Any]] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers["Content-Length"])
            answers.append(json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/response?signature=x", answers
    server.shutdown()
    server.server_close()


def test_the_retired_resources_delete_is_answered_without_touching_the_indexes(
    fake_search: FakeOpenSearch, cloudformation: tuple[str, list[dict[str, Any]]]
) -> None:
    """The update that moves to the Provider deletes the old custom resource, whose token is
    this function: CloudFormation waits for that answer at the pre-signed URL."""
    url, answers = cloudformation
    old = _event(
        "Delete",
        ResponseURL=url,
        LogicalResourceId="LongTermMemoryIndexes",
        PhysicalResourceId=index_setup.PHYSICAL_ID,
    )
    index_setup.on_event(old, LongContext())
    assert fake_search.calls == []
    assert answers == [
        {
            "Status": "SUCCESS",
            "Reason": "nothing to delete",
            "PhysicalResourceId": index_setup.PHYSICAL_ID,
            "StackId": old["StackId"],
            "RequestId": "req-1",
            "LogicalResourceId": "LongTermMemoryIndexes",
        }
    ]


def test_any_other_direct_request_is_refused(
    fake_search: FakeOpenSearch, cloudformation: tuple[str, list[dict[str, Any]]]
) -> None:
    url, answers = cloudformation
    index_setup.on_event(_event("Create", ResponseURL=url), LongContext())
    assert fake_search.calls == []
    assert answers[0]["Status"] == "FAILED"
