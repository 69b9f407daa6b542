"""Scoping like Mem0's agent_id/run_id: records stated for an agent (and a run of it) beside the
caller, through the chat Lambda (moto and the embedded index)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.records_helpers import World, chat_world


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context)


def _search(world: World, user: str = "alice", **body: Any) -> list[dict[str, Any]]:
    status, data = world.api.call("POST", "/memories/records/search", body, user=user)
    assert status == 200, data
    return data["records"]


def test_records_of_an_agent_and_its_runs_are_kept_and_searched_apart(world: World) -> None:
    profile = world.state("I am allergic to peanuts")
    support = world.state("Prefers answers by email", agent_id="support-bot")
    run = world.state("Asked about the refund of order 42", agent_id="support-bot", run_id="r7")
    travel = world.state("Prefers window seats", agent_id="travel-bot")
    # Without a record_id each gets an id of its own, in the agent's (and run's) namespace.
    assert support["namespace"] == ["agent", "support-bot"] and support["run_id"] is None
    assert run["namespace"] == ["agent", "support-bot", "run", "r7"]
    assert (run["agent_id"], run["run_id"]) == ("support-bot", "r7")
    assert profile["agent_id"] is None and profile["namespace"] == ["profile"]
    assert travel["agent_id"] == "travel-bot"

    every_run = {r["record_id"] for r in _search(world, agent_id="support-bot")}
    assert every_run == {support["record_id"], run["record_id"]}
    one_run = _search(world, agent_id="support-bot", run_id="r7", query="refund")
    assert [r["record_id"] for r in one_run] == [run["record_id"]]
    assert one_run[0]["score"] is not None
    assert [r["text"] for r in _search(world, agent_id="travel-bot", query="email")] == [
        "Prefers window seats"
    ]
    # The agent's records are the caller's: another caller's search with the same ids is empty.
    assert _search(world, user="bob", agent_id="support-bot") == []


def test_an_agents_key_is_an_item_of_its_own_and_never_supersedes_the_profile(
    world: World,
) -> None:
    world.state("I live in Porto")
    body = {"text": "I live in Lisbon", "agent_id": "travel-bot", "record_id": "travel.home"}
    status, data = world.api.call("POST", "/memories/records", body)
    assert status == 201, data
    assert data["record"]["namespace"] == ["agent", "travel-bot"]
    texts = {r["text"]: r["status"] for r in world.listed()}
    assert texts == {"I live in Porto": "ACTIVE", "I live in Lisbon": "ACTIVE"}


def test_scopes_follow_the_identifier_rule_and_the_namespace_depth(world: World) -> None:
    for bad in ("", "a/b", "..", "x" * 129):
        status, _ = world.api.call(
            "POST", "/memories/records", {"text": "x", "agent_id": bad, "record_id": "k"}
        )
        assert status == 400, bad
    deep = {"text": "x", "agent_id": "a", "run_id": "r", "namespace": ["n"] * 13}
    status, data = world.api.call("POST", "/memories/records", deep)
    assert status == 400 and "labels" in data["error"]["message"], data
