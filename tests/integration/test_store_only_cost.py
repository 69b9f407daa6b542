"""What a turn stored without our model costs (POST /turns, then PATCH with its response),
measured by DynamoDB Local: the chat turn's cost without the window read, the same at turn 70
as at turn 10."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from bench.turns import Meter
from chatmemory import wiring
from chatmemory.adapters.offline.sentiment import VaderSentimentAnalyzer
from chatmemory.services.background.forget import forget_user
from chatmemory.services.conversation.sessions import create_session
from chatmemory.services.conversation.turns import ClientTurn, TurnWriting, store_turn, update_turn
from tests.integration.helpers import World

NOW = datetime(2026, 11, 23, 12, 1, tzinfo=UTC)
WORDS = "a sentence of ordinary length about the trip we are planning to the mountains"


def test_a_stored_turn_costs_two_requests_and_its_response_three_at_any_length(
    world: World,
) -> None:
    client = world.dynamodb()
    memory = wiring.short_term_memory(wiring.settings())
    forget_user(memory, "alice", clock=lambda: NOW)  # the caller's item exists, as in real use
    session = create_session(memory, "alice", clock=lambda: NOW)
    stores, answers = [], []
    for n in range(70):
        meter = Meter()
        meter.attach(client)
        stored = store_turn(
            memory,
            ClientTurn(
                f"message {n}: {WORDS}",
                client_message_id=str(uuid.uuid4()),
                metadata={"agent": "planner"},
            ),
            TurnWriting(lambda: NOW, lambda _: None),
            user_id="alice",
            session_id=session.session_id,
            max_input_chars=4000,
            sentiment=VaderSentimentAnalyzer(),  # as by default (SENTIMENT=vader)
        )
        meter.detach(client)
        stores.append(meter)
        meter = Meter()
        meter.attach(client)
        update_turn(
            memory,
            user_id="alice",
            session_id=session.session_id,
            number=stored.turn.turn,
            response=f"answer {n}: {WORDS}",
            metadata=None,
        )
        meter.detach(client)
        answers.append(meter)
    late_store, late_answer = stores[-1], answers[-1]
    # The session and the caller's state (one BatchGetItem), then the turn with the session's
    # counters (one transaction): no window Query, since no model is prompted.
    assert dict(late_store.requests) == {"BatchGetItem": 1, "TransactWriteItems": 1}
    # The session and the caller again, the turn, and the conditional update that answers it.
    assert dict(late_answer.requests) == {"BatchGetItem": 1, "GetItem": 1, "UpdateItem": 1}
    assert late_store.read_units <= 2 and late_store.write_units <= 8
    assert [s.write_units for s in stores[55:]] == [late_store.write_units] * 15
    assert [a.write_units for a in answers[10:]] == [late_answer.write_units] * 60
