"""The MCP server's tools in process, over mocked HTTP answers: what a model reads of them
(descriptions), what recall gives, and that the tools marked idempotent are."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import responses
from chatmemory_client import ChatMemoryClient
from chatmemory_client.mcp.server import build_server, merge_recall
from chatmemory_client.models import Memory, Record
from mcp.server.mcpserver.exceptions import ToolError

BASE = "http://chatmemory.test"


def _server() -> Any:
    return build_server(ChatMemoryClient(BASE, user_id="maya"))


def test_tool_descriptions_carry_no_docstring_indentation() -> None:
    """Failed before: each description was the raw docstring, its lines after the first
    indented by eight spaces."""
    tools = asyncio.run(_server().list_tools())
    assert tools
    for tool in tools:
        description = tool.description or ""
        assert len(description) > 80, tool.name
        assert all(line == line.lstrip() for line in description.splitlines()), tool.name


def _failed(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def test_forgetting_an_unknown_or_forgotten_session_is_the_apis_not_found(
    http: responses.RequestsMock,
) -> None:
    """Failed before: forget_session answered "forgotten" for a session already deleted, and
    for an id that never named one (issue 42), where DELETE /sessions/{id} answers 404: the
    model told the user a conversation was forgotten when the id was wrong."""
    gone = {"error": {"code": "session_not_found", "message": "session s-1 not found"}}
    http.add(responses.DELETE, f"{BASE}/sessions/s-1", status=204)
    http.add(responses.DELETE, f"{BASE}/sessions/s-1", status=404, json=gone)
    server = _server()
    first = asyncio.run(server.call_tool("forget_session", {"session_id": "s-1"}))
    assert not _failed(first)
    with pytest.raises(ToolError) as refused:  # in process; over MCP, an is_error result
        asyncio.run(server.call_tool("forget_session", {"session_id": "s-1"}))
    message = str(refused.value)
    assert "session s-1 not found (HTTP 404, session_not_found)" in message
    assert "forgotten" not in message


def test_forgetting_a_forgotten_record_succeeds(http: responses.RequestsMock) -> None:
    gone = {"error": {"code": "record_not_found", "message": "record r-1 not found"}}
    http.add(responses.DELETE, f"{BASE}/memories/records/r-1", status=404, json=gone)
    result = asyncio.run(_server().call_tool("forget_record", {"record_id": "r-1"}))
    assert not _failed(result)


def test_recall_gives_no_passage_twice() -> None:
    """Failed before: a session's repeated passages, and a passage another hit gave already,
    were given again."""
    records = [Record("r1", "fact", "My sister lives in Lyon", created_at="2026-01-01")]
    sessions = [
        Memory(
            "s1", date="2026-01-02", snippets=("We talked about Lyon.", "We talked about Lyon.")
        ),
        Memory("s2", date="2026-01-03", snippets=("my sister lives in lyon", "She moved in May.")),
        Memory("s3", date="2026-01-04", snippets=("We talked about Lyon.",)),
    ]
    hits = merge_recall(records, sessions, 10)
    assert [(h.id, h.text) for h in hits] == [
        ("r1", "My sister lives in Lyon"),
        ("s1", "We talked about Lyon."),
        ("s2", "She moved in May."),
    ]
