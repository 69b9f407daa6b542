"""Recorded HTTP answers of local mode for the client's unit tests: the scenario that makes
them, how they are written (tests/client/recorded/local_mode.json) and how they are replayed.

The integration test `test_recorded_answers_still_match_local_mode` runs the scenario against a
real local mode and checks that every answer still has the recorded status and shape; with
CHATMEMORY_RECORD=1 it writes the file anew instead."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
import responses
from chatmemory_client import ChatMemoryClient, ChatMemoryError, sse
from chatmemory_client.langgraph import ChatMemorySaver
from langgraph.checkpoint.base import empty_checkpoint
from responses import matchers

RECORDED = Path(__file__).parent / "recorded" / "local_mode.json"
REPLAY_URL = "http://chatmemory.test"
USER = "alice"
AGENT = "agent"  # local mode's default agent (local/config.py DEFAULT_AGENTS)
# A framework's own messages kept with a turn (LangChain's message_to_dict).
TURN_MESSAGES = [
    {"type": "human", "data": {"content": "Is it warm in May?", "id": "h-1", "name": "ana"}},
    {
        "type": "ai",
        "data": {"content": "Around 22 °C.", "tool_calls": [], "id": "a-1", "name": "bot"},
    },
]
LONG_INPUT = "x" * 32_001  # over the API's default MAX_INPUT_CHARS (32,000)


class Recorder:
    """Collects each request the client sends and the answer it gets, under named steps."""

    def __init__(self) -> None:
        self.steps: dict[str, list[dict[str, Any]]] = {}
        self._current: list[dict[str, Any]] | None = None

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        assert name not in self.steps, name
        self._current = self.steps[name] = []
        try:
            yield
        finally:
            self._current = None

    def hook(self, answer: requests.Response, *_: Any, **__: Any) -> None:
        assert self._current is not None, "a request outside a step"
        sent = answer.request
        url = urlsplit(sent.url or "")
        body = sent.body
        content_type = answer.headers.get("Content-Type", "")
        self._current.append(
            {
                "method": sent.method,
                "path": url.path,
                "query": url.query,
                "request": json.loads(body) if body else None,
                "status": answer.status_code,
                "content_type": content_type,
                "response": _response_of(answer, content_type),
            }
        )


def _response_of(answer: requests.Response, content_type: str) -> Any:
    """A JSON answer's body; an event stream's events (read whole now: the client then reads
    them from the body kept in memory), each as {"event": name, "data": its JSON}."""
    if content_type.startswith("text/event-stream"):
        return [
            {"event": event.event, "data": json.loads(event.data)}
            for event in sse.events([answer.content])
        ]
    return answer.json() if "json" in content_type and answer.content else None


def event_stream(events: list[dict[str, Any]]) -> str:
    """Recorded events written as the server writes them (a ping first, as a quiet model gets)."""
    written = [": ping\n\n"]
    for event in events:
        written.append(f"event: {event['event']}\ndata: {json.dumps(event['data'])}\n\n")
    return "".join(written)


def expect_error(call: Callable[[], Any]) -> ChatMemoryError:
    try:
        call()
    except ChatMemoryError as error:
        return error
    raise AssertionError("the call did not fail")


def run_scenario(url: str, *, drain: Callable[[], None]) -> dict[str, list[dict[str, Any]]]:
    """Every route of the client, its errors, in an order that needs no waiting (drain steps
    consolidation). Returns the recorded exchanges by step."""
    recorder = Recorder()
    http = requests.Session()
    http.hooks["response"].append(recorder.hook)
    client = ChatMemoryClient(url, user_id=USER, session=http, max_retries=0)
    step = recorder.step
    with step("create_session"):
        trip = client.create_session("Trip planning")
    with step("create_second_session"):
        client.create_session("Packing list")
    with step("ensure_session"):
        client.ensure_session("user42-conv", "Thread")
    with step("ensure_session_again"):
        client.ensure_session("user42-conv")
    with step("store_turn_with_messages"):
        client.store_turn(
            "user42-conv",
            "Is it warm in May?",
            response="Around 22 °C.",
            client_message_id="t-messages",
            messages=TURN_MESSAGES,
        )
    _checkpoint_steps(client, step)
    with step("send_message"):
        client.send_message(
            trip.session_id,
            "I am planning a trip to Lisbon in May with my sister Ana",
            client_message_id="m-1",
            window_turns=4,
        )
    with step("send_message_retry"):
        client.send_message(
            trip.session_id,
            "I am planning a trip to Lisbon in May with my sister Ana",
            client_message_id="m-1",
            window_turns=4,
        )
    with step("store_turn"):
        client.store_turn(
            trip.session_id,
            "What should I pack for Lisbon?",
            response="Light clothes and good walking shoes.",
            client_message_id="t-2",
            created_at="2026-05-01T10:00:00Z",
            metadata={"agent": "planner", "step": 2, "confident": True, "score": 0.5},
        )
    with step("store_turn_retry"):
        client.store_turn(
            trip.session_id,
            "What should I pack for Lisbon?",
            response="Light clothes and good walking shoes.",
            client_message_id="t-2",
            created_at="2026-05-01T10:00:00Z",
            metadata={"agent": "planner", "step": 2, "confident": True, "score": 0.5},
        )
    with step("store_turn_reused_id"):
        expect_error(lambda: client.store_turn(trip.session_id, "Another", client_message_id="t-2"))
    with step("store_turn_pending"):
        client.store_turn(trip.session_id, "And the weather in May?", client_message_id="t-3")
    with step("get_turn"):
        client.get_turn(trip.session_id, 3)
    with step("complete_turn"):
        client.complete_turn(trip.session_id, 3, "Mostly sunny, around 22 °C.")
    with step("complete_turn_again"):
        client.complete_turn(trip.session_id, 3, "Mostly sunny, around 22 °C.")
    with step("complete_turn_conflict"):
        expect_error(lambda: client.complete_turn(trip.session_id, 3, "Rainy."))
    with step("complete_turn_metadata"):
        client.complete_turn(
            trip.session_id,
            2,
            "Light clothes and good walking shoes.",
            metadata={"agent": "editor"},
        )
    with step("set_feedback"):
        client.set_feedback(trip.session_id, 3, "up", "helpful")
    with step("set_feedback_invalid"):
        expect_error(lambda: client.set_feedback(trip.session_id, 3, "meh"))
    with step("list_turns_paged"):
        list(client.list_turns(trip.session_id, page_size=2))
    with step("list_turns_desc"):
        list(client.list_turns(trip.session_id, order="desc"))
    with step("get_session"):
        client.get_session(trip.session_id)
    with step("list_sessions_paged"):
        list(client.list_sessions(page_size=1))
    with step("get_turn_missing"):
        expect_error(lambda: client.get_turn(trip.session_id, 99))
    with step("get_session_missing"):
        expect_error(lambda: client.get_session("no-such-session"))
    with step("send_message_too_long"):
        expect_error(
            lambda: client.send_message(trip.session_id, LONG_INPUT, client_message_id="m-long")
        )
    with step("store_turn_blank"):
        expect_error(lambda: client.store_turn(trip.session_id, "   ", client_message_id="t-blank"))
    with step("export_session"):
        document = client.export_session(trip.session_id)
    with step("import_session"):
        copy = client.import_session(document)
    with step("end_session"):
        client.end_session(trip.session_id)
    with step("end_session_again"):
        client.end_session(trip.session_id)
    with step("store_turn_ended"):
        expect_error(
            lambda: client.store_turn(trip.session_id, "Still there?", client_message_id="t-9")
        )
    with step("send_message_ended"):
        expect_error(
            lambda: client.send_message(trip.session_id, "Still there?", client_message_id="m-9")
        )
    with step("stream_message_ended"):
        expect_error(
            lambda: client.stream_message(trip.session_id, "Still there?", client_message_id="s-9")
        )
    _hand_off_steps(url, http, client, step)
    _stream_steps(client, step)
    drain()
    with step("search_memories"):
        client.search_memories("trip to Lisbon with Ana", k=3)
    with step("remember"):
        fact = client.remember("I live in Porto", type="fact")
    with step("remember_keyed"):
        client.remember("I prefer green tea", type="preference", record_id="pref:tea")
    with step("remember_keyed_again"):
        client.remember("I prefer black tea", type="preference", record_id="pref:tea")
    with step("get_record"):
        client.get_record("pref:tea")
    with step("get_record_missing"):
        expect_error(lambda: client.get_record("no-such-record"))
    with step("correct_record"):
        client.correct_record(fact.record_id, "I live in Porto, near the river")
    with step("list_records_paged"):
        list(client.list_records(type="fact", page_size=1))
    with step("search_records"):
        client.search_records("what tea do I like", type="preference", limit=2)
    with step("remember_in_namespace"):
        client.remember(
            '{"kind":"trip","city":"Porto"}',
            record_id="memories:alice:trip",
            namespace=["memories", "alice"],
        )
    with step("find_records"):
        client.find_records(
            query="trip to Porto", namespace_prefix=["memories"], filter={"kind": "trip"}
        )
    with step("list_namespaces"):
        client.list_namespaces(prefix=["memories"], max_depth=1)
    with step("remember_for_agent"):
        client.remember("Prefers answers by email", agent_id="support-bot", run_id="r7")
    with step("find_records_of_agent"):
        client.find_records(query="email", agent_id="support-bot")
    with step("delete_record"):
        client.delete_record(fact.record_id)
    with step("delete_session"):
        client.delete_session(copy.session_id)
    with step("delete_session_missing"):
        expect_error(lambda: client.delete_session(copy.session_id))
    with step("create_session_end_previous"):
        client.create_session(end_previous=True)
    with step("deletion_status"):
        client.deletion_status()
    with step("forget_everything"):
        client.forget_everything()
    with step("list_sessions_after_forget"):
        list(client.list_sessions())
    return recorder.steps


def _checkpoint_steps(client: ChatMemoryClient, step: Callable[[str], Any]) -> None:
    """The checkpoint routes, as LangGraph's checkpointer (ChatMemorySaver) calls them."""
    saver = ChatMemorySaver(client=client)
    config: Any = {"configurable": {"thread_id": "graph-thread", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["id"] = "1f0a0000-0000-6000-8000-000000000001"
    checkpoint["channel_values"] = {"topic": "Lisbon"}
    checkpoint["channel_versions"] = {"topic": 1}
    with step("put_checkpoint"):  # the thread's session is made by the first checkpoint
        stored = saver.put(config, checkpoint, {"source": "input", "step": -1}, {"topic": 1})
    with step("put_writes"):
        saver.put_writes(stored, [("topic", "Porto")], "task-1")
    with step("get_checkpoint"):
        saver.get_tuple(stored)
    with step("get_checkpoint_latest"):
        saver.get_tuple(config)
    with step("list_checkpoints"):
        list(saver.list(config, filter={"source": "input"}, limit=5))


def _stream_steps(client: ChatMemoryClient, step: Callable[[str], Any]) -> None:
    """A message answered as a stream, and its retry (replayed from the stored turn)."""
    with step("create_session_for_stream"):
        chat = client.create_session("Streaming")
    for name in ("stream_message", "stream_message_retry"):
        with step(name):
            stream = client.stream_message(
                chat.session_id, "Tell me about Porto", client_message_id="s-1", window_turns=4
            )
            stream.collect()


def _hand_off_steps(
    url: str,
    http: requests.Session,
    client: ChatMemoryClient,
    step: Callable[[str], Any],
) -> None:
    """Hand-off to a person: the user asks for one, an agent (local mode's default agent,
    "agent") reads the queue and the session, replies and hands the session back."""
    agent = ChatMemoryClient(url, user_id=AGENT, session=http, max_retries=0)
    with step("create_session_for_handoff"):
        parcel = client.create_session("Parcel")
    with step("send_message_before_handoff"):
        client.send_message(parcel.session_id, "My parcel did not arrive", client_message_id="p-1")
    with step("request_handoff"):
        client.request_handoff(parcel.session_id, note="a lost parcel")
    with step("send_message_for_agent"):
        client.send_message(parcel.session_id, "It was order 1234", client_message_id="p-2")
    with step("list_handoffs"):
        list(agent.list_handoffs(state="WAITING", page_size=5))
    with step("read_handoff"):
        agent.read_handoff(parcel.session_id, page_size=5)
    with step("agent_reply"):
        agent.agent_reply(
            parcel.session_id, "Order 1234 arrives tomorrow.", client_message_id="a-1"
        )
    with step("hand_back"):
        agent.hand_back(parcel.session_id)
    with step("hand_back_again"):
        expect_error(lambda: agent.hand_back(parcel.session_id))
    with step("list_handoffs_as_user"):
        expect_error(lambda: list(client.list_handoffs()))


def load() -> dict[str, list[dict[str, Any]]]:
    steps: dict[str, list[dict[str, Any]]] = json.loads(RECORDED.read_text(encoding="utf-8"))
    return steps


def write(steps: dict[str, list[dict[str, Any]]]) -> None:
    RECORDED.parent.mkdir(parents=True, exist_ok=True)
    RECORDED.write_text(json.dumps(steps, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def replay(mock: responses.RequestsMock, exchanges: list[dict[str, Any]]) -> None:
    """Answers the recorded requests, in order, each only if the client sends the recorded
    method, path, query and JSON body."""
    for exchange in exchanges:
        url = REPLAY_URL + exchange["path"]
        if exchange["query"]:
            url += "?" + exchange["query"]
        match = []
        if exchange["request"] is not None:
            match.append(matchers.json_params_matcher(exchange["request"]))
        if exchange["content_type"].startswith("text/event-stream"):
            body = event_stream(exchange["response"])
        elif exchange["response"] is not None:
            body = json.dumps(exchange["response"])
        else:
            body = ""
        mock.add(
            exchange["method"],
            url,
            status=exchange["status"],
            body=body,
            content_type=exchange["content_type"] or "application/json",
            match=match,
        )


def shape(value: Any) -> Any:
    """A JSON value's structure: keys and kinds of values, not the values themselves. A list's
    items are merged into one shape, so its length does not matter."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        merged = None
        for item in value:
            merged = merge(merged, shape(item))
        return [] if merged is None else [merged]
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "str"


def merge(a: Any, b: Any) -> Any:
    """One shape for two: dicts by the union of their keys, lists by their items; a null
    beside a structure is left out (an optional object), other kinds are listed."""
    if a is None or a == "null" and not isinstance(b, str):
        return b
    if b is None or b == "null" and not isinstance(a, str):
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        return {key: merge(a.get(key), b.get(key)) for key in sorted(a.keys() | b.keys())}
    if isinstance(a, list) and isinstance(b, list):
        return [merge(a[0] if a else None, b[0] if b else None)] if a or b else []
    if isinstance(a, str) and isinstance(b, str):
        return "|".join(sorted(set(a.split("|")) | set(b.split("|"))))
    return "mixed"


def differences(live: Any, kept: Any, where: str = "") -> list[str]:
    """Where two shapes disagree, ignoring what only the data decides: how long a list is and
    whether an optional value happened to be null."""
    if live == "null" or kept == "null" or live == [] or kept == []:
        return []
    if isinstance(live, dict) and isinstance(kept, dict):
        found = [f"{where}.{key}: only in the live answer" for key in live.keys() - kept.keys()]
        found += [f"{where}.{key}: only in the recording" for key in kept.keys() - live.keys()]
        for key in live.keys() & kept.keys():
            found += differences(live[key], kept[key], f"{where}.{key}")
        return found
    if isinstance(live, list) and isinstance(kept, list):
        return differences(live[0], kept[0], where + "[]")
    if isinstance(live, str) and isinstance(kept, str):
        live_kinds, kept_kinds = set(live.split("|")) - {"null"}, set(kept.split("|")) - {"null"}
        return [] if live_kinds & kept_kinds else [f"{where}: {live} instead of {kept}"]
    return [f"{where}: {live!r} instead of {kept!r}"]


def step_shape(exchanges: list[dict[str, Any]]) -> tuple[list[str], Any]:
    """What a step's answers must keep: their methods and statuses, and one merged shape of
    their bodies (however many pages there were)."""
    kinds = sorted({f"{e['method']} {e['status']}" for e in exchanges})
    merged = None
    for exchange in exchanges:
        merged = merge(merged, shape(exchange["response"]))
    return kinds, merged
