"""The client against a real local mode (DynamoDB Local, the gateway, the handlers): every
route and error, and the recorded answers the unit tests replay."""

from __future__ import annotations

import os

import pytest
import requests
from chatmemory_client import ChatMemoryClient, NotFound
from requests.adapters import HTTPAdapter

from tests.client import recording

pytestmark = pytest.mark.integration


def test_recorded_answers_still_match_local_mode(world) -> None:
    steps = recording.run_scenario(world.url, drain=world.poller.drain)
    if os.environ.get("CHATMEMORY_RECORD") == "1":
        recording.write(steps)
    recorded = recording.load()
    assert list(steps) == list(recorded)
    for name, exchanges in steps.items():
        live_statuses, live_shape = recording.step_shape(exchanges)
        kept_statuses, kept_shape = recording.step_shape(recorded[name])
        problems = recording.differences(live_shape, kept_shape)
        assert live_statuses == kept_statuses and not problems, (
            f"step {name} answers differently now ({live_statuses}, {problems}): if the API "
            "changed on purpose, record anew (CHATMEMORY_RECORD=1) and update the client"
        )


class LosesFirstAnswer(HTTPAdapter):
    """A network that delivers the first request and loses its answer."""

    def __init__(self) -> None:
        super().__init__(max_retries=0)
        self.sent = 0

    def send(self, request, **kwargs):  # type: ignore[no-untyped-def, override]
        answer = super().send(request, **kwargs)
        self.sent += 1
        if self.sent == 1:
            raise requests.ConnectionError("connection reset after the request was sent")
        return answer


@pytest.mark.parametrize("route", ["send_message", "store_turn"])
def test_a_lost_answer_is_retried_and_the_turn_is_stored_once(world, route) -> None:
    client = ChatMemoryClient(world.url, user_id="carol")
    session = client.create_session("Retries")
    flaky = requests.Session()
    flaky.mount("http://", LosesFirstAnswer())
    retrying = ChatMemoryClient(world.url, user_id="carol", session=flaky)
    if route == "send_message":
        turn = retrying.send_message(session.session_id, "I collect old maps")
    else:
        turn = retrying.store_turn(session.session_id, "I collect old maps", response="Nice.")
    assert turn.turn == 1
    turns = list(client.list_turns(session.session_id))
    assert [(t.turn, t.input, t.client_message_id) for t in turns] == [
        (1, "I collect old maps", turn.client_message_id)
    ]
    assert client.get_session(session.session_id).num_turns == 1


def test_callers_see_only_their_own_sessions(world) -> None:
    alice = ChatMemoryClient(world.url, user_id="alice")
    bob = ChatMemoryClient(world.url, user_id="bob")
    mine = alice.create_session("Alice's")
    with pytest.raises(NotFound):
        bob.get_session(mine.session_id)
    with pytest.raises(NotFound):
        bob.store_turn(mine.session_id, "hello")
    assert [s.session_id for s in alice.list_sessions()] == [mine.session_id]
    assert list(bob.list_sessions()) == []


def test_turns_carry_the_sentiment_of_what_the_user_said(world) -> None:
    client = ChatMemoryClient(world.url, user_id="iris")
    session = client.create_session("feelings")
    angry = client.send_message(session.session_id, "This is terrible, I am so angry and upset")
    glad = client.store_turn(session.session_id, "Thank you, this is wonderful!", response="ok")
    assert angry.sentiment is not None and angry.sentiment.label == "negative"
    assert -1 <= angry.sentiment.score < -0.05
    assert glad.sentiment is not None and glad.sentiment.label == "positive"
    listed = [t.sentiment for t in client.list_turns(session.session_id)]
    assert listed == [angry.sentiment, glad.sentiment]
