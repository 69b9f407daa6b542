"""ChatMemorySaver, LangGraph's checkpointer over the checkpoints API, against local mode
(DynamoDB Local and the real handlers): LangGraph's own conformance suite
(langgraph-checkpoint-conformance), a graph that keeps its state across savers, the messages
of a thread stored as its session's turns, and delete_thread as a session delete."""

from __future__ import annotations

import asyncio
import base64
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from chatmemory_client import BadRequest, ChatMemoryClient, Conflict, NotFound, PayloadTooLarge
from chatmemory_client.checkpoint import TurnNotStored
from chatmemory_client.langgraph import ChatMemorySaver
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from chatmemory import schema
from tests.integration.helpers import World

pytestmark = pytest.mark.integration


def conformance(url: str) -> CapabilityReport:
    """LangGraph's conformance suite, every capability, each with a saver of its own user."""

    @checkpointer_test(name="ChatMemorySaver")
    async def saver() -> Any:
        yield ChatMemorySaver(base_url=url, user_id=f"conformance-{uuid.uuid4()}")

    return asyncio.run(validate(saver))


def test_the_saver_passes_langgraphs_conformance_suite(world: World) -> None:
    report = conformance(world.url)
    report.print_report()  # pytest -s shows it, with the counts below (the closing note's)
    counts = {name: (r.tests_passed, r.tests_failed) for name, r in report.results.items()}
    print("passed, failed per capability:", counts)
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert report.passed_all_base(), failures


# --- a graph with a checkpointer --------------------------------------------------------------


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: Annotated[int, operator.add]


def answer(state: Chat) -> dict[str, Any]:
    said = state["messages"][-1].content
    return {"messages": [AIMessage(f"You said: {said}")], "steps": 1}


def chat_graph(saver: ChatMemorySaver) -> Any:
    builder = StateGraph(Chat)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=saver)


def test_a_threads_state_survives_a_new_saver_and_its_exchanges_are_turns(world: World) -> None:
    config = {"configurable": {"thread_id": "alice-trip"}}
    first = chat_graph(ChatMemorySaver(base_url=world.url, user_id="alice"))
    first.invoke({"messages": [HumanMessage("We fly to Porto in May.")], "steps": 0}, config)

    later = chat_graph(ChatMemorySaver(base_url=world.url, user_id="alice"))
    out = later.invoke({"messages": [HumanMessage("Book a window seat.")]}, config)
    assert [m.content for m in out["messages"]] == [
        "We fly to Porto in May.",
        "You said: We fly to Porto in May.",
        "Book a window seat.",
        "You said: Book a window seat.",
    ]
    assert out["steps"] == 2
    history = list(later.get_state_history(config))
    assert len(history) >= 4 and history[0].values["steps"] == 2

    client = ChatMemoryClient(world.url, user_id="alice")
    turns = list(client.list_turns("alice-trip"))
    assert [(t.input, t.response) for t in turns] == [
        ("We fly to Porto in May.", "You said: We fly to Porto in May."),
        ("Book a window seat.", "You said: Book a window seat."),
    ]
    assert ChatMemoryClient(world.url, user_id="bob").list_sessions() is not None
    with pytest.raises(NotFound):
        ChatMemoryClient(world.url, user_id="bob").get_session("alice-trip")
    bob = chat_graph(ChatMemorySaver(base_url=world.url, user_id="bob"))
    assert bob.get_state(config).values == {}


def test_deleting_a_thread_deletes_its_session_and_the_id_works_again(world: World) -> None:
    saver = ChatMemorySaver(base_url=world.url, user_id="carol")
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "carol-1"}}
    graph.invoke({"messages": [HumanMessage("My locker code is 4711.")], "steps": 0}, config)

    saver.delete_thread("carol-1")
    assert saver.get_tuple(config) is None
    assert list(saver.list(config)) == []
    client = ChatMemoryClient(world.url, user_id="carol")
    with pytest.raises(NotFound):
        client.get_session("carol-1")
    world.poller.drain()  # the purge
    table = world.dynamodb()
    items = table.scan(TableName=world_table(world, "checkpoints"))["Items"]
    assert items == []

    out = graph.invoke({"messages": [HumanMessage("Hello again.")], "steps": 0}, config)
    assert [m.content for m in out["messages"]] == ["Hello again.", "You said: Hello again."]


def world_table(world: World, logical: str) -> str:
    import os

    return os.environ[schema.CHECKPOINTS.env_var] if logical == "checkpoints" else logical


