"""The checkpoint routes through the chat Lambda on moto: paging a listing of every namespace,
and the limits that answer 4xx instead of 500 (a `before` no id can be, a filter nested too
deep, channel versions larger than an item)."""

from __future__ import annotations

import base64
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


def test_a_before_no_checkpoint_id_can_be_is_a_bad_request(world: World) -> None:
    sid = _session(world)
    assert _put(world, sid, "c1")[0] == 200
    for before in ("\x00", "a\x00b", "é" * 10, "c1\uffff"):
        status, data = world.api.call(
            "GET", f"/sessions/{sid}/checkpoints", query={"before": before}
        )
        assert (status, data["error"]["code"]) == (400, "bad_request"), (before, data)


@pytest.mark.parametrize(
    "filter_",
    [
        "[" * 1024 + "]" * 1024,
        '{"a":' + "[" * 1000 + "]" * 1000 + "}",
        '{"a":' + '{"b":' * 300 + "1" + "}" * 300 + "}",
    ],
    ids=["array-1024", "value-1000", "object-300"],
)
def test_a_filter_nested_too_deep_is_a_bad_request(world: World, filter_: str) -> None:
    sid = _session(world)
    assert _put(world, sid, "c1")[0] == 200
    status, data = world.api.call(
        "GET", f"/sessions/{sid}/checkpoints", query={"filter": filter_[:2048]}
    )
    assert (status, data["error"]["code"]) == (400, "bad_request"), data


def test_metadata_nested_too_deep_is_a_bad_request_and_not_stored(world: World) -> None:
    sid = _session(world)
    deep: Any = 1
    for _ in range(100):
        deep = [deep]
    status, data = _put(world, sid, "c1", metadata_json={"a": deep})
    assert status == 400, data
    status, data = world.api.call("GET", f"/sessions/{sid}/checkpoints/c1")
    assert status == 404, data


def test_channel_versions_larger_than_an_item_are_refused_with_413(world: World) -> None:
    sid = _session(world)
    versions = {f"channel-{n:05d}-" + "c" * 240: "9" * 128 for n in range(1_500)}
    status, data = _put(world, sid, "c1", channel_versions=versions)
    assert (status, data["error"]["code"]) == (413, "payload_too_large"), data
    assert "channel_versions" in data["error"]["message"]
    status, data = world.api.call("GET", f"/sessions/{sid}/checkpoints/c1")
    assert status == 404, data
