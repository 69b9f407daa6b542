"""ChatMemoryStore, LangGraph's BaseStore over the records API, against local mode (DynamoDB
Local, the real handlers, the offline embedding model): a graph that learns in one thread and
recalls in a later one, isolation between users, and the store contract item by item.

LangGraph ships no reusable conformance tests for stores (langgraph-checkpoint-conformance covers
checkpointers only; its store tests live in its repository, written for InMemoryStore), so the
contract checks below follow BaseStore's documented behaviour."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import UTC
from typing import Any, TypedDict

import pytest
from chatmemory_client import ChatMemoryClient
from chatmemory_client.langgraph import ChatMemoryStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from tests.integration.helpers import World

pytestmark = pytest.mark.integration


# --- a small agent: "remember: ..." stores a memory, anything else answers from memory ----------


class AgentState(TypedDict, total=False):
    message: str
    answer: str


@dataclass
class AgentContext:
    user: str


def _memories(context: AgentContext) -> tuple[str, ...]:
    return ("memories", context.user)


def route(state: AgentState) -> str:
    return "learn" if state["message"].lower().startswith("remember:") else "respond"


def learn(state: AgentState, runtime: Runtime[AgentContext]) -> AgentState:
    assert runtime.store is not None
    fact = state["message"].split(":", 1)[1].strip()
    runtime.store.put(_memories(runtime.context), str(uuid.uuid4()), {"text": fact})
    return {"answer": f"Noted: {fact}"}


def respond(state: AgentState, runtime: Runtime[AgentContext]) -> AgentState:
    assert runtime.store is not None
    found = runtime.store.search(_memories(runtime.context), query=state["message"], limit=3)
    if not found:
        return {"answer": "I don't know yet."}
    return {"answer": f"From memory: {found[0].value['text']}"}


def agent(store: ChatMemoryStore):
    builder = StateGraph(AgentState, context_schema=AgentContext)
    builder.add_node("learn", learn)
    builder.add_node("respond", respond)
    builder.add_conditional_edges(START, route, ["learn", "respond"])
    builder.add_edge("learn", END)
    builder.add_edge("respond", END)
    # A checkpointer keeps each thread's own state; the store is what threads share.
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def run(graph, message: str, *, thread: str, user: str) -> str:
    config = {"configurable": {"thread_id": thread}}
    out = graph.invoke({"message": message}, config, context=AgentContext(user=user))
    return out["answer"]


def test_a_memory_put_in_one_thread_is_found_by_search_in_a_later_thread(world: World) -> None:
    first = agent(ChatMemoryStore(base_url=world.url, user_id="alice"))
    said = run(first, "remember: My greyhound is called Biscuit", thread="monday", user="alice")
    assert said == "Noted: My greyhound is called Biscuit"

    # A later conversation, from a new store and graph (as another process would build them):
    # what it finds comes from the server, not from anything kept in memory here.
    later = agent(ChatMemoryStore(base_url=world.url, user_id="alice"))
    answer = run(later, "What is my greyhound called?", thread="friday", user="alice")
    assert answer == "From memory: My greyhound is called Biscuit"

    # The same memory is part of alice's profile, where the chat itself recalls it.
    records = list(ChatMemoryClient(world.url, user_id="alice").list_records())
    assert [r.text for r in records] == ["My greyhound is called Biscuit"]


def test_the_async_graph_stores_and_finds_through_abatch(world: World) -> None:
    graph = agent(ChatMemoryStore(base_url=world.url, user_id="carol"))
    context = AgentContext(user="carol")

    async def both() -> tuple[str, str]:
        stored = await graph.ainvoke(
            {"message": "remember: I take my coffee black"},
            {"configurable": {"thread_id": "a"}},
            context=context,
        )
        found = await graph.ainvoke(
            {"message": "How do I take my coffee?"},
            {"configurable": {"thread_id": "b"}},
            context=context,
        )
        return stored["answer"], found["answer"]

    assert asyncio.run(both()) == (
        "Noted: I take my coffee black",
        "From memory: I take my coffee black",
    )


def test_one_users_memories_are_invisible_to_another_user(world: World) -> None:
    alice = ChatMemoryStore(base_url=world.url, user_id="alice")
    bob = ChatMemoryStore(base_url=world.url, user_id="bob")
    run(agent(alice), "remember: My locker code is 4512", thread="1", user="alice")
    # Bob asks with alice's namespace and key space: the store is bob's profile all the same.
    answer = run(agent(bob), "What is my locker code?", thread="2", user="alice")
    assert answer == "I don't know yet."
    [item] = alice.search(("memories", "alice"))
    assert bob.get(("memories", "alice"), item.key) is None
    assert bob.search(()) == [] and bob.list_namespaces() == []
    bob.delete(("memories", "alice"), item.key)  # nothing of alice's to delete
    assert alice.get(("memories", "alice"), item.key) is not None


# --- the store contract ------------------------------------------------------------------------


def test_put_then_get_returns_the_same_value_whatever_its_shape(world: World) -> None:
    store = ChatMemoryStore(base_url=world.url, user_id="dana")
    namespace = ("mémoires", "dana@example")
    values = {
        "sentence": {"text": "I prefer window seats on long flights"},
        "structured": {"kind": "todo", "priority": 2, "tags": ["home", "urgent"], "done": False},
        "json-looking": {"text": '{"not": "an object of mine"}'},
        "padded": {"text": "  spaces around  "},
        "other key": {"memory": "Likes jazz"},
        "ключ 1": {"text": "Unicode key and namespace"},
        "v1.2:draft": {"text": "A key with the id's separators in it"},
    }
    for key, value in values.items():
        store.put(namespace, key, value)
    for key, value in values.items():
        item = store.get(namespace, key)
        assert item is not None and (item.namespace, item.key, item.value) == (
            namespace,
            key,
            value,
        )
        assert item.created_at.tzinfo is not None and item.updated_at >= item.created_at
    assert store.get(namespace, "never put") is None
    assert store.get(("elsewhere",), "sentence") is None

    # A plain sentence is the record's text as it is; anything else is its compact JSON.
    client = ChatMemoryClient(world.url, user_id="dana")
    plain = client.get_record(store.record_id(namespace, "sentence"))
    assert plain.record_id == "m.C3.A9moires:dana.40example:sentence"
    assert plain.text == "I prefer window seats on long flights"
    structured = client.get_record(store.record_id(namespace, "structured"))
    assert structured.text == '{"kind":"todo","priority":2,"tags":["home","urgent"],"done":false}'


def test_put_again_replaces_the_value_and_delete_removes_the_item(world: World) -> None:
    store = ChatMemoryStore(base_url=world.url, user_id="erin")
    namespace = ("notes",)
    store.put(namespace, "plan", {"text": "Visit the dentist on Tuesday"})
    store.put(namespace, "plan", {"text": "Visit the dentist on Thursday"})
    item = store.get(namespace, "plan")
    assert item is not None and item.value == {"text": "Visit the dentist on Thursday"}
    assert [i.key for i in store.search(namespace)] == ["plan"]  # one record, not two

    store.delete(namespace, "plan")
    assert store.get(namespace, "plan") is None
    assert store.search(namespace, query="dentist") == []
    store.delete(namespace, "plan")  # deleting what is gone is not an error


def test_a_deleted_key_can_be_put_again_at_once_and_its_old_value_stays_gone(
    world: World,
) -> None:
    """Failed before: the put answered 409 "being deleted" until the purge had run."""
    store = ChatMemoryStore(base_url=world.url, user_id="ezra")
    store.put(("notes",), "plan", {"text": "Call the plumber about the boiler"})
    store.delete(("notes",), "plan")
    store.put(("notes",), "plan", {"text": "Call the electrician"})
    item = store.get(("notes",), "plan")
    assert item is not None and item.value == {"text": "Call the electrician"}
    # The deleted text is unreachable, before and after the records stream's purge, and the
    # late purge leaves the new record and its entry alone.
    for _ in range(2):
        found = store.search(("notes",), query="plumber boiler")
        assert [i.value for i in found] == [{"text": "Call the electrician"}]
        recalled = ChatMemoryClient(world.url, user_id="ezra").search_records("plumber boiler")
        assert all("plumber" not in r.text for r in recalled)
        world.poller.drain()
    assert [i.key for i in store.search(("notes",), query="electrician")] == ["plan"]


def test_the_same_key_in_two_namespaces_is_two_items(world: World) -> None:
    store = ChatMemoryStore(base_url=world.url, user_id="frank")
    store.put(("work",), "lunch", {"text": "Lunch with the team on Fridays"})
    store.put(("home",), "lunch", {"text": "Lunch with grandma on Sundays"})
    work, home = store.get(("work",), "lunch"), store.get(("home",), "lunch")
    assert work is not None and work.value == {"text": "Lunch with the team on Fridays"}
    assert home is not None and home.value == {"text": "Lunch with grandma on Sundays"}
    store.delete(("work",), "lunch")
    assert store.get(("work",), "lunch") is None and store.get(("home",), "lunch") is not None


def test_search_applies_namespace_prefix_filter_offset_and_limit(world: World) -> None:
    store = ChatMemoryStore(base_url=world.url, user_id="gina")
    for n, (kind, priority) in enumerate(
        [("todo", 1), ("todo", 3), ("idea", 2), ("todo", 2), ("idea", 5)]
    ):
        store.put(("tasks", "gina"), f"t{n}", {"kind": kind, "priority": priority, "n": n})
    store.put(("other",), "t9", {"kind": "todo", "priority": 9, "n": 9})

    def ns(items) -> list[int]:
        return sorted(i.value["n"] for i in items)

    assert ns(store.search(("tasks",))) == [0, 1, 2, 3, 4]
    assert ns(store.search(())) == [0, 1, 2, 3, 4, 9]
    assert ns(store.search(("tasks",), filter={"kind": "todo"})) == [0, 1, 3]
    assert ns(store.search(("tasks",), filter={"priority": {"$gte": 2, "$lt": 5}})) == [1, 2, 3]
    assert ns(store.search(("tasks",), filter={"kind": {"$ne": "todo"}})) == [2, 4]
    # Newest first without a query: offset and limit page through that order.
    page = store.search(("tasks",), limit=2, offset=1)
    assert [i.key for i in page] == ["t3", "t2"]
    assert all(i.namespace == ("tasks", "gina") for i in page)


def test_search_with_a_query_ranks_the_matching_item_first(world: World) -> None:
    store = ChatMemoryStore(base_url=world.url, user_id="hugo")
    namespace = ("memories", "hugo")
    store.put(namespace, "a", {"text": "My sister lives in Montreal"})
    store.put(namespace, "b", {"text": "I am allergic to peanuts"})
    store.put(namespace, "c", {"text": "My favourite band is Radiohead"})
    [best, *_] = store.search(namespace, query="Which food allergy do I have?", limit=3)
    assert best.key == "b" and best.value == {"text": "I am allergic to peanuts"}
    # Failed before: score was always None.
    ranked = store.search(namespace, query="Which food allergy do I have?", limit=3)
    assert all(i.score is not None for i in ranked)
    assert [i.score for i in ranked] == sorted((i.score for i in ranked), reverse=True)
    [first] = store.search(namespace, query="Which food allergy do I have?", limit=1)
    assert (first.key, first.value) == (best.key, best.value)
    assert store.search(("elsewhere",), query="allergic to peanuts") == []


class CountingClient(ChatMemoryClient):
    """A client that counts its requests."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.requests: list[str] = []

    def _call(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        self.requests.append(f"{method} {path}")
        return super()._call(method, path, *args, **kwargs)


def test_a_query_in_a_small_namespace_finds_it_whatever_outranks_it_elsewhere(
    world: World,
) -> None:
    """Failed before: the namespace was applied on the client to the API's best 100 records, so
    an item that 100 records of other namespaces outranked was never found."""
    client = CountingClient(world.url, user_id="hana")
    store = ChatMemoryStore(client=client)
    for n in range(110):
        store.put(("noise",), f"n{n}", {"text": f"Gardening tip {n}: water tomato plants early"})
    store.put(("mine",), "only", {"text": "I grow tomatoes on my balcony"})
    client.requests.clear()
    [found] = store.search(("mine",), query="gardening tip: water tomato plants", limit=1)
    assert (found.namespace, found.key) == (("mine",), "only")
    assert found.score is not None
    assert client.requests == ["POST /memories/records/search"]  # the server did it


def test_records_the_server_made_are_items_of_the_profile_namespace(world: World) -> None:
    client = ChatMemoryClient(world.url, user_id="iris")
    stated = client.remember("I work as a nurse in Lyon")  # not through the store: no key
    store = ChatMemoryStore(base_url=world.url, user_id="iris")
    store.put(("memories", "iris"), "k1", {"text": "I play the cello"})

    [found] = store.search(("profile",), query="What is my job?")
    assert (found.namespace, found.key, found.value) == (
        ("profile",),
        stated.record_id,
        {"text": "I work as a nurse in Lyon"},
    )
    item = store.get(("profile",), stated.record_id)
    assert item is not None and item.value == {"text": "I work as a nurse in Lyon"}
    # Items put in the profile namespace are records keyed by the key alone.
    store.put(("profile",), "diet", {"text": "I am vegetarian"})
    assert client.get_record("diet").text == "I am vegetarian"
    assert sorted(store.list_namespaces()) == [("memories", "iris"), ("profile",)]
    assert {i.key for i in store.search((), query="cello nurse vegetarian", limit=10)} == {
        "k1",
        "diet",
        stated.record_id,
    }


def test_list_namespaces_matches_prefixes_suffixes_and_depth(world: World) -> None:
    store = ChatMemoryStore(base_url=world.url, user_id="jon")
    for namespace in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("x", "b")]:
        store.put(namespace, "k", {"text": f"Item of {'/'.join(namespace)}"})
    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("x", "b"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
    ]
    assert store.list_namespaces(suffix=("b",)) == [("x", "b")]
    assert store.list_namespaces(prefix=("*", "b"), suffix=("i",)) == [("a", "b", "d", "i")]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "b", "d", "e")]


