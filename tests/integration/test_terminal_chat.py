"""`make chat` and `make ingest` against running local mode (poller in its thread)."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest

from local.chat import Chat, Client
from tests.integration.helpers import World
from tests.openai_stream import answer, endless, stand_in_model

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
    assert "\n  #1 [recalled]\n" in text and "blue flower pot" in text
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
    assert "\n  #2 [verified]\n" in text and "[account.md#p1] Account help" in text


def test_terminal_chat_shows_a_record_as_a_record(running_world: World) -> None:
    """Failed before: a record an answer used was printed as a passage, `[None#None]`."""
    out = io.StringIO()
    chat = Chat(Client(running_world.url), out=out)
    chat.open()
    chat.handle("/remember I live in Lisbon.")
    text = out.getvalue()
    assert "#1 [remembered]" in text
    assert "  - remembered: I live in Lisbon. (since 20" in text
    chat.handle("Which city do I live in?")  # the profile in every prompt holds the record
    text = out.getvalue()
    assert text.endswith("  sources:\n  - profile: 1 fact\n"), text
    assert "None" not in text


class CtrlC(io.StringIO):
    """The terminal: Ctrl-C pressed once `after` has been printed."""

    def __init__(self, after: str) -> None:
        super().__init__()
        self.after = after
        self.pressed = False

    def write(self, text: str) -> int:
        written = super().write(text)
        if not self.pressed and self.after in self.getvalue():
            self.pressed = True
            raise KeyboardInterrupt
        return written


def test_terminal_chat_prints_as_written_and_ctrl_c_stops_the_answer_not_the_chat(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = threading.Event()
    out = CtrlC(after="warmth")
    with stand_in_model(monkeypatch) as model:
        model.streams.append(answer(["Tomatoes ", "need ", held, "full ", "sun."]))
        model.streams.append(endless(["Basil ", "likes ", "warmth "]))
        chat = Chat(Client(world.url), out=out)
        chat.open()
        assert chat.session is not None
        # The first words are printed while the model holds the rest (a thread lets it go once
        # they are there).
        printed = threading.Thread(target=_release_after, args=(out, "Tomatoes need", held))
        printed.start()
        assert chat.handle("How do I grow tomatoes?") is True
        printed.join()
        assert "bot> Tomatoes need full sun.\n  #1\n" in out.getvalue()
        # Ctrl-C in the middle of an answer that would never end: back to the prompt.
        assert chat.handle("And basil?") is True
        assert out.pressed and "(stopped: what was shown is kept as the answer)" in out.getvalue()
        session_id = chat.session["session_id"]
        stored = _answered(world, session_id, 2)
        assert stored["stopped"] is True
        assert stored["response"].startswith("Basil likes warmth")
        # The chat goes on, and shows the stopped answer as stopped.
        assert chat.handle("Thanks") is True
        assert "bot> Noted.\n  #3\n" in out.getvalue()
        chat.open()
        assert f"bot #2> {stored['response']} (stopped)" in out.getvalue()


def _release_after(out: io.StringIO, text: str, held: threading.Event) -> None:
    deadline = time.monotonic() + 30
    while text not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    held.set()


def _answered(world: World, session_id: str, turn: int) -> dict:
    """The turn once its answer is stored (a stopped one: once the server saw the reader go)."""
    deadline = time.monotonic() + 30
    while True:
        status, body = world.api.call("GET", f"/sessions/{session_id}/turns/{turn}")
        if status == 200 and not body["turn"]["pending"]:
            return body["turn"]
        assert time.monotonic() < deadline, (status, body)
        time.sleep(0.05)
