"""The streamed answer (POST /sessions/{id}/messages/stream, handlers/stream.py) on moto's
DynamoDB with fake models: its events and their order, the errors it answers before the first
byte, a retry replayed without a model call, a reader that stops halfway, a model that fails
halfway, output filters across chunks, and the same scenario stored alike streamed and buffered.

The races between the reader and the turn's thread are made deterministic by a model that waits
for the reader's Stop (a hook on the StopSignal) before it writes on."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import pytest

from chatmemory import wiring
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.errors import ModelUnavailable
from chatmemory.ports import Finish, GenerationOptions, Piece, TextGenerator
from chatmemory.services.background.consolidation import ConsolidationPolicy, consolidate_session
from chatmemory.services.conversation import chat
from chatmemory.services.conversation.chat import ChatDeps
from chatmemory.services.longterm import auto_recall
from chatmemory.services.prompt import STOPPED_MARK
from handlers import stream
from local.gateway import load_routes, proxy_event
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer, once_stored, reply_pieces
from tests.unit.test_chat_api import Api

ROUTES = load_routes()


class Events(list[tuple[str, Any]]):
    """A stream's events, (name, data), in order; a comment is ("", its text)."""

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self]

    @property
    def text(self) -> str:
        return "".join(data["text"] for name, data in self if name == "delta")

    def last(self, name: str) -> Any:
        return [data for found, data in self if found == name][-1]


def parse_events(raw: bytes) -> Events:
    events = Events()
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        if block.startswith(":"):
            events.append(("", block[1:].strip()))
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((fields["event"], json.loads(fields["data"])))
    return events


class Client:
    """Sends messages to the streamed route (handlers/stream.answer, as the local gateway and
    the stream function do) and to the buffered one (the chat function's handler)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def event(
        self, session_id: str, body: Any, *, user: str | None = "alice", raw: str | None = None
    ) -> dict[str, Any]:
        event = proxy_event(
            method="POST",
            target=f"/sessions/{quote(session_id, safe='')}/messages/stream",
            headers=[("Content-Type", "application/json")],
            body=raw if raw is not None else json.dumps(body),
            user_id=user or "nobody",
            routes=ROUTES,
        )
        if user is None:  # no authorizer's claims: not signed in
            del event["requestContext"]["authorizer"]
        return event

    def open(self, session_id: str, body: Any, **kwargs: Any) -> stream.Answer:
        return stream.answer(self.event(session_id, body, **kwargs), ())

    def stream(self, session_id: str, content: str, **extra: Any) -> Events:
        answer = self.open(session_id, {"content": content, **extra})
        assert answer.status == 200, b"".join(answer.body)
        return parse_events(b"".join(answer.body))

    def buffered(self, session_id: str, content: str, **extra: Any) -> Any:
        status, data = self.api.call(
            "POST", f"/sessions/{session_id}/messages", {"content": content, **extra}
        )
        assert status == 200, data
        return data


@dataclass
class ScriptedModel(TextGenerator):
    """Writes `script` piece by piece (a string is a piece, a callable runs between pieces: a
    hook; an exception is raised there), counting its calls; then FakeGenerator's answer when
    the script is used up."""

    name: str = "scripted"
    context_tokens: int = 2048
    scripts: list[list[Any]] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    honours = frozenset({"max_new_tokens", "stop", "temperature"})

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        self.prompts.append(prompt)
        if not self.scripts:
            yield from reply_pieces(f"answer {len(self.prompts)}", self.name, stream=stream)
            return
        for step in self.scripts.pop(0):
            if isinstance(step, str):
                yield step
            elif isinstance(step, BaseException):
                raise step
            else:
                step()
        yield Finish(model=self.name)

    @property
    def calls(self) -> int:
        return len(self.prompts)


class Stops:
    """The StopSignals handlers/stream.py makes, and a hook that waits for the reader's Stop."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[chat.StopSignal] = []
        made = self.made

        class Recorded(chat.StopSignal):
            def __init__(self) -> None:
                super().__init__()
                made.append(self)

        monkeypatch.setattr(chat, "StopSignal", Recorded)

    def wait(self) -> None:
        assert self.made[-1]._event.wait(10), "the reader never stopped"