def test_a_checkpoint_over_the_limit_is_refused_with_a_clear_error(world: World) -> None:
    saver = ChatMemorySaver(base_url=world.url, user_id="dave")
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "dave-1"}}
    # Random bytes in text do not compress: 2.5 MB of state, over the 2 MiB of a checkpoint.
    huge = uuid.uuid4().hex * (2_500_000 // 32)
    with pytest.raises(PayloadTooLarge, match="at most 2097152"):
        graph.invoke({"messages": [HumanMessage(huge)], "steps": 0}, config)


def test_a_large_state_is_stored_across_items(world: World) -> None:
    saver = ChatMemorySaver(base_url=world.url, user_id="erin", store_turns=False)
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "erin-1"}}
    big = "".join(uuid.uuid4().hex for _ in range(25_000))  # 800 KB, twice in the state
    out = graph.invoke({"messages": [HumanMessage(big)], "steps": 0}, config)
    again = chat_graph(ChatMemorySaver(base_url=world.url, user_id="erin")).get_state(config)
    assert again.values["messages"][0].content == big
    assert out["messages"][-1].content.endswith(big[-10:])


def test_a_thread_keeps_its_checkpoints_when_its_session_is_continued(world: World) -> None:
    """The idle sweeper (here an explicit end) ends the thread's session; the next exchange's
    turn continues it in a new session under the same id, and the thread's checkpoints, kept in
    its first session's partition, are still its own."""
    saver = ChatMemorySaver(base_url=world.url, user_id="frank")
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "frank-1"}}
    graph.invoke({"messages": [HumanMessage("First.")], "steps": 0}, config)
    client = ChatMemoryClient(world.url, user_id="frank")
    first = client.end_session("frank-1")

    graph.invoke({"messages": [HumanMessage("Second.")]}, config)
    now = client.get_session("frank-1")
    assert now.session_id != first.session_id and now.continued_from == first.session_id
    out = chat_graph(ChatMemorySaver(base_url=world.url, user_id="frank")).invoke(
        {"messages": [HumanMessage("Third.")]}, config
    )
    assert [m.content for m in out["messages"] if m.type == "human"] == [
        "First.",
        "Second.",
        "Third.",
    ]
    assert out["steps"] == 3

    saver.delete_thread("frank-1")
    assert saver.get_tuple(config) is None
    with pytest.raises(NotFound):
        client.get_session(first.session_id)


def test_an_exchange_too_long_for_a_turn_warns_and_the_graph_goes_on(world: World) -> None:
    config = {"configurable": {"thread_id": "gina-1"}}
    long = "word " * 40_000  # 200,000 characters: over the API's input limit for a turn
    graph = chat_graph(ChatMemorySaver(base_url=world.url, user_id="gina"))
    with pytest.warns(TurnNotStored, match="not stored as a turn"):
        out = graph.invoke({"messages": [HumanMessage(long)], "steps": 0}, config)
    assert out["steps"] == 1
    assert graph.get_state(config).values["messages"][0].content == long
    assert list(ChatMemoryClient(world.url, user_id="gina").list_turns("gina-1")) == []

    strict = chat_graph(ChatMemorySaver(base_url=world.url, user_id="gina", strict_turns=True))
    with pytest.raises((PayloadTooLarge, BadRequest)):
        strict.invoke({"messages": [HumanMessage(long)]}, config)


# --- time travel: every branch keeps its own state -----------------------------------------


def test_time_travel_keeps_the_original_branch_as_it_was(world: World) -> None:
    """Run a graph, fork it by update_state on the checkpoint before its node ran, continue the
    fork: the original branch's last checkpoint still reads its own values (as with
    LangGraph's InMemorySaver), because a fork's channel versions never reuse the original's."""
    saver = ChatMemorySaver(base_url=world.url, user_id="hugo", store_turns=False)
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "hugo-1"}}
    graph.invoke({"messages": [HumanMessage("Original.", id="h1")], "steps": 0}, config)
    original = graph.get_state(config)
    before_node = next(s for s in graph.get_state_history(config) if s.next == ("answer",))

    fork = graph.update_state(
        before_node.config, {"messages": [HumanMessage("Forked.", id="h2")], "steps": 10}
    )
    graph.invoke(None, fork)

    again = graph.get_state(original.config)
    assert [m.content for m in again.values["messages"]] == [
        "Original.",
        "You said: Original.",
    ]
    assert again.values["steps"] == 1
    forked = graph.get_state(config)
    assert [m.content for m in forked.values["messages"]][-1] == "You said: Forked."
    assert forked.values["steps"] == 11
    reference = InMemorySaver()
    memory_graph = chat_graph(reference)  # type: ignore[arg-type]
    memory_graph.invoke({"messages": [HumanMessage("Original.", id="h1")], "steps": 0}, config)
    mem_before = next(s for s in memory_graph.get_state_history(config) if s.next == ("answer",))
    memory_graph.invoke(
        None,
        memory_graph.update_state(
            mem_before.config, {"messages": [HumanMessage("Forked.", id="h2")], "steps": 10}
        ),
    )
    ours = [(s.values, s.next) for s in graph.get_state_history(config)]
    theirs = [(s.values, s.next) for s in memory_graph.get_state_history(config)]
    assert _contents(ours) == _contents(theirs)


