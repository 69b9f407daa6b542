"""bench.coldstart's floor: bare boto3 making exactly the clients and calls a handler made."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from bench import coldstart

# A stand-in handler: a handler module imported, then two clients and two calls, one of which
# names the sample's session.
_HANDLER = (
    coldstart._PRELUDE
    + """
import handlers.http
import boto3
events = boto3.client("events")
events.put_events(Entries=[{"Source": "chat", "DetailType": "handoff", "EventBusName": "bus",
                            "Detail": json.dumps({"session_id": "session-recorded"})}])
boto3.client("bedrock-runtime").invoke_model(modelId="m", body=b"{}")
print(json.dumps({}))
"""
)


@pytest.fixture
def endpoints() -> Iterator[dict[str, str]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), coldstart._Canned)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{server.server_address[1]}"}
    finally:
        server.shutdown()


def test_the_floor_makes_the_clients_and_calls_the_handler_made(
    endpoints: dict[str, str], tmp_path: Path
) -> None:
    env = coldstart._env("serverless", endpoints)
    coldstart._Canned.seen.clear()
    steps = coldstart._recorded(_HANDLER, env)
    assert [(kind, service, what[0] if what else None) for kind, service, what in steps] == [
        ("client", "events", None),
        ("call", "events", "PutEvents"),
        ("client", "bedrock-runtime", None),
        ("call", "bedrock-runtime", "InvokeModel"),
    ]
    handler_requests = dict(coldstart._Canned.seen)

    coldstart._Canned.seen.clear()
    code = coldstart._floor_code(steps, tmp_path, "session-recorded", "session-of-this-round")
    answer = coldstart._run(code, env)

    # the same requests, once each, and nothing of the project imported
    assert dict(coldstart._Canned.seen) == handler_requests
    assert answer["heavy"] == ["boto3"]  # of HEAVY: no pydantic, no opensearch-py
    # the same clients and calls, recorded as the handler's were, with this round's session
    floor_steps = coldstart._recorded(code, env, first="\nimport boto3\n")
    assert floor_steps == coldstart._swapped(steps, "session-recorded", "session-of-this-round")
    detail = floor_steps[1][2][1]["Entries"][0]["Detail"]
    assert "session-of-this-round" in detail and "session-recorded" not in detail


# --- --snapstart: init, then a fork; the child is the restored environment --------------------


def test_a_snapstart_sample_counts_from_the_restore_on(endpoints: dict[str, str]) -> None:
    env = coldstart._env("serverless", endpoints)
    code = coldstart._code("index_setup", snapstart=True)
    # the fork falls between the handler's import (its init) and its first invocation
    assert code.index("import handlers.index_setup") < code.index("os.fork()")
    assert code.index("os.fork()") < code.index("wiring.long_term_index()")
    whole = coldstart._run(coldstart._code("index_setup"), env)
    restored = coldstart._run(code, env | coldstart.SNAP_START_ENV)
    # Its clocks start at the restore: no import is timed, and its CPU (which a forked child
    # starts at zero) is a fraction of a whole cold start's, interpreter and imports included.
    assert restored["import_ms"] == 0
    assert restored["answer_cpu_ms"] < whole["answer_cpu_ms"] / 3


def test_a_forked_samples_instructions_are_the_childs_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # callgrind reports each process; a forked child's count starts from its parent's total.
    reports = {
        "one process": ("==7== Collected : 1000\n", 1000),
        "forked": ("==7== Collected : 1000\n==8== Collected : 1300\n", 300),
    }

    def fake(stderr: str) -> object:
        return type("Done", (), {"returncode": 0, "stdout": "{}\n", "stderr": stderr})()

    for stderr, own in reports.values():
        monkeypatch.setattr(coldstart.subprocess, "run", lambda *a, _e=stderr, **k: fake(_e))
        assert coldstart._run("", {}, instructions=True)["instructions"] == own