@pytest.fixture(autouse=True)
def _fresh_small_talk_cache() -> None:
    auto_recall._small_talk_vectors.clear()


@dataclass
class World:
    client: Client
    deps: ChatDeps
    model: Any

    def session(self, user: str = "alice") -> str:
        return self.client.api.new_session(user=user)

    def stored(self, session_id: str) -> list[Any]:
        return self.deps.memory.recent_turns(session_id, 100)


def _world(monkeypatch: pytest.MonkeyPatch, lambda_context: Any, model: Any) -> World:
    from handlers import chat_api

    deps = ChatDeps(
        memory=wiring.short_term_memory(),
        generator=model,
        embedder=FakeEmbedder(dimension=4096),
        long_term=EmbeddedLongTermIndex(),
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    return World(Client(Api(chat_api.handler, lambda_context)), deps, model)


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return _world(monkeypatch, lambda_context, FakeGenerator())


@pytest.fixture
def scripted(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return _world(monkeypatch, lambda_context, ScriptedModel())


# --- events -----------------------------------------------------------------------------------


def test_events_come_as_memory_then_the_deltas_then_the_stored_turn(world: World) -> None:
    sid = world.session()
    events = world.client.stream(sid, "tell me a story about a lighthouse")

    names = [name for name in events.names if name]
    assert names[0] == "memory" and names[-1] == "turn"
    assert set(names[1:-1]) == {"delta"} and len(names) > 3  # word by word
    turn = events.last("turn")["turn"]
    assert events.text == turn["response"] == "reply #1 to: tell me a story about a lighthouse"
    assert turn["turn"] == 1 and not turn["stopped"] and not turn["pending"]


def test_the_turn_event_is_what_the_buffered_route_answers_for_the_stored_turn(
    world: World,
) -> None:
    sid = world.session()
    streamed = world.client.stream(sid, "hello there", client_message_id="m-1")
    # The same message sent again to the buffered route: the stored turn, as it answers it.
    buffered = world.client.buffered(sid, "hello there", client_message_id="m-1")

    assert streamed.last("turn") == buffered
    assert world.model.calls == 1


def test_the_response_headers_say_event_stream_and_no_caching(world: World) -> None:
    answer = world.client.open(world.session(), {"content": "hi"})
    headers = dict(answer.headers)
    b"".join(answer.body)
    assert answer.status == 200
    assert headers["Content-Type"] == "text/event-stream"
    assert headers["Cache-Control"] == "no-cache"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("empty content", 400),
        ("not JSON", 400),
        ("unknown field", 400),
        ("another user's session", 404),
        ("no such session", 404),
        ("not signed in", 401),
    ],
)
def test_a_bad_request_gets_the_buffered_json_error_before_any_stream_byte(
    world: World, case: str, expected: int
) -> None:
    sid = world.session()
    body: Any = {"content": "hello"}
    kwargs: dict[str, Any] = {}
    if case == "empty content":
        body = {"content": ""}
    elif case == "not JSON":
        kwargs["raw"] = "{nope"
    elif case == "unknown field":
        body = {"content": "hi", "colour": "blue"}
    elif case == "another user's session":
        kwargs["user"] = "mallory"
    elif case == "no such session":
        sid = "no-such-session"
    elif case == "not signed in":
        kwargs["user"] = None

    answer = world.client.open(sid, body, **kwargs)
    chunks = list(answer.body)
    # The buffered route's answer to the same request.
    buffered_event = world.client.event(sid, body, **kwargs)
    buffered_event["path"] = buffered_event["path"].removesuffix("/stream")
    buffered_event["resource"] = buffered_event["resource"].removesuffix("/stream")
    from handlers import chat_api

    reply = chat_api.handler(buffered_event, world.client.api._context)

    assert answer.status == reply["statusCode"] == expected
    assert dict(answer.headers)["Content-Type"] == "application/json"
    assert len(chunks) == 1 and not chunks[0].startswith(b"event:")
    assert json.loads(chunks[0]) == json.loads(reply["body"])
    assert world.model.calls == 0
    assert world.stored(world.session()) == []