def test_supersession_stays_inside_one_namespace(world: World) -> None:
    """Failed before: bob's "home" superseded alice's (supersession by subject crossed every
    record of the caller), so search(("memories", "alice")) came back empty."""
    store = ChatMemoryStore(base_url=world.url, user_id="app")
    store.put(("memories", "alice"), "home", {"text": "I live in Porto"})
    store.put(("memories", "bob"), "home", {"text": "I live in Lisbon"})
    [alice] = store.search(("memories", "alice"), query="Where do I live?")
    [bob] = store.search(("memories", "bob"), query="Where do I live?")
    assert alice.value == {"text": "I live in Porto"} and bob.value == {"text": "I live in Lisbon"}
    assert {i.key for i in store.search(("memories",))} == {"home"}
    assert len(store.search(("memories",))) == 2


def test_the_same_text_under_two_keys_is_two_items(world: World) -> None:
    """Failed before: the second superseded the first (same words, same subject), so a search
    showed only the newest."""
    store = ChatMemoryStore(base_url=world.url, user_id="kai")
    store.put(("memories",), "a", {"text": "I live in Lisbon"})
    store.put(("memories",), "b", {"text": "I live in Lisbon"})
    assert sorted(i.key for i in store.search(("memories",), query="Where do I live?")) == [
        "a",
        "b",
    ]


