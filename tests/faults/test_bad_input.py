"""Hand-written bad input against local mode's HTTP API (the gateway, the real handler, DynamoDB
Local, the embedded index and the offline models): malformed JSON, wrong types, huge bodies,
unicode edge cases, path traversal, query injection in ids and search text, and ids of other
users. Every answer is a JSON error or a valid reply, never a stack trace, and whatever was
stored before is byte for byte the same after the rejected requests."""

from __future__ import annotations

import base64
import http.client
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest

from chatmemory import schema, wiring
from chatmemory.adapters.embedded import EmbeddedLongTermIndex, owner_token
from chatmemory.schema import MEMORY_INDEX
from local.gateway import MAX_BODY_BYTES
from tests.integration.helpers import World

pytestmark = pytest.mark.integration

MAX_INPUT_CHARS = schema.MAX_INPUT_CHARS_DEFAULT  # Settings' default, which local mode keeps


@dataclass
class Seeded:
    world: World
    alice_open: str
    alice_past: str
    bob_open: str

    def call(
        self,
        method: str,
        path: str,
        body: bytes | str | None = None,
        *,
        user: str | None = "alice",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """One raw HTTP request; the body is sent exactly as given."""
        host, port = self.world.url.removeprefix("http://").split(":")
        sent = {"Content-Type": "application/json"}
        if user is not None:
            sent["X-User-Id"] = user
        sent.update(headers or {})
        raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            connection.request(method, path, body=raw, headers=sent)
            answer = connection.getresponse()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        finally:
            connection.close()


def _snapshot(world: World) -> dict[str, Any]:
    """Everything stored: both tables item by item, the long-term index, the dead letters."""
    client = world.dynamodb()
    cfg = wiring.settings()
    tables = {}
    for table in (cfg.sessions_table, cfg.conversations_table, cfg.users_table, cfg.records_table):
        items = [
            i
            for page in client.get_paginator("scan").paginate(TableName=table)
            for i in page["Items"]
        ]
        # default: binary attributes (the small-talk vectors' cache item) as hex.
        tables[table] = sorted(json.dumps(i, sort_keys=True, default=bytes.hex) for i in items)
    index = EmbeddedLongTermIndex(cfg.memory_path)
    docs = index._db.execute(
        "SELECT idx, doc_key, user_id, session_id, kind, text, created_at, meta, embedding "
        "FROM docs ORDER BY idx, doc_key"
    ).fetchall()
    return {"tables": tables, "docs": docs, "dead": world.poller.dead_letters.entries()}


@pytest.fixture
def seeded(world: World) -> Iterator[Seeded]:
    api = world.api
    past = api.new_session("Garden", user="alice")
    for line in ("my tomatoes have blight on the lower leaves", "I watered them at the base"):
        api.say(past, line, user="alice")
    api.end(past, user="alice")
    world.poller.drain()
    assert api.status(past, user="alice") == "CONSOLIDATED"
    alice_open = api.new_session("Open", user="alice")
    api.say(alice_open, "remind me to buy seeds", user="alice")
    bob_open = api.new_session("Bob's", user="bob")
    api.say(bob_open, "bob's private note", user="bob")
    yield Seeded(world, alice_open, past, bob_open)


def _assert_json_error(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    text = body.decode("utf-8")
    assert 400 <= status < 500 or status in (502, 503), (status, text)
    assert headers["content-type"].startswith("application/json"), headers
    assert "Traceback" not in text and 'File "' not in text
    data = json.loads(text)
    assert set(data) == {"error"} and set(data["error"]) == {"code", "message"}, data
    assert isinstance(data["error"]["code"], str) and data["error"]["message"]
    return data["error"]


def _token(key: dict[str, Any]) -> str:
    raw = json.dumps(key, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _bad_requests(s: Seeded) -> list[tuple[str, str, str, bytes | str | None, dict[str, str]]]:
    """(label, method, path, body, headers): each must be refused with a 4xx JSON error."""
    mine = f"/sessions/{s.alice_open}"
    post = f"{mine}/messages"
    lone = '{"content": "tell me \\ud800 something"}'
    big = json.dumps({"content": "x" * (MAX_INPUT_CHARS + 1)})
    huge_response = {"messages": [{"input": "hi", "response": "y" * 500_000}]}
    many = {"messages": [{"input": ""}] * 2_001}

    def import_of_31(last: dict[str, Any]) -> str:
        """30 good messages and a bad 31st: the whole document is refused before any write."""
        return json.dumps({"messages": [{"input": f"m{i}"} for i in range(30)] + [last]})

    deep = "[" * 100_000 + "]" * 100_000
    nested_source = '{"messages": [{"input": "x", "sources": [' + "[" * 5000 + "]" * 5000 + "]}]}"
    session_token = {"session_id": {"S": ""}, "user_id": {"S": ""}, "started_at": {"S": ""}}
    cases: list[tuple[str, str, str, bytes | str | None, dict[str, str]]] = [
        # malformed JSON and wrong types
        ("not json", "POST", post, "{not json", {}),
        ("truncated", "POST", post, '{"content": "hi"', {}),
        ("empty body", "POST", post, "", {}),
        ("null", "POST", post, "null", {}),
        ("array", "POST", post, "[1, 2]", {}),
        ("number content", "POST", post, '{"content": 5}', {}),
        ("list content", "POST", post, '{"content": ["hi"]}', {}),
        ("null content", "POST", post, '{"content": null}', {}),
        ("unknown field", "POST", post, '{"content": "hi", "admin": true}', {}),
        ("empty content", "POST", post, '{"content": "   "}', {}),
        ("negative window", "POST", post, '{"content": "hi", "window_turns": -1}', {}),
        ("huge window", "POST", post, '{"content": "hi", "window_turns": 1e9}', {}),
        ("empty message id", "POST", post, '{"content": "hi", "client_message_id": ""}', {}),
        (
            "long message id",
            "POST",
            post,
            json.dumps({"content": "hi", "client_message_id": "m" * 129}),
            {},
        ),
        ("invalid utf-8", "POST", post, b'{"content": "\xff\xfe"}', {}),
        ("bad session json", "POST", "/sessions", "{bad", {}),
        ("name type", "POST", "/sessions", '{"name": 7}', {}),
        ("long name", "POST", "/sessions", json.dumps({"name": "n" * 201}), {}),
        ("import not json", "POST", "/sessions/import", "{bad", {}),
        ("import wrong shape", "POST", "/sessions/import", '{"messages": {"input": "x"}}', {}),
        (
            "import bad intent",
            "POST",
            "/sessions/import",
            '{"messages": [{"input": "x", "intent": "admin"}]}',
            {},
        ),
        ("limit text", "GET", "/sessions?limit=abc", None, {}),
        ("limit zero", "GET", "/sessions?limit=0", None, {}),
        ("limit big", "GET", "/sessions?limit=101", None, {}),
        ("order", "GET", f"{mine}/messages?order=sideways", None, {}),
        ("no q", "GET", "/memories", None, {}),
        ("empty q", "GET", "/memories?q=", None, {}),
        ("k zero", "GET", "/memories?q=tomatoes&k=0", None, {}),
        ("q too long", "GET", "/memories?q=" + "a" * 1001, None, {}),
        # huge bodies
        ("content over MAX_INPUT_CHARS", "POST", post, big, {}),
        (
            "import input over MAX_INPUT_CHARS",
            "POST",
            "/sessions/import",
            json.dumps({"messages": [{"input": "x" * (MAX_INPUT_CHARS + 1)}]}),
            {},
        ),
        ("import response of 500 KB", "POST", "/sessions/import", json.dumps(huge_response), {}),
        ("import of 2001 messages", "POST", "/sessions/import", json.dumps(many), {}),
        # numbers and nesting that parse in Python but are no data (each was a 500)
        ("nested 100000 deep", "POST", post, deep, {}),
        ("nested in a body", "POST", post, '{"content": ' + deep + "}", {}),
        ("nested in sources", "POST", "/sessions/import", nested_source, {}),
        (
            "5000-digit integer",
            "POST",
            post,
            '{"content": "hi", "window_turns": 1' + "0" * 4999 + "}",
            {},
        ),
        (
            "import year 1 +01:00",
            "POST",
            "/sessions/import",
            import_of_31({"input": "x", "created_at": "0001-01-01T00:00:00+01:00"}),
            {},
        ),
        (
            "import year 9999 -01:00",
            "POST",
            "/sessions/import",
            import_of_31({"input": "x", "created_at": "9999-12-31T23:59:59-01:00"}),
            {},
        ),
        (
            "import year 1 Z",
            "POST",
            "/sessions/import",
            import_of_31({"input": "x", "created_at": "0001-01-01T00:00:00Z"}),
            {},
        ),
        (
            "import started year 1",
            "POST",
            "/sessions/import",
            json.dumps({"session": {"started_at": "0001-01-01T00:00:00Z"}, "messages": []}),
            {},
        ),
        (
            "import in the future",
            "POST",
            "/sessions/import",
            import_of_31({"input": "x", "created_at": "2999-01-01T00:00:00Z"}),
            {},
        ),
        (
            "score NaN",
            "POST",
            "/sessions/import",
            import_of_31({"input": "x", "sources": [{"id": "s"}]}).replace(
                '"id": "s"', '"id": "s", "score": NaN'
            ),
            {},
        ),
        (
            "score Infinity",
            "POST",
            "/sessions/import",
            import_of_31({"input": "x", "sources": [{"id": "s"}]}).replace(
                '"id": "s"', '"id": "s", "score": -Infinity'
            ),
            {},
        ),
        (
            "score 1e400",
            "POST",
            "/sessions/import",
            import_of_31({"input": "x", "sources": [{"id": "s"}]}).replace(
                '"id": "s"', '"id": "s", "score": 1e400'
            ),
            {},
        ),
        (
            "score 10^400",
            "POST",
            "/sessions/import",
            import_of_31({"input": "x", "sources": [{"id": "s"}]}).replace(
                '"id": "s"', '"id": "s", "score": 1' + "0" * 400
            ),
            {},
        ),
        (
            "score 1e308",
            "POST",
            "/sessions/import",
            import_of_31({"input": "x", "sources": [{"id": "s", "score": 1e308}]}),
            {},
        ),
        (
            "source of a source",
            "POST",
            "/sessions/import",
            import_of_31({"input": "x", "sources": [{"id": {"S": "s"}}]}),
            {},
        ),
        # loose types: a string or a boolean is not a number, a number is not a boolean
        ("window as text", "POST", post, '{"content": "hi", "window_turns": "5"}', {}),
        ("window as bool", "POST", post, '{"content": "hi", "window_turns": true}', {}),
        ("end_previous as text", "POST", "/sessions", '{"end_previous": "yes"}', {}),
        ("end_previous as 1", "POST", "/sessions", '{"end_previous": 1}', {}),
        ("limit 1.0", "GET", "/sessions?limit=1.0", None, {}),
        ("limit 1e1", "GET", "/sessions?limit=1e1", None, {}),
        ("k 2.0", "GET", "/memories?q=tomatoes&k=2.0", None, {}),
        # unicode that is not Unicode: lone surrogates, escaped in otherwise valid JSON
        ("lone surrogate content", "POST", post, lone, {}),
        ("lone surrogate name", "POST", "/sessions", '{"name": "\\udfff"}', {}),
        (
            "lone surrogate id",
            "POST",
            post,
            '{"content": "hi", "client_message_id": "\\ud83d"}',
            {},
        ),
        (
            "lone surrogate import",
            "POST",
            "/sessions/import",
            '{"messages": [{"input": "ok", "response": "\\udc00"}]}',
            {},
        ),
        ("lone surrogate past", "POST", post, '{"content": "/past \\ud800 tomatoes"}', {}),
        # path traversal
        ("encoded traversal", "GET", "/sessions/..%2F..%2Fetc%2Fpasswd", None, {}),
        ("raw traversal", "GET", "/sessions/../../etc/passwd", None, {}),
        ("dot dot id", "GET", "/sessions/%2e%2e", None, {}),
        ("traversal to bob", "GET", f"/sessions/{s.alice_open}%2F..%2F{s.bob_open}", None, {}),
        ("traversal delete", "DELETE", f"/sessions/..%2F{s.bob_open}", None, {}),
        ("static traversal", "GET", "/static/..%2F..%2F..%2Fetc%2Fpasswd", None, {}),
        # query injection in ids
        ("sql in id", "GET", "/sessions/" + quote("' OR 1=1 --", safe=""), None, {}),
        (
            "sql in post id",
            "POST",
            "/sessions/" + quote("' OR '1'='1", safe="") + "/messages",
            '{"content": "hi"}',
            {},
        ),
        ("dynamo json id", "GET", "/sessions/" + quote('{"S": "x"}', safe=""), None, {}),
        ("nul id", "GET", "/sessions/%00", None, {}),
        ("long id", "GET", "/sessions/" + "a" * 5000, None, {}),
        # tokens and identities
        ("garbage token", "GET", "/sessions?next_token=" + quote("' OR 1=1 --"), None, {}),
        (
            "token of wrong types",
            "GET",
            "/sessions?next_token="
            + _token(
                {"session_id": {"S": "x"}, "user_id": {"S": "alice"}, "started_at": {"BOOL": True}}
            ),
            None,
            {},
        ),
        (
            "turn token of wrong type",
            "GET",
            f"{mine}/messages?next_token="
            + _token({"session_id": {"S": s.alice_open}, "turn": {"S": "one"}}),
            None,
            {},
        ),
        (
            "turn token of bad number",
            "GET",
            f"{mine}/messages?next_token="
            + _token({"session_id": {"S": s.alice_open}, "turn": {"N": "NaN"}}),
            None,
            {},
        ),
        ("token of empty keys", "GET", "/sessions?next_token=" + _token(session_token), None, {}),
        (
            "turn token of empty id",
            "GET",
            f"{mine}/messages?next_token=" + _token({"session_id": {"S": ""}, "turn": {"N": "1"}}),
            None,
            {},
        ),
        ("bad user header", "GET", "/sessions", None, {"X-User-Id": "../bob"}),
        ("long user header", "GET", "/sessions", None, {"X-User-Id": "u" * 129}),
    ]
    # ids of other users: bob's session on every route, as alice
    theirs = f"/sessions/{s.bob_open}"
    for method, path, body in [
        ("GET", theirs, None),
        ("POST", f"{theirs}/end", None),
        ("POST", f"{theirs}/messages", '{"content": "let me in", "client_message_id": "x"}'),
        ("GET", f"{theirs}/messages", None),
        ("GET", f"{theirs}/export", None),
        ("DELETE", theirs, None),
    ]:
        cases.append((f"bob's session: {method} {path[-12:]}", method, path, body, {}))
    return cases


def test_bad_requests_get_json_errors_and_change_nothing(seeded: Seeded) -> None:
    before = _snapshot(seeded.world)
    failures = []
    for label, method, path, body, headers in _bad_requests(seeded):
        status, got_headers, answer = seeded.call(method, path, body, headers=headers)
        try:
            error = _assert_json_error(status, got_headers, answer)
            assert status < 500, status
        except (AssertionError, ValueError) as problem:
            failures.append(f"{label}: {status} {answer[:200]!r} ({problem})")
            continue
        if "bob's session" in label:
            assert (status, error["code"]) == (404, "session_not_found"), label
            assert b"private" not in answer
    assert failures == [], "\n".join(failures)
    assert _snapshot(seeded.world) == before


def test_a_body_over_the_gateway_cap_is_refused_before_it_is_read(seeded: Seeded) -> None:
    before = _snapshot(seeded.world)
    host, port = seeded.world.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        # The headers announce more than the cap; the gateway answers without reading on.
        sock.sendall(
            f"POST /sessions/{seeded.alice_open}/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
            '{"content": "'.encode()
        )
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        status, headers, body = answer.status, dict(answer.getheaders()), answer.read()
    error = _assert_json_error(status, {k.lower(): v for k, v in headers.items()}, body)
    assert (status, error["code"]) == (413, "payload_too_large")
    assert _snapshot(seeded.world) == before


@pytest.mark.parametrize(
    "content_type",
    ["Application/Json", "application/JSON", "APPLICATION/JSON; charset=UTF-8", "application/json"],
)
def test_a_json_media_type_in_any_letter_case_is_json(seeded: Seeded, content_type: str) -> None:
    """Failed first: every route with a body answered 500 unless the type was lower case."""
    headers = {"Content-Type": content_type}
    status, _, body = seeded.call("POST", "/sessions", '{"name": "Case"}', headers=headers)
    assert status == 201, body
    sid = json.loads(body)["session"]["session_id"]
    post = f"/sessions/{sid}/messages"
    status, _, body = seeded.call("POST", post, '{"content": "hello"}', headers=headers)
    assert status == 200, body


def test_a_message_id_reused_for_other_content_is_a_conflict_and_stores_nothing(
    seeded: Seeded,
) -> None:
    """Failed first: the retry silently answered with the first message's turn."""
    post = f"/sessions/{seeded.alice_open}/messages"
    first = json.dumps({"content": "buy seeds", "client_message_id": "same-id"})
    status, _, body = seeded.call("POST", post, first)
    assert status == 200, body
    before = _snapshot(seeded.world)
    other = json.dumps({"content": "sell the house", "client_message_id": "same-id"})
    status, headers, body = seeded.call("POST", post, other)
    error = _assert_json_error(status, headers, body)
    assert (status, error["code"]) == (409, "conflict")
    assert "different message" in error["message"]
    assert _snapshot(seeded.world) == before
    status, _, body = seeded.call("POST", post, first)  # the true retry still replays
    assert status == 200 and json.loads(body)["turn"]["input"] == "buy seeds"


def test_an_imported_score_too_small_for_dynamodb_is_stored_rounded(seeded: Seeded) -> None:
    """Failed first (found by the fuzzer): a score of 1e-300 is finite and in range, but
    DynamoDB numbers stop at 1E-130, so the import answered 500 half way."""
    message = {
        "input": "x",
        "sources": [{"id": "s", "score": 1e-300}, {"id": "t", "score": 0.1234567}],
    }
    status, _, body = seeded.call("POST", "/sessions/import", json.dumps({"messages": [message]}))
    assert status == 201, body
    sid = json.loads(body)["session"]["session_id"]
    status, _, body = seeded.call("GET", f"/sessions/{sid}/messages")
    scores = [s.get("score") for s in json.loads(body)["messages"][0]["sources"]]
    assert scores == [0.0, 0.123457]


def test_an_import_at_the_edge_of_the_time_range_stores_canonical_timestamps(
    seeded: Seeded,
) -> None:
    """Failed first: a year-1 time as the last of 31 messages was stored as
    "1-01-01T00:00:00.000Z"; times with offsets are stored in one UTC form."""
    messages = [{"input": f"m{i}", "created_at": "2024-05-01T10:00:00+02:00"} for i in range(31)]
    status, _, body = seeded.call("POST", "/sessions/import", json.dumps({"messages": messages}))
    assert status == 201, body
    sid = json.loads(body)["session"]["session_id"]
    status, _, body = seeded.call("GET", f"/sessions/{sid}/messages?limit=100")
    stamps = {m["created_at"] for m in json.loads(body)["messages"]}
    assert stamps == {"2024-05-01T08:00:00.000Z"}


UNICODE = [
    "NUL \u0000 inside",
    "right-to-left \u200f mark and \u202e override",
    "emoji 😀 family 👨‍👩‍👧 flag 🇵🇹",
    "combining e\u0301 and a\u030a and Z\u0335\u0321\u031b",
    "byte order mark \ufeff and zero width \u200b space",
    "ümlaut, 中文, العربية, עברית",
]


def test_unicode_edge_cases_are_stored_and_returned_exactly(seeded: Seeded) -> None:
    sid = seeded.world.api.new_session("😀 e\u0301 \u202e", user="carol")
    for i, text in enumerate(UNICODE):
        status, _, body = seeded.call(
            "POST",
            f"/sessions/{sid}/messages",
            json.dumps({"content": text, "client_message_id": f"u-{i}"}),
            user="carol",
        )
        assert status == 200, body
        assert json.loads(body)["turn"]["input"] == text
    status, _, body = seeded.call(
        "POST",
        f"/sessions/{sid}/messages",
        json.dumps({"content": "/past 😀 e\u0301"}),
        user="carol",
    )
    assert status == 200, body
    listed = seeded.world.api.ok("GET", f"/sessions/{sid}/messages", user="carol")["messages"]
    assert [m["input"] for m in listed[:-1]] == UNICODE
    assert [m["client_message_id"] for m in listed[:-1]] == [f"u-{i}" for i in range(len(UNICODE))]
    session = seeded.world.api.ok("GET", f"/sessions/{sid}", user="carol")["session"]
    assert session["name"] == "😀 e\u0301 \u202e"
    exported = seeded.world.api.ok("GET", f"/sessions/{sid}/export", user="carol")
    assert [m["input"] for m in exported["messages"][:-1]] == UNICODE


INJECTIONS = [
    "' OR 1=1 --",
    "NEAR(blight tomatoes)",
    '"',
    "*",
    "AND OR NOT",
    "tomatoes* OR blight^2",
    "text : blight OR owner : *",
    '{"$ne": null}',
    "a" * 1000,
]


def test_search_text_with_query_syntax_finds_only_the_callers_memories(seeded: Seeded) -> None:
    before = _snapshot(seeded.world)
    alice = owner_token(MEMORY_INDEX, "alice")
    for text in [*INJECTIONS, f"owner : {alice}", f"{alice} blight"]:
        for user in ("alice", "bob"):
            status, _, body = seeded.call(
                "GET", "/memories?" + f"q={quote(text, safe='')}&k=50", user=user
            )
            assert status == 200, (text, body)
            found = json.loads(body)["memories"]
            assert {m["session_id"] for m in found} <= (
                {seeded.alice_past} if user == "alice" else set()
            ), (user, text, found)
    assert _snapshot(seeded.world) == before

    # The same text as /past questions: a valid answer that cites none of alice's sessions.
    for text in INJECTIONS[:4] + [f"owner : {alice}"]:
        turn = seeded.world.api.say(seeded.bob_open, f"/past {text}", user="bob")
        assert turn["sources"] == [], (text, turn)
        assert "blight" not in turn["response"]