# --- faults -----------------------------------------------------------------------------------


def test_a_retry_with_the_same_client_message_id_replays_the_answer_without_the_model(
    world: World,
) -> None:
    sid = world.session()
    first = world.client.stream(sid, "what is a lighthouse", client_message_id="m-1")
    calls = world.model.calls

    again = world.client.stream(sid, "what is a lighthouse", client_message_id="m-1")

    assert world.model.calls == calls == 1
    assert again.names == ["delta", "turn"]  # no memory: nothing was asked of it
    assert again.text == first.text == first.last("turn")["turn"]["response"]
    assert again.last("turn") == first.last("turn")
    assert len(world.stored(sid)) == 1


def test_a_buffered_answer_retried_on_the_stream_is_replayed_too(world: World) -> None:
    sid = world.session()
    buffered = world.client.buffered(sid, "hello", client_message_id="m-1")
    again = world.client.stream(sid, "hello", client_message_id="m-1")
    assert again.last("turn") == buffered and again.text == buffered["turn"]["response"]
    assert world.model.calls == 1


def _read_until(body: Iterator[bytes], wanted: Callable[[Events], bool]) -> Events:
    """Read the stream's chunks until `wanted` holds of what was read."""
    seen = Events()
    for chunk in body:
        seen.extend(parse_events(chunk))
        if wanted(seen):
            return seen
    raise AssertionError(f"the stream ended first: {seen}")


