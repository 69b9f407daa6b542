"""ChatMemoryStore against LangGraph's InMemoryStore, differentially: a Hypothesis state machine
puts (with and without a TTL, indexed or not), deletes, gets, searches (namespace prefixes, filters, limit and
offset) and lists namespaces (prefix, suffix, max_depth, limit, offset) in both, moving a clock
the server reads; after every step both stores hold the same items.

The chat Lambda runs in this process on moto (its HTTP requests go to the handler through a
requests adapter), with the offline test embedder, the embedded index and a clock the test
moves: an item's expiry is checked at the second, without waiting for it. InMemoryStore has no
TTL (`supports_ttl` is False), so expiry is modelled beside it: an item put with `ttl` minutes
is deleted from the reference when the clock passes its expiry, and a put without one makes it
lasting again. A bounded number of examples runs in `make test`;
CHATMEMORY_DIFFERENTIAL_EXAMPLES=200 runs more.

Differences by design, which the comparison allows: without a query, InMemoryStore answers in
its dictionaries' order (namespaces as first created, then keys as first put) and this store
by record id, descending (docs/frameworks/namespaces.md); the namespace ("profile",) follows the
profile's rules (supersession), so items here stay out of it; timestamps are each store's own;
a namespace whose items were all deleted is not listed here (InMemoryStore lists it: see
`no_empty_namespace`)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
from chatmemory_client import ChatMemoryClient
from chatmemory_client.langgraph import ChatMemoryStore
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from langgraph.store.base import Item
from langgraph.store.memory import InMemoryStore

from chatmemory import wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.services.conversation.chat import ChatDeps
from local.gateway import load_routes, proxy_event
from tests.client.differential import run_machine
from tests.fakes import FakeEmbedder, FakeGenerator

BASE_URL = "http://chatmemory.test"

labels = st.sampled_from(["notes", "a", "b", "x y", "é"])
namespaces = st.lists(labels, min_size=1, max_size=3).map(tuple)
keys = st.sampled_from(["k1", "k2", "k 3", "ключ"])
# Every value has a number "n": InMemoryStore's $gt raises on an item without one.
item_values = st.fixed_dictionaries(
    {"n": st.integers(0, 9)},
    optional={
        "text": st.one_of(st.sampled_from(["tea", "coffee"]), st.text(min_size=1, max_size=30)),
        "color": st.sampled_from(["red", "blue"]),
        "tags": st.lists(st.sampled_from(["x", "y"]), max_size=2),
    },
)
filters = st.one_of(
    st.none(),
    st.fixed_dictionaries({"color": st.sampled_from(["red", "blue"])}),
    st.fixed_dictionaries({"n": st.fixed_dictionaries({"$gt": st.integers(0, 8)})}),
    st.fixed_dictionaries({"n": st.fixed_dictionaries({"$lte": st.integers(0, 8)})}),
    st.fixed_dictionaries({"text": st.sampled_from(["tea", "coffee"])}),
)


class Clock:
    """The server's clock, which only the test moves, by whole seconds: an expiry the server
    computes (whole seconds from the put) is the one the model computes."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


class LambdaAdapter(requests.adapters.BaseAdapter):
    """Sends a request to the chat Lambda's handler in this process, as API Gateway would."""

    def __init__(self, handler: Any, context: Any) -> None:
        super().__init__()
        self._handler, self._context, self._routes = handler, context, load_routes()

    def send(self, request: requests.PreparedRequest, **_: Any) -> requests.Response:
        target = str(request.url)[len(BASE_URL) :]
        body = request.body.decode() if isinstance(request.body, bytes) else request.body
        event = proxy_event(
            method=str(request.method),
            target=target,
            headers=list(request.headers.items()),
            body=body,
            user_id=str(request.headers["X-User-Id"]),
            routes=self._routes,
        )
        answer = self._handler(event, self._context)
        response = requests.Response()
        response.status_code = answer["statusCode"]
        response._content = (answer.get("body") or "").encode()
        response.headers.update(answer.get("headers") or {})
        response.request, response.url = request, str(request.url)
        return response

    def close(self) -> None:
        pass


