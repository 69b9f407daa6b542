"""`make chat` and `make ingest` against running local mode (poller in its thread)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from local.chat import Chat, Client
from tests.integration.helpers import World

pytestmark = pytest.mark.integration


def test_terminal_chat_ends_a_session_and_recalls_it(running_world: World) -> None:
    out = io.StringIO()
    chat = Chat(Client(running_world.url), out=out)
    chat.open()
    first = chat.session
    assert first is not None
    chat.handle("I keep my spare house key under the blue flower pot.")
    chat.handle("/end")
    assert "remembered: ask about it with /past" in out.getvalue()
    assert chat.session is not None and chat.session["session_id"] != first["session_id"]
    chat.handle("/past where is my spare key?")
    text = out.getvalue()
    assert "bot #1 [recalled]>" in text and "blue flower pot" in text
    # Named from its first message, not "Session <date>" any more.
    named = "I keep my spare house key"
    assert f"session {named} ({first['started_at'][:10]}) {first['session_id']}" in text
    assert chat.handle("/quit") is False


def test_ingested_documents_answer_verified_questions_in_a_running_server(
    running_world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.StringIO()
    chat = Chat(Client(running_world.url), out=out)
    chat.open()
    # No word in common with the document below: only its embedding can find it, so this also
    # shows the server's cached vectors see what another connection wrote.
    question = "/verified how can I change my login secret?"
    chat.handle(question)
    assert "nothing relevant in the verified documents" in out.getvalue()

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "account.md").write_text(
        "# Account help\n\nTo reset your password, open Settings, choose Security and press "
        "Reset password. A link is sent to your e-mail address.\n"
    )
    from local import ingest

    monkeypatch.setattr("sys.argv", ["make ingest", str(docs)])
    ingest.main()  # its own index connection, as `make ingest` in another terminal
    chat.handle(question)
    text = out.getvalue()
    assert "bot #2 [verified]>" in text and "[account.md#p1] Account help" in text


def test_terminal_chat_shows_a_record_as_a_record(running_world: World) -> None:
    """Failed before: a record an answer used was printed as a passage, `[None#None]`."""
    out = io.StringIO()
    chat = Chat(Client(running_world.url), out=out)
    chat.open()
    chat.handle("/remember I live in Lisbon.")
    text = out.getvalue()
    assert "bot #1 [remembered]>" in text
    assert "  - remembered: I live in Lisbon. (since 20" in text
    chat.handle("Which city do I live in?")  # the profile in every prompt holds the record
    text = out.getvalue()
    assert text.endswith("  sources:\n  - profile: 1 fact\n"), text
    assert "None" not in text