def _contents(history: list[tuple[dict[str, Any], tuple[str, ...]]]) -> list[Any]:
    return [
        ([m.content for m in values.get("messages", [])], values.get("steps"), next_)
        for values, next_ in history
    ]


def test_a_stored_version_never_changes_its_bytes(world: World) -> None:
    """A put of other bytes at a version the thread stores is refused (409) and the stored
    value stays; the same bytes again are a retry and accepted."""
    client = ChatMemoryClient(world.url, user_id="iris")
    client.ensure_session("iris-1")

    def put(checkpoint_id: str, data: bytes) -> Any:
        body = {
            "checkpoint": {"type": "json", "data": base64.b64encode(b"{}").decode()},
            "metadata": {"type": "json", "data": base64.b64encode(b"{}").decode()},
            "channel_versions": {"a": "7"},
            "blobs": [
                {"channel": "a", "version": "7", "type": "json",
                 "data": base64.b64encode(data).decode()},
            ],
        }  # fmt: skip
        return client._call("PUT", f"/sessions/iris-1/checkpoints/{checkpoint_id}", body)

    put("c1", b'"first"')
    put("c1", b'"first"')  # a retry
    with pytest.raises(Conflict):
        put("c2", b'"other"')
    stored = client._call("GET", "/sessions/iris-1/checkpoints/c1")["checkpoint"]["values"]
    assert [base64.b64decode(v["data"]) for v in stored] == [b'"first"']
    with pytest.raises(NotFound):
        client._call("GET", "/sessions/iris-1/checkpoints/c2")


def test_a_thread_stored_with_integer_versions_goes_on(world: World) -> None:
    """Threads stored before versions were unique (1, 2, 3 as LangGraph's default) continue:
    their integer versions are read as versions of the new form, and their values found."""

    class IntegerSaver(ChatMemorySaver):
        def get_next_version(self, current: Any, channel: None) -> Any:
            return 1 if current is None else int(current) + 1

    config = {"configurable": {"thread_id": "jo-1"}}
    old = chat_graph(IntegerSaver(base_url=world.url, user_id="jo", store_turns=False))
    old.invoke({"messages": [HumanMessage("Before.")], "steps": 0}, config)
    assert isinstance(old.get_state(config).values, dict)

    graph = chat_graph(ChatMemorySaver(base_url=world.url, user_id="jo", store_turns=False))
    out = graph.invoke({"messages": [HumanMessage("After.")]}, config)
    assert [m.content for m in out["messages"]] == [
        "Before.",
        "You said: Before.",
        "After.",
        "You said: After.",
    ]
    assert out["steps"] == 2


def test_deleting_a_threads_first_session_by_its_server_id_leaves_no_broken_thread(
    world: World,
) -> None:
    """A thread continued after an end, then its first session deleted by its server id: the
    whole thread is gone (its words were in every checkpoint), and the thread id works again
    as a new thread (it named a live session whose checkpoints answered 404 for good)."""
    saver = ChatMemorySaver(base_url=world.url, user_id="kim")
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "kim-1"}}
    graph.invoke({"messages": [HumanMessage("My PIN is 2468.")], "steps": 0}, config)
    client = ChatMemoryClient(world.url, user_id="kim")
    first = client.end_session("kim-1")
    graph.invoke({"messages": [HumanMessage("Second.")]}, config)
    later = client.get_session("kim-1")
    assert later.continued_from == first.session_id

    client.delete_session(first.session_id)
    with pytest.raises(NotFound):
        client.get_session(later.session_id)
    assert saver.get_tuple(config) is None
    out = graph.invoke({"messages": [HumanMessage("Hello again.")], "steps": 0}, config)
    assert [m.content for m in out["messages"]] == ["Hello again.", "You said: Hello again."]
    assert client.get_session("kim-1").session_id not in (first.session_id, later.session_id)
