"""One rule for every identifier (schema.ID_PATTERN): the API refuses an id outside it with 400
before anything is read, the Python client refuses it before anything is sent, and no id can
make a request reach another route.

Failed first: `POST /memories/records {"record_id": ".."}` was accepted, and
`ChatMemoryClient.delete_record("..")` sent `DELETE /memories/records/..`, which the HTTP library
collapses into `DELETE /memories`: the whole account was erased."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import requests
from chatmemory_client import ChatMemoryClient, InvalidId
from chatmemory_client import client as client_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatmemory import schema, wiring
from chatmemory.domain import is_identifier
from chatmemory.services.conversation.chat import ChatDeps
from chatmemory.services.conversation.sessions import new_id
from chatmemory.services.profile.entries import (
    extracted_record_id,
    stated_record_id,
    summary_record_id,
)
from local.config import ROOT
from tests.fakes import FakeGenerator
from tests.unit.test_chat_api import Api

BAD_IDS = ["..", ".", "...", "a b", "a#b", "a%2Fb", "x" * 129, "é", "a?b", "a\tb", ""]
# Every route with an id in its path, and a body it accepts (so only the id can be wrong).
ID_ROUTES = [
    ("GET", "/sessions/{session_id}", None),
    ("DELETE", "/sessions/{session_id}", None),
    ("POST", "/sessions/{session_id}/end", None),
    ("GET", "/sessions/{session_id}/export", None),
    ("GET", "/sessions/{session_id}/messages", None),
    ("POST", "/sessions/{session_id}/messages", {"content": "hi"}),
    ("POST", "/sessions/{session_id}/turns", {"input": "hi"}),
    ("POST", "/sessions/{session_id}/handoff", {}),
    ("GET", "/sessions/{session_id}/turns/1", None),
    ("PATCH", "/sessions/{session_id}/turns/1", {"response": "ok"}),
    ("PUT", "/sessions/{session_id}/turns/1/feedback", {"rating": "up"}),
    ("GET", "/agent/sessions/{session_id}", None),
    ("POST", "/agent/sessions/{session_id}/messages", {"content": "hi"}),
    ("POST", "/agent/sessions/{session_id}/handback", None),
    ("GET", "/memories/records/{record_id}", None),
    ("PATCH", "/memories/records/{record_id}", {"text": "I moved to Porto"}),
    ("DELETE", "/memories/records/{record_id}", None),
]


class Untouchable:
    """A short-term memory that fails the test on any use: a refused id is refused before
    anything is read."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"memory.{name} was used for a request that should be refused")


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> Api:
    from handlers import chat_api

    deps = ChatDeps(memory=Untouchable(), generator=FakeGenerator())  # type: ignore[arg-type]
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    return Api(chat_api.handler, lambda_context)


def _refused(status: int, data: Any) -> bool:
    """400; or, for a character Powertools' routes never take in a segment ("#", "?", a tab),
    its 404 "no such route": either way a JSON answer before anything was read."""
    if status == 404:
        return data["error"] == {"code": "not_found", "message": "no such route"}
    return status == 400 and data["error"]["code"] == "bad_request"


@pytest.mark.parametrize(("method", "template", "body"), ID_ROUTES)
def test_every_route_refuses_an_id_outside_the_rule_before_anything_is_read(
    api: Api, method: str, template: str, body: Any
) -> None:
    for bad in BAD_IDS:
        if not bad:
            continue  # an empty segment is another path: no such route (below)
        path = template.format(session_id=bad, record_id=bad)
        status, data = api.call(method, path, body, user="agent")
        assert _refused(status, data), (method, path, status, data)


def test_an_empty_id_is_no_route_and_reads_nothing(api: Api) -> None:
    status, data = api.call("GET", "/sessions//export")
    assert status in (400, 404) and "error" in data


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/sessions", {}, "continue_from"),
        ("/sessions/s1/messages", {"content": "hi"}, "client_message_id"),
        ("/sessions/s1/turns", {"input": "hi"}, "client_message_id"),
        ("/agent/sessions/s1/messages", {"content": "hi"}, "client_message_id"),
        ("/memories/records", {"text": "I moved to Porto"}, "record_id"),
    ],
)
def test_ids_in_bodies_follow_the_same_rule(
    api: Api, path: str, body: dict[str, Any], field: str
) -> None:
    for bad in BAD_IDS:
        status, data = api.call("POST", path, {**body, field: bad}, user="agent")
        assert _refused(status, data), (path, field, bad, status, data)


