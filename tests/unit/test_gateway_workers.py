"""The local gateway's worker processes (`workers=N`): requests run at once, as on N Lambda
instances, and a worker that dies is replaced."""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local.gateway import Gateway

# The workers import this module's handler by its dotted path, as they import the chat handler.
HANDLER = f"{__name__}.marking_handler"
# How long a handler waits for another request's mark before giving up: only reached when the
# requests did not run at once (the test then fails on what the handler answered).
WAIT_SECONDS = 20.0


def marking_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A handler that leaves marks (files) in the folder the request names, so that a test can
    tell the order in which requests ran from what the handlers saw. It can wait for another
    request's mark (`wait_for`) and crash its process (`crash`)."""
    order = json.loads(event["body"] or "{}")
    folder = Path(order["folder"])
    (folder / f"{order['name']}.started").write_text(str(os.getpid()))
    if order.get("crash"):
        os._exit(3)
    if order.get("fail"):
        raise RuntimeError("secret internals")
    saw = _wait_for(folder / f"{order['wait_for']}.done") if order.get("wait_for") else None
    (folder / f"{order['name']}.done").write_text(str(os.getpid()))
    return {
        "statusCode": 200,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps({"pid": os.getpid(), "saw": saw}),
    }


def _wait_for(mark: Path, seconds: float = WAIT_SECONDS) -> bool:
    deadline = time.monotonic() + seconds
    while not mark.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with Gateway(HANDLER, port=0, web_dir=tmp_path, workers=2) as running:
        yield running


def _post(gateway: Gateway, order: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    host, port = gateway.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.request("POST", "/orders", body=json.dumps(order))
    answer = connection.getresponse()
    body = json.loads(answer.read())
    connection.close()
    return answer.status, body


def _post_in_background(gateway: Gateway, order: dict[str, Any]) -> tuple[threading.Thread, list]:
    answers: list[tuple[int, dict[str, Any]]] = []
    thread = threading.Thread(target=lambda: answers.append(_post(gateway, order)))
    thread.start()
    return thread, answers


def test_a_slow_request_does_not_hold_up_a_fast_one(gateway: Gateway, tmp_path: Path) -> None:
    # The slow request waits inside its handler until the fast one has finished: with one
    # request at a time the fast one could not run, and the slow one would give up.
    folder = str(tmp_path)
    thread, slow = _post_in_background(
        gateway, {"folder": folder, "name": "slow", "wait_for": "fast"}
    )
    assert _wait_for(tmp_path / "slow.started", 60)
    assert _post(gateway, {"folder": folder, "name": "fast"})[0] == 200
    thread.join(60)
    assert slow and slow[0][0] == 200
    assert slow[0][1]["saw"] is True
    pids = {(tmp_path / f"{name}.done").read_text() for name in ("slow", "fast")}
    assert len(pids) == 2 and str(os.getpid()) not in pids


def test_a_handler_error_in_a_worker_answers_502_json(gateway: Gateway, tmp_path: Path) -> None:
    status, body = _post(gateway, {"folder": str(tmp_path), "name": "failing", "fail": True})
    assert status == 502 and body["error"]["code"] == "bad_gateway"
    assert "secret internals" not in json.dumps(body)
    assert _post(gateway, {"folder": str(tmp_path), "name": "next"})[0] == 200


def test_a_crashed_worker_answers_502_and_the_next_request_works(
    gateway: Gateway, tmp_path: Path
) -> None:
    status, body = _post(gateway, {"folder": str(tmp_path), "name": "crash", "crash": True})
    assert status == 502 and body["error"]["code"] == "bad_gateway"
    crashed = int((tmp_path / "crash.started").read_text())
    for attempt in range(3):
        status, body = _post(gateway, {"folder": str(tmp_path), "name": f"after{attempt}"})
        assert status == 200 and body["pid"] != crashed


def test_stopping_the_gateway_ends_its_workers_even_a_busy_one(tmp_path: Path) -> None:
    gateway = Gateway(HANDLER, port=0, web_dir=tmp_path, workers=2).start()
    try:
        idle = _post(gateway, {"folder": str(tmp_path), "name": "idle"})[1]["pid"]
        thread, _ = _post_in_background(
            gateway, {"folder": str(tmp_path), "name": "busy", "wait_for": "never"}
        )
        assert _wait_for(tmp_path / "busy.started", 60)
        busy = int((tmp_path / "busy.started").read_text())
    finally:
        gateway.stop(grace_seconds=0.2)
    thread.join(60)
    # The busy handler was ended, not waited for: it never wrote its done mark.
    assert not (tmp_path / "busy.done").exists()
    for pid in {idle, busy}:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_worker_processes_need_the_handler_by_its_dotted_path(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="dotted path"):
        Gateway(marking_handler, port=0, web_dir=tmp_path, workers=2)