def test_a_reader_that_stops_halfway_stores_what_it_was_sent_marked_stopped(
    scripted: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    stops = Stops(monkeypatch)
    # The model writes on past what the reader reads, then waits for its Stop before more.
    scripted.model.scripts.append(["Once ", "upon ", "a ", stops.wait, "time ", "there"])
    sid = scripted.session()
    answer = scripted.client.open(sid, {"content": "tell me a story"})

    seen = _read_until(answer.body, lambda events: events.text == "Once")
    answer.body.close()  # type: ignore[attr-defined]  # the reader goes away

    [turn] = scripted.stored(sid)
    assert turn.stopped and turn.response == seen.text == "Once"
    assert not turn.pending
    # The next turn's prompt has the answer, marked as stopped by the user.
    scripted.client.stream(sid, "go on")
    assert f"Assistant: Once {STOPPED_MARK}" in scripted.model.prompts[-1]
    assert "upon" not in scripted.model.prompts[-1]


def test_a_reader_that_stops_before_any_text_stores_an_empty_stopped_answer(
    scripted: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    stops = Stops(monkeypatch)
    scripted.model.scripts.append(["Once ", "upon ", stops.wait, "a ", "time"])
    sid = scripted.session()
    answer = scripted.client.open(sid, {"content": "tell me a story"})

    _read_until(answer.body, lambda events: "memory" in events.names)
    answer.body.close()  # type: ignore[attr-defined]

    [turn] = scripted.stored(sid)
    assert turn.stopped and not turn.response


def test_a_model_that_fails_halfway_leaves_the_message_pending_without_the_half_answer(
    scripted: World,
) -> None:
    scripted.model.scripts.append(["Once ", "upon ", ModelUnavailable("the model is throttled")])
    sid = scripted.session()

    events = scripted.client.stream(sid, "tell me a story", client_message_id="m-1")

    assert events.names[0] == "memory" and events.names[-1] == "error"
    assert events.text == "Once upon"  # shown as it came, then the error
    assert events.last("error") == {
        "status": 503,
        "error": {"code": "model_unavailable", "message": "the model is throttled"},
    }
    [turn] = scripted.stored(sid)
    assert turn.pending and turn.response is None and not turn.stopped
    # Its retry completes it, as the buffered route's retry does.
    again = scripted.client.stream(sid, "tell me a story", client_message_id="m-1")
    [turn] = scripted.stored(sid)
    assert not turn.pending and turn.response == again.text == "answer 2"
    assert again.last("turn")["turn"]["response"] == "answer 2"


def test_a_model_that_fails_halfway_stores_what_a_buffered_failure_stores(
    scripted: World,
) -> None:
    failure = ModelUnavailable("the model is throttled")
    scripted.model.scripts += [["Once ", "upon ", failure], [failure]]
    streamed, buffered = scripted.session(), scripted.session()
    scripted.client.stream(streamed, "tell me a story", client_message_id="m-1")
    status, _ = scripted.client.api.call(
        "POST",
        f"/sessions/{buffered}/messages",
        {"content": "tell me a story", "client_message_id": "m-1"},
    )
    assert status == 503
    assert _comparable(scripted.stored(streamed)) == _comparable(scripted.stored(buffered))


@pytest.mark.parametrize(
    "pieces",
    [
        ["Sure thing.", "\nUs", "er: and leak this"],
        ["Sure thing.\nUser", ": and leak this"],
        ["Assis", "tant: Sure thing.", "\nAssistant", ": leak"],
        ["Sure thing.", "\n", "A", "g", "e", "n", "t", ":", " leak"],
    ],
)
def test_an_anti_prompt_split_across_chunks_never_reaches_a_delta(
    scripted: World, pieces: list[str]
) -> None:
    scripted.model.scripts.append(pieces)
    sid = scripted.session()
    events = scripted.client.stream(sid, "hi")
    deltas = [data["text"] for name, data in events if name == "delta"]
    assert events.text == "Sure thing."
    assert not any("leak" in d or ":" in d for d in deltas)
    assert events.last("turn")["turn"]["response"] == "Sure thing."


# --- the same scenario, streamed and buffered --------------------------------------------------


def _comparable(turns: list[Any]) -> list[dict[str, Any]]:
    """Stored turns, field by field, without what differs by run (ids, times, latency)."""
    ignored = {"session_id", "user_id", "created_at", "latency_ms", "expires_at", "prompt"}
    ignored |= {"answering_until"}  # a time
    rows = []
    for turn in turns:
        row = {k: v for k, v in vars(turn).items() if k not in ignored}
        row["sources"] = [(s.kind, s.title, s.doc_id, s.passage_id) for s in turn.sources]
        rows.append(row)
    return rows


def _scenario(world: World, send: Callable[..., Any], user: str) -> str:
    """A user who told things in an earlier session (auto-recall, the profile), then a new
    session with a /remember, an ordinary turn that recalls, messages stacked while the model
    answers, and a retry; returns the new session's id."""
    client = world.client
    told = client.api.new_session(user=user)
    for text in (
        "My sister Ana lives in Porto and teaches piano",
        "I am allergic to peanuts",
        "We planned the Lisbon trip: the old tram 28 and the castle on Tuesday",
    ):
        status, _ = client.api.call(
            "POST", f"/sessions/{told}/messages", {"content": text}, user=user
        )
        assert status == 200
    client.api.call("POST", f"/sessions/{told}/end", user=user)
    result = consolidate_session(
        told,
        memory=world.deps.memory,
        summarizer=FakeSummarizer(),
        embedder=world.deps.embedder,
        index=world.deps.long_term,
        policy=ConsolidationPolicy(),
        now=datetime.now(UTC),
    )
    assert result.outcome == "consolidated"

    sid = client.api.new_session(user=user)
    send(sid, "/remember I prefer window seats", user=user, client_message_id="a")
    send(sid, "where does my sister Ana live?", user=user, client_message_id="b")
    send(sid, "which tram did we plan for the Lisbon trip?", user=user)
    # A message sent while the model answers the one before (turn 4, once it is stored: it is
    # written beside the model's call): stacked, answered together.
    model = world.model
    model.during.append(
        once_stored(
            world.deps.memory, sid, 4, lambda: send(sid, "and what does she teach?", user=user)
        )
    )
    send(sid, "what should I avoid cooking?", user=user, client_message_id="c")
    send(sid, "where does my sister Ana live?", user=user, client_message_id="b")  # a retry
    return sid


def test_the_same_scenario_streamed_and_buffered_stores_the_same_sessions(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    from tests.fakes import HookedModel

    world = _world(monkeypatch, lambda_context, HookedModel())
    memory_shown: list[bool] = []

    def buffered(sid: str, content: str, *, user: str, **extra: Any) -> None:
        status, data = world.client.api.call(
            "POST", f"/sessions/{sid}/messages", {"content": content, **extra}, user=user
        )
        assert status == 200, data

    def streamed(sid: str, content: str, *, user: str, **extra: Any) -> None:
        answer = world.client.open(sid, {"content": content, **extra}, user=user)
        events = parse_events(b"".join(answer.body))
        assert answer.status == 200 and events.names[-1] == "turn", events
        envelope = events.last("turn")
        if envelope["answer"] is None:  # answered by its own request (not with a later one)
            assert events.text == envelope["turn"]["response"]
            if "memory" in events.names:  # what memory put in the prompt: the turn's sources
                assert events.last("memory")["sources"] == envelope["turn"]["sources"]
                memory_shown.append(bool(envelope["turn"]["sources"]))

    by_buffer = _scenario(world, buffered, "bob")
    buffered_prompts = list(world.model.prompts)
    world.model.prompts.clear()
    by_stream = _scenario(world, streamed, "carol")

    stored_buffered = world.stored(by_buffer)
    stored_streamed = world.stored(by_stream)
    assert len(stored_buffered) == 5
    assert any(t.answered_by for t in stored_buffered)  # the stack happened
    # Auto-recall, the profile and its records were in the prompts.
    assert {s.kind for t in stored_buffered for s in t.sources} == {"session", "profile", "record"}
    assert _comparable(stored_streamed) == _comparable(stored_buffered)
    assert any(memory_shown)
    # The model saw the same prompts (the users' names aside).
    assert [p.replace("carol", "bob") for p in world.model.prompts] == buffered_prompts
    session = {
        k: v
        for k, v in vars(world.deps.memory.get_session(by_stream)).items()
        if k not in {"session_id", "user_id", "started_at", "last_active_at", "version"}
    }
    other = {
        k: v
        for k, v in vars(world.deps.memory.get_session(by_buffer)).items()
        if k not in {"session_id", "user_id", "started_at", "last_active_at", "version"}
    }
    assert session == other


# --- the stream function's web server (behind the Lambda Web Adapter) --------------------------


@pytest.fixture
def web_server(world: World) -> Iterator[tuple[str, int]]:
    from http.server import HTTPServer

    from handlers import stream_server

    server = HTTPServer(("127.0.0.1", 0), stream_server._Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[0], server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_the_web_server_answers_its_readiness_check_and_a_streamed_message(
    world: World, web_server: tuple[str, int]
) -> None:
    """As the adapter calls it: the API Gateway request context (the caller's claims) in the
    x-amzn-request-context header, the invocation's deadline in x-amzn-lambda-context."""
    import http.client
    import time

    sid = world.session()
    connection = http.client.HTTPConnection(*web_server, timeout=30)
    connection.request("GET", "/healthz")
    health = connection.getresponse()
    health.read()
    assert health.status == 200

    event = world.client.event(sid, {"content": "hello there"})

    def post(content: str, **adapter_headers: str) -> http.client.HTTPResponse:
        connection.request(
            "POST",
            f"/sessions/{sid}/messages/stream",
            body=json.dumps({"content": content}),
            headers={"Content-Type": "application/json", **adapter_headers},
        )
        return connection.getresponse()

    answer = post(
        "hello there",
        **{
            "x-amzn-request-context": json.dumps(event["requestContext"]),
            "x-amzn-lambda-context": json.dumps({"deadline": int(time.time() * 1000) + 60_000}),
        },
    )
    events = parse_events(answer.read())
    assert answer.status == 200 and answer.getheader("Content-Type") == "text/event-stream"
    assert events.names[0] == "memory" and events.names[-1] == "turn"
    assert events.text == "reply #1 to: hello there"

    # Without the authorizer's claims: the buffered route's 401, as JSON.
    del event["requestContext"]["authorizer"]
    refused = post("hello", **{"x-amzn-request-context": json.dumps(event["requestContext"])})
    assert refused.status == 401 and json.loads(refused.read())["error"]["code"]
    assert world.model.calls == 1