@pytest.mark.parametrize(
    "turn",
    ["0", "+1", " 1", "1 ", "1.0", "1e0", "-1", "0x1", "١", "9" * 39, "9" * 64, "1000000000"],
)
def test_a_turn_number_is_plain_digits_within_bounds(api: Api, turn: str) -> None:
    """Failed first: 39 to 64 digits answered 500 (DynamoDB numbers stop at 38), and " 1" and
    "+1" were read as turn 1."""
    for method, suffix, body in (
        ("GET", "", None),
        ("PATCH", "", {"response": "ok"}),
        ("PUT", "/feedback", {"rating": "up"}),
    ):
        status, data = api.call(method, f"/sessions/s1/turns/{turn}{suffix}", body)
        assert _refused(status, data), (method, turn, status, data)


# --- what the API issues follows the rule too ---------------------------------------------------

IDS = st.from_regex(schema.ID_PATTERN, fullmatch=True).filter(
    lambda s: len(s) <= schema.ID_MAX_LENGTH
)


@settings(max_examples=200, deadline=None)
@given(session_id=IDS, turn=st.integers(1, schema.MAX_TURN_NUMBER), n=st.integers(1, 999))
def test_record_ids_drawn_from_any_session_id_follow_the_rule(
    session_id: str, turn: int, n: int
) -> None:
    """A session id of 128 characters (a client may choose one, issue 26) must not make the
    ids of the records drawn from it longer than the rule allows."""
    from chatmemory.domain import Session

    date = "2026-11-23T10:07:00.000Z"
    session = Session(session_id, "alice", "n", "OPEN", date, date)
    for record_id in (
        extracted_record_id(session_id, date, turn, n),
        summary_record_id(session),
        stated_record_id(date, new_id),
    ):
        assert is_identifier(record_id), record_id
    assert is_identifier(new_id())


def test_the_client_the_page_and_the_published_contract_share_the_rule() -> None:
    assert client_module.ID_PATTERN.pattern == schema.ID_PATTERN
    assert client_module.ID_MAX_LENGTH == schema.ID_MAX_LENGTH
    assert client_module.MAX_TURN_NUMBER == schema.MAX_TURN_NUMBER
    document = json.loads((ROOT / "openapi.json").read_text(encoding="utf-8"))
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] != "path":
                    continue
                found = parameter["schema"]
                if parameter["name"] == "turn":
                    assert (found["minimum"], found["maximum"]) == (1, schema.MAX_TURN_NUMBER)
                else:
                    assert found["pattern"] == schema.ID_PATTERN, (path, parameter)
                    assert found["maxLength"] == schema.ID_MAX_LENGTH
    page = (ROOT / "local" / "web" / "schema.js").read_text(encoding="utf-8")
    assert json.dumps(schema.ID_PATTERN) in page


# --- no id reaches another route ---------------------------------------------------------------


def _routes() -> list[Any]:
    from handlers import chat_routes

    resolver = chat_routes.api(())
    return list(resolver._static_routes) + list(resolver._dynamic_routes)


def _dispatched(method: str, path: str) -> tuple[str, dict[str, str]] | None:
    """The route Powertools serves `method path` with (static routes first, then dynamic ones,
    first match), and its path parameters: what API Gateway's one proxy route hands it."""
    for route in _routes():
        if route.method == method:
            found = route.rule.match(path)
            if found:
                return route.path, found.groupdict()
    return None


def _sent_path(url: str) -> str:
    """The path the HTTP library really sends for `url` (requests and urllib3 remove dot
    segments), decoded as API Gateway passes it to the Lambda."""
    from urllib.parse import unquote, urlsplit

    prepared = requests.Request("GET", url).prepare()
    return unquote(urlsplit(prepared.url or "").path)


