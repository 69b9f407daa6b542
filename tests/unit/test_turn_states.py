"""The turn's states (services/conversation/turn_states.py): read from a turn's flags, every
transition's write a method of the port, and stacking's `settled` unchanged by reading it through
them."""

from __future__ import annotations

import itertools

import pytest

from chatmemory.domain import Turn
from chatmemory.ports import ShortTermMemory
from chatmemory.schema import SessionStatus, TurnOrigin
from chatmemory.services.conversation.stacking import settled
from chatmemory.services.conversation.turn_states import (
    TRANSITIONS,
    TurnState,
    mermaid,
    state_of,
    table,
)


def _turn(**flags: object) -> Turn:
    fields: dict[str, object] = {"input": "hi", "response": None, **flags}
    return Turn(session_id="s1", turn=1, user_id="u", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flags", "status", "now", "state"),
    [
        ({"response": "hello"}, None, None, TurnState.ANSWERED),
        ({"pending": True}, SessionStatus.OPEN, None, TurnState.PENDING),
        ({"pending": True, "answered_by": 3}, SessionStatus.OPEN, None, TurnState.COVERED),
        ({"pending": True, "answering_until": "2026-11-27T10:00:20.000Z"}, None,
         "2026-11-27T10:00:10.000Z", TurnState.CLAIMED),
        ({"pending": True, "answering_until": "2026-11-27T10:00:20.000Z"}, None,
         "2026-11-27T10:00:30.000Z", TurnState.PENDING),  # the claim ran out
        ({"pending": True}, SessionStatus.ENDED, None, TurnState.UNANSWERED),
        ({"for_agent": True}, SessionStatus.ENDED, None, TurnState.FOR_AGENT),
        ({"origin": TurnOrigin.AGENT, "input": "", "response": "Hi, Jane here"}, None, None,
         TurnState.AGENT_REPLY),
    ],
)  # fmt: skip
def test_a_turn_s_state_follows_from_its_flags_and_its_session(
    flags: dict[str, object], status: str | None, now: str | None, state: TurnState
) -> None:
    assert state_of(_turn(**flags), session_status=status, now=now) == state


def test_every_state_is_reached_and_every_write_is_a_method_of_the_port() -> None:
    assert {t.target for t in TRANSITIONS} == set(TurnState)
    writes = {t.write for t in TRANSITIONS if t.write}
    assert writes <= {name for name in dir(ShortTermMemory) if not name.startswith("_")}
    assert writes >= {"append_turn", "complete_stack", "claim_answer", "release_answer"}


def test_settled_reads_the_state_as_it_read_the_flags_before() -> None:
    """Stacking's `settled` now asks the state machine; it answers as the flags did."""
    for pending, answered_by, for_agent, origin in itertools.product(
        (False, True), (None, 2), (False, True), list(TurnOrigin)
    ):
        turn = _turn(pending=pending, answered_by=answered_by, for_agent=for_agent, origin=origin)
        if pending and (for_agent or origin == TurnOrigin.AGENT):
            continue  # never written: a message for the agent, or an agent's reply, is not pending
        assert settled(turn) == (not pending or answered_by is not None), turn


def test_the_diagram_and_the_table_hold_every_transition() -> None:
    diagram, rows = mermaid(), table()
    assert diagram.startswith("stateDiagram-v2")
    assert len(diagram.splitlines()) == 1 + len(TRANSITIONS)
    assert len(rows.splitlines()) == 2 + len(TRANSITIONS)
    assert "[*] --> pending" in diagram and "pending --> covered" in diagram


def test_the_pipeline_names_the_transitions_its_stages_cause() -> None:
    # The pipeline's stages name their transitions by cause: a cause renamed here must be
    # renamed there (the turn package would not import otherwise), and a stacked message's own
    # claim and a failed claiming call are the decide and settle stages'.
    from chatmemory.services.conversation.turn.pipeline import STAGES

    by_stage = {stage.name: {t.cause for t in stage.transitions} for stage in STAGES}
    assert set().union(*by_stage.values()) <= {t.cause for t in TRANSITIONS}
    assert any(cause.startswith("a stacked message") for cause in by_stage["decide"])
    assert "the claiming request's model call fails" in by_stage["settle"]
