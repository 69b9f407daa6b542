"""stream_message against a real local mode: the streamed turn is the stored one, a refused
message raises before the stream, and closing the iterator halfway stops the answer (local
mode's text model is a stand-in OpenAI-compatible server that writes until it is stopped)."""

from __future__ import annotations

import contextlib
import time

import pytest
from chatmemory_client import ChatMemoryClient, DeltaEvent, MemoryEvent, NotFound, TurnEvent

from tests.openai_stream import endless, stand_in_model

pytestmark = pytest.mark.integration


def stored_turn(client: ChatMemoryClient, session_id: str, turn: int, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    """The turn once its answer is stored (a stopped answer is stored when the server sees its
    reader gone), within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(NotFound):
            found = client.get_turn(session_id, turn)
            if not found.pending:  # a message is kept pending while its answer is written
                return found
        assert time.monotonic() < deadline, "the turn was not stored"
        time.sleep(0.05)


def test_the_streamed_turn_is_the_stored_turn_and_its_deltas_are_its_response(world) -> None:
    client = ChatMemoryClient(world.url, user_id="dana")
    session = client.create_session("Streaming")
    with client.stream_message(session.session_id, "I grow tomatoes on my balcony") as stream:
        got = list(stream)
    assert isinstance(got[0], MemoryEvent) and isinstance(got[-1], TurnEvent)
    deltas = [e.text for e in got if isinstance(e, DeltaEvent)]
    assert len(deltas) > 1
    assert "".join(deltas) == got[-1].turn.response
    assert client.get_turn(session.session_id, 1) == got[-1].turn
    with pytest.raises(NotFound):  # another user's session: refused before any event
        ChatMemoryClient(world.url, user_id="eve").stream_message(session.session_id, "Hi")


def test_closing_the_stream_halfway_stores_what_was_sent_marked_stopped(world, monkeypatch) -> None:
    with stand_in_model(monkeypatch) as model:
        model.streams.append(endless(["Tomatoes ", "like ", "sun "]))
        client = ChatMemoryClient(world.url, user_id="dana")
        session = client.create_session("Stopped")
        seen: list[str] = []
        with client.stream_message(session.session_id, "How do tomatoes grow?") as stream:
            for event in stream:
                if isinstance(event, DeltaEvent):
                    seen.append(event.text)
                if len(seen) == 3:
                    break  # leaving the block closes the stream, as Ctrl-C would
        assert stream.closed and stream.turn is None
        turn = stored_turn(client, session.session_id, 1)
        assert turn.stopped and not turn.pending
        assert turn.response is not None and turn.response.startswith("Tomatoes like sun")
        # The model was stopped (it writes on forever otherwise, and the turn is never
        # stored); the next message is answered as usual.
        again = client.send_message(session.session_id, "And peppers?")
    assert (again.turn, again.response, again.stopped) == (2, "Noted.", False)