def test_in_the_profile_namespace_a_newer_record_supersedes_and_get_still_has_it(
    world: World,
) -> None:
    store = ChatMemoryStore(base_url=world.url, user_id="kim")
    namespace = ("profile",)
    store.put(namespace, "home-2019", {"text": "I live in Lisbon"})
    store.put(namespace, "home-2024", {"text": "I live in Porto"})
    # The profile keeps one current record per subject; the older is history.
    assert [i.key for i in store.search(namespace, query="Where do I live?")] == ["home-2024"]
    old = store.get(namespace, "home-2019")
    assert old is not None and old.value == {"text": "I live in Lisbon"}
    history = ChatMemoryStore(base_url=world.url, user_id="kim", include_history=True)
    assert {i.key for i in history.search(namespace, query="Where do I live?")} == {
        "home-2019",
        "home-2024",
    }
    # In another namespace, items are their keys: nothing supersedes.
    store.put(("trips",), "2019", {"text": "I live in Lisbon"})
    store.put(("trips",), "2024", {"text": "I live in Porto"})
    assert {i.key for i in store.search(("trips",), query="Where do I live?")} == {"2019", "2024"}


def test_values_up_to_64_kib_round_trip(world: World) -> None:
    """Failed before: a value over 1,000 characters was refused (a LangMem memory of 1,521
    characters crashed its graph)."""
    store = ChatMemoryStore(base_url=world.url, user_id="lena")
    memory = "I keep a detailed travel diary. " * 47  # 1,504 characters
    big = {"notes": "x" * 60_000, "tags": ["long"]}
    store.put(("memories",), "diary", {"text": memory.strip()})
    store.put(("memories",), "big", big)
    assert store.get(("memories",), "diary").value == {"text": memory.strip()}  # type: ignore[union-attr]
    assert store.get(("memories",), "big").value == big  # type: ignore[union-attr]
    assert {i.key for i in store.search(("memories",), query="travel diary")} >= {"diary"}
    with pytest.raises(Exception, match="65536|at most"):
        store.put(("memories",), "too-big", {"text": "y" * 70_000})


