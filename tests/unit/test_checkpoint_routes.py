"""The checkpoint routes through the chat Lambda on moto: paging a listing of every namespace,
and the limits that answer 4xx instead of 500 (a `before` no id can be, a filter nested too
deep, channel versions larger than an item)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.records_helpers import World, chat_world

EMPTY = base64.b64encode(b"{}").decode()


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context, long_term=False)


def _session(world: World) -> str:
    status, data = world.api.call("POST", "/sessions", {"name": "thread"})
    assert status == 201, data
    return str(data["session"]["session_id"])


def _put(world: World, sid: str, cid: str, ns: str = "", **body: Any) -> tuple[int, Any]:
    request = {
        "checkpoint_ns": ns,
        "checkpoint": {"type": "json", "data": EMPTY},
        "metadata": {"type": "json", "data": EMPTY},
        "channel_versions": {},
        **body,
    }
    return world.api.call("PUT", f"/sessions/{sid}/checkpoints/{cid}", request)


def test_pages_of_every_namespace_answer_a_checkpoint_whose_id_another_uses(world: World) -> None:
    """The graph and two subgraphs each have checkpoints c1..c3: a listing of every namespace
    paged by two, each page asked from where the last ended, answers all nine once."""
    sid = _session(world)
    for ns in ("", "child:1", "child:2"):
        for cid in ("c1", "c2", "c3"):
            assert _put(world, sid, cid, ns)[0] == 200
    seen: list[tuple[str, str]] = []
    cursor: dict[str, str] = {}
    for _ in range(10):
        status, page = world.api.call(
            "GET", f"/sessions/{sid}/checkpoints", query={"limit": "2", **cursor}
        )
        assert status == 200, page
        seen += [(c["checkpoint_id"], c["checkpoint_ns"]) for c in page["checkpoints"]]
        if page.get("next_token"):
            cursor = {"next_token": page["next_token"]}
        elif page.get("next_before"):
            cursor = {"before": page["next_before"]}
        else:
            break
    expected = [(cid, ns) for ns in ("", "child:1", "child:2") for cid in ("c1", "c2", "c3")]
    assert seen == sorted(expected, reverse=True)
    status, data = world.api.call(
        "GET", f"/sessions/{sid}/checkpoints", query={"next_token": "bm90IGEgdG9rZW4"}
    )
    assert (status, data["error"]["code"]) == (400, "bad_request")
