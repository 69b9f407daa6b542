"""Stacked messages on local mode: two messages sent before the bot answered get one answer,
through the gateway, the chat handler and DynamoDB Local.

STACK_WAIT_MS=3000 makes the bot wait for more; the second message is sent as soon as the first
one is seen stored (pending), well inside that wait, so the order of events is fixed by what
the test observes, not by timing luck."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local.dynamodb_local import DynamoDBLocal
from tests.integration.helpers import World, stacking_local_world

pytestmark = pytest.mark.integration


@pytest.fixture
def world(
    dynamodb_local: DynamoDBLocal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    yield from stacking_local_world(dynamodb_local, tmp_path, monkeypatch)


def _send(world: World, session_id: str, content: str, cmid: str, into: dict[str, Any]) -> None:
    body = {"content": content, "client_message_id": cmid}
    into[cmid] = world.api.call("POST", f"/sessions/{session_id}/messages", body)


def _messages(world: World, session_id: str) -> list[dict[str, Any]]:
    return world.api.ok("GET", f"/sessions/{session_id}/messages?limit=50")["messages"]


def test_two_quick_messages_are_answered_together_once(world: World) -> None:
    sid = world.api.new_session("stacked")
    answers: dict[str, Any] = {}
    first = threading.Thread(
        target=_send, args=(world, sid, "My parcel never arrived.", "m-1", answers)
    )
    first.start()
    deadline = time.monotonic() + 10
    while not _messages(world, sid):  # the first message is stored, waiting for its answer
        assert time.monotonic() < deadline, "the first message was never stored"
        time.sleep(0.02)
    [waiting] = _messages(world, sid)
    assert waiting["pending"] and waiting["response"] is None

    _send(world, sid, "The order number is 1234.", "m-2", answers)
    first.join(timeout=30)

    status_1, one = answers["m-1"]
    status_2, two = answers["m-2"]
    assert (status_1, status_2) == (200, 200)
    # The second request answered both; the first learned which turn did.
    assert two["turn"]["turn"] == 2 and two["turn"]["response"]
    assert one["turn"]["turn"] == 1 and one["turn"]["answered_by"] == 2
    assert one["answer"]["turn"] == 2 and one["answer"]["response"] == two["turn"]["response"]
    stored = _messages(world, sid)
    assert [(m["turn"], m["pending"], m.get("answered_by")) for m in stored] == [
        (1, False, 2),
        (2, False, None),
    ]
    assert stored[0]["response"] is None

    # A retry of the first message (its answer lost on the way) gets the same answer.
    status, again = world.api.call(
        "POST",
        f"/sessions/{sid}/messages",
        {"content": "My parcel never arrived.", "client_message_id": "m-1"},
    )
    assert status == 200 and again["answer"]["response"] == two["turn"]["response"]
    assert len(_messages(world, sid)) == 2