class StoreMachine(RuleBasedStateMachine):
    adapter: LambdaAdapter
    clock: Clock
    users = iter(range(10**6))

    def __init__(self) -> None:
        super().__init__()
        session = requests.Session()
        session.mount(BASE_URL, self.adapter)
        client = ChatMemoryClient(BASE_URL, user_id=f"u{next(self.users)}", session=session)
        self.ours = ChatMemoryStore(client=client)
        self.theirs = InMemoryStore()
        self.expiry: dict[tuple[tuple[str, ...], str], datetime] = {}
        self.unindexed: set[tuple[tuple[str, ...], str]] = set()

    def _expire(self) -> None:
        for (namespace, key), when in list(self.expiry.items()):
            if when <= self.clock.now:
                self.theirs.delete(namespace, key)
                del self.expiry[(namespace, key)]

    @rule(
        namespace=namespaces,
        key=keys,
        value=item_values,
        ttl=st.one_of(st.none(), st.sampled_from([0.5 / 60, 1, 2.5])),
        index=st.sampled_from([None, False]),
    )
    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        ttl: float | None,
        index: bool | None,
    ) -> None:
        self.ours.put(namespace, key, value, index=index, ttl=ttl)
        self.theirs.put(namespace, key, value, index=index)
        self.expiry.pop((namespace, key), None)
        (self.unindexed.add if index is False else self.unindexed.discard)((namespace, key))
        if ttl is not None:  # the API's ttl_seconds: the minutes, rounded up to a second
            seconds = max(1, math.ceil(ttl * 60))
            self.expiry[(namespace, key)] = self.clock.now + timedelta(seconds=seconds)

    @rule(namespace=namespaces, key=keys)
    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        self.ours.delete(namespace, key)
        self.theirs.delete(namespace, key)
        self.expiry.pop((namespace, key), None)

    @rule(seconds=st.sampled_from([1, 20, 31, 61, 200]))
    def time_passes(self, seconds: int) -> None:
        self.clock.now += timedelta(seconds=seconds)
        self._expire()

    @rule(namespace=namespaces, key=keys)
    def get(self, namespace: tuple[str, ...], key: str) -> None:
        assert _shown(self.ours.get(namespace, key)) == _shown(self.theirs.get(namespace, key))

    @rule(
        prefix=st.one_of(st.just(()), namespaces),
        wanted=filters,
        limit=st.integers(1, 12),
        offset=st.integers(0, 4),
    )
    def search(
        self, prefix: tuple[str, ...], wanted: dict[str, Any] | None, limit: int, offset: int
    ) -> None:
        ours = self.ours.search(prefix, filter=wanted, limit=limit, offset=offset)
        every = self.theirs.search(prefix, filter=wanted, limit=1000)
        # This store's order without a query: by record id, descending.
        every.sort(key=lambda i: self.ours.record_id(i.namespace, i.key), reverse=True)
        assert [_shown(i) for i in ours] == [_shown(i) for i in every[offset : offset + limit]]

    @rule(
        prefix=st.one_of(st.just(()), namespaces),
        wanted=filters,
        query=st.sampled_from(["tea", "something else entirely"]),
    )
    def search_with_a_query(
        self, prefix: tuple[str, ...], wanted: dict[str, Any] | None, query: str
    ) -> None:
        """Asked for more than there are, a search with a query answers every item under the
        prefix that passes the filter, as InMemoryStore does (the two rank by their own
        embedders, so only the set is compared), and those put with index=False after those
        the index ranked (InMemoryStore: after those it scored)."""
        ours = self.ours.search(prefix, query=query, filter=wanted, limit=100)
        every = self.theirs.search(prefix, filter=wanted, limit=1000)
        assert sorted(map(_shown, ours), key=repr) == sorted(map(_shown, every), key=repr)
        unembedded = [(i.namespace, i.key) in self.unindexed for i in ours]
        assert unembedded == sorted(unembedded)

    @rule(
        prefix=st.one_of(st.none(), st.lists(st.one_of(labels, st.just("*")), max_size=2)),
        suffix=st.one_of(st.none(), st.lists(st.one_of(labels, st.just("*")), max_size=2)),
        max_depth=st.one_of(st.none(), st.integers(1, 3)),
        limit=st.integers(1, 20),
        offset=st.integers(0, 3),
    )
    def list_namespaces(
        self,
        prefix: list[str] | None,
        suffix: list[str] | None,
        max_depth: int | None,
        limit: int,
        offset: int,
    ) -> None:
        ask: dict[str, Any] = {"max_depth": max_depth, "limit": limit, "offset": offset}
        if prefix:
            ask["prefix"] = tuple(prefix)
        if suffix:
            ask["suffix"] = tuple(suffix)
        assert self.ours.list_namespaces(**ask) == self.theirs.list_namespaces(**ask)

    @invariant()
    def no_empty_namespace(self) -> None:
        """InMemoryStore keeps its items in defaultdicts, so a get or a delete of a key in a
        namespace that holds nothing leaves that namespace behind, empty, and list_namespaces
        lists it; a namespace of this store is one its records are in (as LangGraph's Postgres
        store's). The reference drops what is empty."""
        for namespace in [ns for ns, items in self.theirs._data.items() if not items]:
            del self.theirs._data[namespace]

    @invariant()
    def both_hold_the_same_items(self) -> None:
        ours = self.ours.search((), limit=100)
        theirs = self.theirs.search((), limit=100)
        assert sorted(map(_shown, ours), key=repr) == sorted(map(_shown, theirs), key=repr)


def _shown(item: Item | None) -> Any:
    """What a store answers of an item, comparable between stores (not its timestamps)."""
    if item is None:
        return None
    return item.namespace, item.key, json.dumps(item.value, sort_keys=True)


def test_the_store_answers_as_langgraphs_in_memory_store(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    from handlers import chat_api

    clock = Clock()
    cfg = wiring.settings()
    memory = DynamoShortTermMemory(
        wiring.aws_client("dynamodb"),
        cfg.sessions_table,
        cfg.conversations_table,
        cfg.users_table,
        cfg.records_table,
        clock=clock,
    )
    deps = ChatDeps(
        memory=memory,
        generator=FakeGenerator(),
        embedder=FakeEmbedder(),
        long_term=EmbeddedLongTermIndex(),
        clock=clock,
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    StoreMachine.adapter = LambdaAdapter(chat_api.handler, lambda_context)
    StoreMachine.clock = clock
    run_machine(StoreMachine, examples=15, steps=25)