class _Recording:
    """The client's HTTP session: records the URL of each request instead of sending it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def request(self, method: str, url: str, **_: Any) -> Any:
        self.sent.append((method, url))
        raise requests.ConnectionError("not sent")

    def close(self) -> None:
        pass


def _client_calls(session_id: Any, record_id: Any, turn: Any) -> list[tuple[str, Any]]:
    """Every client call whose path holds an id, with the route it means."""
    return [
        ("GET /sessions/<session_id>", lambda c: c.get_session(session_id)),
        ("POST /sessions/<session_id>/end", lambda c: c.end_session(session_id)),
        ("DELETE /sessions/<session_id>", lambda c: c.delete_session(session_id)),
        ("POST /sessions/<session_id>/messages", lambda c: c.send_message(session_id, "hi")),
        ("POST /sessions/<session_id>/turns", lambda c: c.store_turn(session_id, "hi")),
        ("GET /sessions/<session_id>/turns/<turn>", lambda c: c.get_turn(session_id, turn)),
        (
            "PATCH /sessions/<session_id>/turns/<turn>",
            lambda c: c.complete_turn(session_id, turn, response="ok"),
        ),
        (
            "PUT /sessions/<session_id>/turns/<turn>/feedback",
            lambda c: c.set_feedback(session_id, turn, "up"),
        ),
        ("GET /sessions/<session_id>/messages", lambda c: list(c.list_turns(session_id))),
        ("POST /sessions/<session_id>/handoff", lambda c: c.request_handoff(session_id)),
        ("GET /agent/sessions/<session_id>", lambda c: c.read_handoff(session_id)),
        (
            "POST /agent/sessions/<session_id>/messages",
            lambda c: c.agent_reply(session_id, "hi"),
        ),
        ("POST /agent/sessions/<session_id>/handback", lambda c: c.hand_back(session_id)),
        ("GET /sessions/<session_id>/export", lambda c: c.export_session(session_id)),
        ("GET /memories/records/<record_id>", lambda c: c.get_record(record_id)),
        ("PATCH /memories/records/<record_id>", lambda c: c.correct_record(record_id, "x")),
        ("DELETE /memories/records/<record_id>", lambda c: c.delete_record(record_id)),
    ]


def _check_reaches_its_own_route(session_id: Any, record_id: Any, turn: Any) -> None:
    for meant, call in _client_calls(session_id, record_id, turn):
        recording = _Recording()
        client = ChatMemoryClient(
            "http://127.0.0.1:9",
            user_id="alice",
            max_retries=0,
            session=recording,  # type: ignore[arg-type]
        )
        try:
            call(client)
        except InvalidId:
            assert not recording.sent  # refused before anything was sent
            continue
        except Exception:  # noqa: BLE001 - the recording session refuses to send
            pass
        [(method, url)] = recording.sent
        served = _dispatched(method, _sent_path(url))
        assert served is not None, (meant, url)
        route, params = served
        assert f"{method} {route}" == meant, (url, route)
        expected = {"session_id": session_id, "record_id": record_id, "turn": str(turn)}
        assert params == {k: expected[k] for k in params}, (url, params)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    session_id=st.one_of(IDS, st.text(max_size=20), st.sampled_from(BAD_IDS + ["import"])),
    record_id=st.one_of(IDS, st.text(max_size=20), st.sampled_from(BAD_IDS)),
    turn=st.one_of(st.integers(-2, 10**40), st.sampled_from([True, 1.0, "1", "+1"])),
)
def test_no_id_can_make_a_client_request_reach_another_route(
    session_id: Any, record_id: Any, turn: Any
) -> None:
    """Whatever a caller passes as an id, the client either refuses it before sending or sends
    a request that Powertools serves with the route meant, with that very id."""
    _check_reaches_its_own_route(session_id, record_id, turn)


def test_the_dot_segments_of_the_report_are_refused_by_the_client() -> None:
    recording = _Recording()
    client = ChatMemoryClient("http://127.0.0.1:9", max_retries=0, session=recording)  # type: ignore[arg-type]
    for call in (
        lambda: client.delete_record(".."),
        lambda: client.delete_session(".."),
        lambda: client.get_session("."),
        lambda: client.remember("x", record_id=".."),
        lambda: client.send_message("s1", "hi", client_message_id="a b"),
        lambda: client.continue_session("../memories"),
    ):
        with pytest.raises(InvalidId):
            call()
    assert recording.sent == []
    assert re.fullmatch(schema.ID_PATTERN, "import")  # a route's word is no danger: see above