def test_list_namespaces_is_one_request_whatever_the_records(world: World) -> None:
    client = CountingClient(world.url, user_id="max")
    store = ChatMemoryStore(client=client)
    for n in range(120):
        store.put(("bulk",), f"k{n}", {"n": n})
    store.put(("rare", "one"), "k", {"n": -1})
    client.requests.clear()
    assert store.list_namespaces() == [("bulk",), ("rare", "one")]
    assert store.list_namespaces(prefix=("rare",), max_depth=1) == [("rare",)]
    assert client.requests == ["POST /memories/namespaces"] * 2


def test_put_refuses_what_no_record_id_can_hold(world: World) -> None:
    store = ChatMemoryStore(base_url=world.url, user_id="lee")
    with pytest.raises(ValueError, match="record id of 1[0-9]{2} characters"):
        store.put(("memories",), "k" * 120, {"text": "Too long a key"})
    assert store.get(("memories",), "k" * 120) is None
    with pytest.raises(ValueError, match="key cannot be empty"):
        store.put(("profile",), "", {"text": "No key"})


def test_an_item_put_with_a_ttl_expires_on_the_server_and_its_key_is_free(world: World) -> None:
    """put(..., ttl=minutes): the record gets an expiry (ttl_seconds, rounded up to a second);
    from then on get, search and list_namespaces leave it out, before DynamoDB's TTL (which
    DynamoDB Local never runs) deletes it, and a put creates the item again. Failed before:
    the store refused a TTL (supports_ttl was False)."""
    import time
    from datetime import datetime

    store = ChatMemoryStore(base_url=world.url, user_id="tess")
    assert store.supports_ttl
    # The lasting item first: the server's first put loads the embedding model, which takes
    # longer than the brief item lives.
    store.put(("notes", "lasting"), "car", {"text": "The car is a blue Golf"})
    store.put(("notes", "brief"), "parking", {"text": "Parked on level 3"}, ttl=5 / 60)
    record = ChatMemoryClient(world.url, user_id="tess").get_record(
        store.record_id(("notes", "brief"), "parking")
    )
    assert record.expires_at is not None
    expiry = datetime.fromisoformat(record.expires_at.replace("Z", "+00:00"))
    time.sleep(max(0.0, (expiry - datetime.now(UTC)).total_seconds()) + 0.5)
    assert store.get(("notes", "brief"), "parking") is None
    assert [i.key for i in store.search(("notes",), query="parked car level")] == ["car"]
    assert store.list_namespaces(prefix=("notes",)) == [("notes", "lasting")]
    store.put(("notes", "brief"), "parking", {"text": "Parked on level 5"})
    item = store.get(("notes", "brief"), "parking")
    assert item is not None and item.value == {"text": "Parked on level 5"}
    assert (
        ChatMemoryClient(world.url, user_id="tess")
        .get_record(store.record_id(("notes", "brief"), "parking"))
        .expires_at
        is None
    )


