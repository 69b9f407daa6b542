"""What a chat turn costs in DynamoDB capacity, measured by DynamoDB Local (which models item
sizes, transactions and index writes): bounded, and the same late in a session as early."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from bench.turns import LangChainVariant, Meter, ZeroLatencyModel
from chatmemory import wiring
from chatmemory.adapters.offline.sentiment import VaderSentimentAnalyzer
from chatmemory.services.background.forget import forget_user
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.conversation.sessions import create_session
from chatmemory.services.conversation.stacking import StackPolicy
from local.dynamodb_local import DynamoDBLocal
from tests.integration.helpers import World

NOW = datetime(2026, 11, 23, 12, 1, tzinfo=UTC)


def _turn_costs(world: World, turns: int, policy: ChatPolicy) -> list[Meter]:
    client = world.dynamodb()
    settings = wiring.settings()
    memory = wiring.short_term_memory(settings)
    # One clock reading for every turn: they all fall in one bucket of the sweeper's index.
    # Each turn carries its sentiment, as by default (SENTIMENT=vader).
    deps = ChatDeps(
        memory=memory,
        generator=ZeroLatencyModel(),
        clock=lambda: NOW,
        sentiment=VaderSentimentAnalyzer(),
    )
    # A caller who once forgot everything has a users item: the turn reads it with the session
    # (for a caller without one DynamoDB Local reports no capacity for the missing item).
    forget_user(memory, "alice", clock=lambda: NOW)
    session = create_session(memory, "alice", clock=lambda: NOW)
    costs = []
    for n in range(turns):
        meter = Meter()
        meter.attach(client)
        post_message(
            deps,
            policy,
            Message(
                user_id="alice",
                session_id=session.session_id,
                content=f"message {n}: a sentence of ordinary length about the weather",
                client_message_id=str(uuid.uuid4()),
            ),
        )
        meter.detach(client)
        costs.append(meter)
    return costs


@pytest.mark.parametrize(
    ("stack", "requests", "write_units"),
    [
        # Stacked messages (the default): the message is written, then its answer, in a second
        # transaction that checks the session (still open, no newer message): 4 more units.
        (True, 4, 12),
        (False, 3, 8),
    ],
)
def test_a_turn_costs_the_same_bounded_capacity_at_turn_70_as_once_ids_fill_up(
    world: World, stack: bool, requests: int, write_units: int
) -> None:
    costs = _turn_costs(world, 70, ChatPolicy(stack=StackPolicy(enabled=stack)))
    late = costs[-1]
    assert sum(late.requests.values()) == requests
    # The session and the caller's generation (one BatchGetItem, 1 unit each, strongly
    # consistent) and the window Query (1 unit for the last few turns).
    assert late.read_units <= 3
    # The turn (a transactional put), the session update and the one listing index it
    # touches; the sweeper's index only when a turn opens a new 10-minute bucket. Before the
    # idempotency keys were compacted and the indexes trimmed this was 18 (unstacked).
    assert late.write_units <= write_units
    assert [c.write_units for c in costs[55:]] == [late.write_units] * 15


def test_langchain_history_rewrites_one_item_per_turn_and_silently_stops_growing_past_400_kb(
    dynamodb_local: DynamoDBLocal,
) -> None:
    """The baseline bench.turns measures: LangChain's DynamoDBChatMessageHistory behind
    RunnableWithMessageHistory. With 150 KB messages its one item passes DynamoDB's 400 KB at
    the second turn; the chain answers anyway, logs the error, and stores nothing more."""
    message = " ".join(["word"] * 30_000)  # 150 KB
    answers = [f"answer {n} " + message for n in range(3)]
    with LangChainVariant(dynamodb_local.endpoint, answers, table=f"lc-{uuid.uuid4()}") as chain:
        outcomes = []
        for _ in range(3):
            chain.meter.reset()
            reply, warning = chain.turn(message)
            outcomes.append((reply, warning, dict(chain.meter.requests), chain.meter.write_units))
        stored = chain.stored_messages()
    (first, first_warning, first_requests, first_wcu), *failed = outcomes
    assert first_warning is None
    # The chain reads the item for the prompt, add_messages reads it again and rewrites it whole.
    assert first_requests == {"GetItem": 2, "UpdateItem": 1}
    assert first_wcu >= 290  # one unit per KB of the whole item: about 300 KB after one turn
    for (reply, warning, _, _), answer in zip(failed, answers[1:], strict=True):
        assert reply == answer
        assert warning is not None
        assert "ValidationException" in warning
        assert "exceeded the maximum allowed size" in warning
    assert stored == 2
