"""The MCP server (`python -m chatmemory_client.mcp`) as an MCP host runs it: a subprocess on
stdio, driven by the MCP SDK's own client, against running local mode (the poller in its
thread, so ended sessions consolidate by themselves)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from chatmemory_client import ChatMemoryClient
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from tests.integration.helpers import World

pytestmark = pytest.mark.integration

CLIENT_SOURCES = Path(__file__).resolve().parents[2] / "clients" / "python"
TOOLS = {
    "recall",
    "remember",
    "list_records",
    "search_records",
    "correct_record",
    "forget_record",
    "store_turn",
    "list_sessions",
    "get_session",
    "end_session",
    "forget_session",
}


def server_env(url: str, user: str) -> dict[str, str]:
    # The venv's python runs the server; PYTHONPATH finds the package without an install too.
    return {"CHATMEMORY_URL": url, "CHATMEMORY_USER": user, "PYTHONPATH": str(CLIENT_SOURCES)}


@asynccontextmanager
async def mcp_session(url: str, user: str, log: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chatmemory_client.mcp"], env=server_env(url, user)
    )
    with log.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def until_consolidated(session: ClientSession, session_id: str) -> dict[str, Any]:
    """The session as get_session shows it once consolidated (bounded wait)."""
    deadline = time.monotonic() + 60
    while True:
        shown = await call(session, "get_session", session_id=session_id)
        if shown["session"]["status"] == "CONSOLIDATED" or time.monotonic() > deadline:
            assert shown["session"]["status"] == "CONSOLIDATED", shown["session"]
            return shown
        await asyncio.sleep(0.2)


def test_mcp_tools_remember_recall_read_end_and_forget_sessions(
    running_world: World, tmp_path: Path
) -> None:
    url = running_world.url
    # A conversation an agent kept through the API (its own model answered).
    client = ChatMemoryClient(url, user_id="maya")
    trip = client.create_session("Trip planning")
    client.store_turn(
        trip.session_id,
        "We are planning a hiking trip to the Dolomites in September.",
        response="Lovely: the Alta Via 1 is at its best then.",
    )
    client.store_turn(
        trip.session_id,
        "Book the refuge near Lago di Sorapis for two nights.",
        response="Noted: two nights at Rifugio Vandelli.",
    )

    async def scenario() -> None:
        async with mcp_session(url, "maya", tmp_path / "mcp.log") as session:
            tools = (await session.list_tools()).tools
            assert {t.name for t in tools} == TOOLS
            assert all(len(t.description or "") > 80 for t in tools)

            # remember: recallable at once, with its id and date.
            kept = await call(session, "remember", text="My passport expires in March 2031")
            assert kept["text"] == "My passport expires in March 2031"
            recalled = await call(session, "recall", query="When does my passport expire?")
            assert recalled["memories"][0] == {
                "kind": "fact",
                "id": kept["record_id"],
                "date": kept["created_at"],
                "text": "My passport expires in March 2031",
                "title": None,
                "session_id": None,
            }

            listed = await call(session, "list_sessions")
            assert [s["session_id"] for s in listed["sessions"]] == [trip.session_id]
            assert listed["sessions"][0]["num_turns"] == 2

            # end_session, then the poller consolidates it; recall finds the session.
            ended = await call(session, "end_session", session_id=trip.session_id)
            assert ended["status"] in ("ENDED", "CONSOLIDATED")
            shown = await until_consolidated(session, trip.session_id)
            assert [t["input"] for t in shown["turns"]] == [
                "We are planning a hiking trip to the Dolomites in September.",
                "Book the refuge near Lago di Sorapis for two nights.",
            ]
            assert shown["turns"][1]["response"] == "Noted: two nights at Rifugio Vandelli."
            assert shown["truncated"] is False
            latest = await call(session, "get_session", session_id=trip.session_id, max_turns=1)
            assert [t["turn"] for t in latest["turns"]] == [2] and latest["truncated"] is True

            recalled = await call(session, "recall", query="hiking trip to the Dolomites", k=5)
            [hit] = [m for m in recalled["memories"] if m["kind"] == "session"]
            assert hit["id"] == hit["session_id"] == trip.session_id
            assert hit["date"] and "Dolomites" in hit["text"]
            assert len(recalled["memories"]) <= 5

            # forget_session: gone, and so is what was learned from it; forgetting it again
            # is the API's not found, as DELETE /sessions/{id} answers.
            forgotten = await call(session, "forget_session", session_id=trip.session_id)
            assert trip.session_id in forgotten["message"]
            again = await session.call_tool("forget_session", {"session_id": trip.session_id})
            assert again.is_error and "not found" in text_of(again)
            recalled = await call(session, "recall", query="hiking trip to the Dolomites", k=5)
            assert trip.session_id not in {m["session_id"] for m in recalled["memories"]}
            assert (await call(session, "list_sessions"))["sessions"] == []

            # An unknown session: a tool error with the API's message, no traceback.
            result = await session.call_tool("get_session", {"session_id": trip.session_id})
            assert result.is_error
            message = text_of(result)
            assert "not found" in message and "404" in message
            assert "Traceback" not in message

    asyncio.run(scenario())


def test_mcp_record_tools_list_search_correct_and_forget_and_turns_are_extracted(
    running_world: World, tmp_path: Path
) -> None:
    url = running_world.url

    async def scenario() -> None:
        async with mcp_session(url, "ines", tmp_path / "mcp.log") as session:
            kept = await call(session, "remember", text="My sister lives in Paris")
            listed = await call(session, "list_records")
            assert [r["record_id"] for r in listed["records"]] == [kept["record_id"]]
            assert listed["records"][0]["namespace"] == ["profile"]
            [found] = (await call(session, "search_records", query="Where does my sister live?"))[
                "records"
            ]
            assert found["record_id"] == kept["record_id"] and found["score"] is not None
            fixed = await call(
                session,
                "correct_record",
                record_id=kept["record_id"],
                text="My sister lives in Lyon",
            )
            assert fixed["text"] == "My sister lives in Lyon"
            await call(session, "forget_record", record_id=kept["record_id"])
            await call(session, "forget_record", record_id=kept["record_id"])  # idempotent
            assert (await call(session, "list_records"))["records"] == []

            # Turns stored through MCP: the session's end extracts what the user said.
            first = await call(
                session,
                "store_turn",
                user_message="I work as a nurse in Lyon.",
                assistant_response="Noted.",
            )
            second = await call(
                session,
                "store_turn",
                user_message="I am allergic to peanuts.",
                assistant_response="I will remember that.",
                session_id=first["session_id"],
            )
            assert (second["session_id"], second["turn"]) == (first["session_id"], 2)
            await call(session, "end_session", session_id=first["session_id"])
            await until_consolidated(session, first["session_id"])
            texts = [r["text"] for r in (await call(session, "list_records"))["records"]]
            assert any("peanut" in t for t in texts), texts

    asyncio.run(scenario())


def test_mcp_server_tools_act_as_the_configured_user_only(
    running_world: World, tmp_path: Path
) -> None:
    ChatMemoryClient(running_world.url, user_id="noor").remember("I am learning Portuguese")

    async def as_someone_else() -> tuple[dict[str, Any], str]:
        async with mcp_session(running_world.url, "omar", tmp_path / "mcp.log") as session:
            recalled = await call(session, "recall", query="Which language am I learning?")
            refused = await session.call_tool("remember", {"text": ""})
            assert refused.is_error
            return recalled, text_of(refused)

    recalled, refused = asyncio.run(as_someone_else())
    assert recalled["memories"] == []
    assert "text" in refused  # the argument that failed validation, named for the model


def test_mcp_server_without_its_configuration_exits_with_a_message() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chatmemory_client.mcp"],
        env={"PYTHONPATH": str(CLIENT_SOURCES)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "set CHATMEMORY_URL" in done.stderr and "Traceback" not in done.stderr