def test_a_default_ttl_applies_to_puts_without_one() -> None:
    from langgraph.store.base import PutOp

    sent: list[dict[str, Any]] = []

    class Client:
        def remember(self, text: str, **kw: Any) -> None:
            sent.append(kw)

    store = ChatMemoryStore(client=Client(), ttl_config={"default_ttl": 2.5})  # type: ignore[arg-type]
    store.put(("n",), "k", {"text": "x"})
    store.put(("n",), "k", {"text": "x"}, ttl=None)
    store.batch([PutOp(("n",), "k", {"text": "x"}, ttl=0.001)])
    assert [kw["ttl_seconds"] for kw in sent] == [150, None, 1]


def test_an_update_is_embedded_again_and_matches_as_a_new_item_with_its_text(world: World) -> None:
    """Issue 42: a put of an existing key with new content must not match its old embedding.
    The updated item scores, for a query of its old content, exactly as an item put fresh with
    the new content does (the same vector, the same words), and its old content no longer
    finds it first."""
    store = ChatMemoryStore(base_url=world.url, user_id="reembed")
    store.put(("notes",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("notes",), "doc2", {"text": "something about dogs"})
    assert store.search(("notes",), query="zany zebra Xerxes")[0].key == "doc1"

    store.put(("notes",), "doc1", {"text": "a quiet afternoon of gardening"})
    store.put(("notes",), "fresh", {"text": "a quiet afternoon of gardening"})
    scores = {r.key: r.score for r in store.search(("notes",), query="zany zebra Xerxes")}
    assert scores["doc1"] == pytest.approx(scores["fresh"])
    best = store.search(("notes",), query="gardening in the afternoon", limit=2)
    assert {r.key for r in best} == {"doc1", "fresh"}
