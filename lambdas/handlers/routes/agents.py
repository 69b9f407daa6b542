"""The routes of hand-off to a person: a session handed to a human agent, the agents' queue,
replies and hand-back."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit

from chatmemory import api_models as m
from chatmemory import wiring
from chatmemory.schema import HandoffState
from chatmemory.services.conversation import chat, handoff
from handlers.chat_shared import log_event_error, metrics
from handlers.routes.common import (
    AgentSessionId,
    Limit,
    NextToken,
    SessionId,
    agent,
    answer_page,
    route,
    session,
    user,
)

router = APIGatewayRouter()


@route(router.post, "/sessions/<session_id>/handoff")
def request_handoff(
    session_id: SessionId, body: Annotated[m.HandoffRequest | None, Body()] = None
) -> m.SessionEnvelope:
    """Ask for a person.

    Hands the caller's open session to a human agent (the chat command /human does the same): until
    an agent hands it back, messages are stored for the agent and not answered by the model, and the
    agent's replies appear among the session's messages (origin agent). Publishes a hand-off event.
    Asking again while it is handed off answers the session unchanged.
    """
    deps = wiring.chat_deps()
    outcome = handoff.request_handoff(
        deps.memory,
        deps.events,
        user_id=user(router),
        session_id=session(router, session_id),
        note=body.note if body else None,
        clock=deps.clock,
    )
    _handed(outcome, "Handoffs")
    return m.SessionEnvelope.of(outcome.session)


HandoffStateQuery = Annotated[
    Literal[HandoffState.WAITING, HandoffState.ACTIVE],
    Query(description="WAITING (no agent answered yet) or ACTIVE."),
]


@route(router.get, "/agent/sessions")
def list_handoffs(
    state: HandoffStateQuery = HandoffState.WAITING,
    limit: Limit = 20,
    next_token: NextToken = None,
) -> m.AgentSessionList:
    """Sessions waiting for a person.

    Agents only (403 for anyone else): the sessions handed to a person in the given state, longest
    waiting first, one page at a time.
    """
    agent(router)
    page = handoff.list_queue(
        wiring.chat_deps().memory, state=state, limit=limit, next_token=next_token
    )
    return m.AgentSessionList.of(page)


@route(router.get, "/agent/sessions/<session_id>")
def read_handoff(
    session_id: AgentSessionId,
    limit: Limit = 50,
    next_token: NextToken = None,
    order: Annotated[Literal["asc", "desc"], Query()] = "desc",
) -> m.AgentSessionView:
    """Read a handed-off session.

    Agents only: a session handed to a person and its turns, newest first by default (next_token
    pages back), the user's messages stored for the agent among them. A session not handed off
    answers 404.
    """
    agent(router)
    asked = answer_page(limit, next_token, order)
    session, page = handoff.read_session_for_agent(wiring.chat_deps().memory, session_id, asked)
    return m.AgentSessionView.of(session, page)


@route(router.post, "/agent/sessions/<session_id>/messages")
def agent_reply(
    session_id: AgentSessionId, body: Annotated[m.AgentReplyRequest, Body()]
) -> m.TurnEnvelope:
    """Reply as an agent.

    Agents only: stores the agent's reply as the session's next turn (origin agent); the session
    becomes ACTIVE with this agent. 409 when it is not handed off (handed back, or never). A retry
    with the same client_message_id returns the stored turn.
    """
    deps = wiring.chat_deps()
    reply = handoff.agent_reply(
        deps.memory,
        chat.writing(deps, wiring.chat_policy()),
        agent_id=agent(router),
        session_id=session_id,
        content=body.content,
        client_message_id=body.client_message_id,
    )
    if not reply.replayed:
        metrics.add_metric(name="AgentReplies", unit=MetricUnit.Count, value=1)
    return m.TurnEnvelope.of(reply.turn)


@route(router.post, "/agent/sessions/<session_id>/handback")
def hand_back(session_id: AgentSessionId) -> m.AgentSessionEnvelope:
    """Hand a session back.

    Agents only: the bot answers the session's next message again, with the whole conversation (the
    agent's replies too) in its prompt. Publishes a hand-back event. 409 when the session is not
    handed off.
    """
    deps = wiring.chat_deps()
    outcome = handoff.hand_back(
        deps.memory, deps.events, agent_id=agent(router), session_id=session_id, clock=deps.clock
    )
    _handed(outcome, "Handbacks")
    return m.AgentSessionEnvelope.of(outcome.session)


def _handed(outcome: handoff.Outcome, metric: str) -> None:
    if outcome.changed:
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
    log_event_error(outcome.event_error)
