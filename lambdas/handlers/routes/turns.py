"""The routes of a session's turns: a chat message answered, the turns listed, a turn stored
by an agent framework, read, completed and rated."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BeforeValidator

from chatmemory import api_models as m
from chatmemory import wiring
from chatmemory.schema import MAX_TURN_NUMBER
from chatmemory.services.conversation import chat, sessions, turns
from handlers import chat_shared, messages
from handlers.chat_shared import metrics
from handlers.routes import common
from handlers.routes.common import (
    Limit,
    NextToken,
    SessionId,
    answer_page,
    digits,
    route,
    session,
    user,
)

router = APIGatewayRouter()


@route(
    router.post,
    "/sessions/<session_id>/messages",
    responses={
        200: {
            "description": "The message's turn, answered",
            "content": {"application/json": {"model": m.MessageEnvelope}},
        }
    },
)
def post_message(
    session_id: SessionId, body: Annotated[m.PostMessageRequest, Body()]
) -> Response[str]:
    """Send a message.

    Stores the message, answers it with the model from the session's last window_turns turns (/past
    and /verified messages: from long-term memory or verified passages) and returns the stored turn.
    A retry with the same client_message_id returns that turn without a second model call, and
    completes a turn whose model call failed. Messages sent before the bot answered are answered
    together, once: the newest one's turn holds the answer, and the requests of the earlier ones
    return their turn (answered_by) with that answer.
    """
    message = common.message(router, session_id, body)
    status, envelope = messages.reply(message)
    return Response(status_code=status, content_type="application/json", body=envelope)


@route(router.get, "/sessions/<session_id>/messages")
def list_messages(
    session_id: SessionId,
    limit: Limit = 50,
    next_token: NextToken = None,
    order: Annotated[Literal["asc", "desc"], Query()] = "asc",
) -> m.MessageList:
    """List messages.

    The session's turns in order (asc by default, or desc), one page at a time: at most limit, fewer
    when they would not fit one answer (at most 6 MB).
    """
    memory = wiring.chat_deps().memory
    asked = answer_page(limit, next_token, order)
    page = sessions.list_messages(memory, user(router), session(router, session_id), asked)
    return m.MessageList.of(page)


TurnNumber = Annotated[
    int,
    BeforeValidator(digits),
    Path(
        ge=1,
        le=MAX_TURN_NUMBER,
        description="The turn's number in its session, in plain digits (not +1, 1.0 or 1e0).",
    ),
]


@route(
    router.post,
    "/sessions/<session_id>/turns",
    responses={201: {"description": "Stored"}, 200: {"description": "Stored earlier"}},
)
def store_turn(
    session_id: SessionId, body: Annotated[m.StoreTurnRequest, Body()]
) -> tuple[m.TurnEnvelope, int]:
    """Store a turn.

    Stores what the user said and, if there is one yet, the answer, as the session's next turn,
    without calling this service's model: for an agent that answers with its own model and keeps its
    memory here. A turn stored without a response waits for one (pending) until PATCH gives it.
    Consolidation, the rolling summary and recall treat these turns like any other. A retry with the
    same client_message_id returns the stored turn (200).
    """
    deps = wiring.chat_deps()
    policy = wiring.chat_policy()
    caller = user(router)
    result = sessions.on_current_session(
        deps.memory,
        caller,
        session_id,
        lambda current: chat.store_client_turn(
            deps, policy, caller, current.session_id, body.said(), current.found
        ),
        clock=deps.clock,
    )
    chat_shared.log_sentiment_error(result.sentiment_error)
    if result.replayed:
        return m.TurnEnvelope.of(result.turn), 200
    metrics.add_metric(name="TurnsStored", unit=MetricUnit.Count, value=1)
    return m.TurnEnvelope.of(result.turn), 201


@route(router.get, "/sessions/<session_id>/turns/<turn>")
def get_turn(session_id: SessionId, turn: TurnNumber) -> m.TurnEnvelope:
    """Get a turn.

    One turn of the session, with its metadata and feedback.
    """
    found = turns.get_turn(
        wiring.chat_deps().memory, user(router), session(router, session_id), turn
    )
    return m.TurnEnvelope.of(found)


@route(router.patch, "/sessions/<session_id>/turns/<turn>")
def update_turn(
    session_id: SessionId, turn: TurnNumber, body: Annotated[m.UpdateTurnRequest, Body()]
) -> m.TurnEnvelope:
    """Complete a turn.

    Gives a turn stored without a response its response (once, while the session is open; the same
    response again is a no-op), and/or replaces its metadata.
    """
    updated = turns.update_turn(
        wiring.chat_deps().memory,
        user_id=user(router),
        session_id=session(router, session_id),
        number=turn,
        response=body.response,
        metadata=body.metadata,
        messages=m.stored_messages(body.messages),
    )
    return m.TurnEnvelope.of(updated)


@route(router.put, "/sessions/<session_id>/turns/<turn>/feedback")
def rate_turn(
    session_id: SessionId, turn: TurnNumber, body: Annotated[m.FeedbackRequest, Body()]
) -> m.TurnEnvelope:
    """Rate a turn.

    The caller's rating of the turn's answer (up or down) with an optional comment, kept with the
    turn and exported with it; a new rating replaces the previous one.
    """
    deps = wiring.chat_deps()
    rated = turns.rate_turn(
        deps.memory,
        user_id=user(router),
        session_id=session(router, session_id),
        number=turn,
        rating=body.rating,
        comment=body.comment,
        clock=deps.clock,
    )
    return m.TurnEnvelope.of(rated)
