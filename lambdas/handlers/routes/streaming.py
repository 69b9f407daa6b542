"""The route of a chat message whose answer is streamed (server-sent events)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from chatmemory import api_models as m
from handlers import stream
from handlers.routes import common
from handlers.routes.common import (
    SessionId,
)

router = APIGatewayRouter()


@router.post(
    "/sessions/<session_id>/messages/stream",
    summary="Send a message, its answer streamed",
    description=(
        "The message answered as POST /sessions/{session_id}/messages answers it (the same "
        "turn is stored), its answer sent as server-sent events while the model writes it: "
        "`memory` (data: {sources}: what long-term memory put in the prompt), `delta` (data: "
        "{text}: the answer's text, after the output filters), `turn` (data: the envelope the "
        "buffered route answers), `error` (data: {status, error: {code, message}}: as the "
        "buffered route's errors), and a `: ping` comment every 15 s while the model is quiet; "
        "`turn` or `error` is last. A bad request is refused before the stream starts, with the "
        "buffered route's JSON error. A retry with the same client_message_id replays the "
        "stored answer; a reader that goes away stops the model, and what it was sent is "
        "stored, marked stopped."
    ),
    responses={
        200: {
            "description": "The answer's events",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    },
)
def stream_message(
    session_id: SessionId, body: Annotated[m.PostMessageRequest, Body()]
) -> Response[str]:
    message = common.message(router, session_id, body)
    # Reached when the stream's own path did not take the request as it is: its events in one.
    return Response(
        status_code=200, content_type=stream.EVENT_STREAM, body=stream.collected_events(message)
    )
