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
    route,
)

router = APIGatewayRouter()

# One event of the stream as a client's SSE parser reads it (OpenAPI 3.1: the schema of an
# event stream describes one event): its name, its data (JSON), and the fields SSE allows.
SSE_EVENT_SCHEMA = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "enum": ["memory", "delta", "turn", "error"]},
        "data": {"type": "string", "contentMediaType": "application/json"},
        "id": {"type": "string"},
        "retry": {"type": "integer"},
    },
    "required": ["event", "data"],
}


@route(
    router.post,
    "/sessions/<session_id>/messages/stream",
    responses={
        200: {
            "description": "The answer's events",
            # OpenAPI 3.1: the schema of a server-sent event stream describes one event.
            "content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}},
        }
    },
)
def stream_message(
    session_id: SessionId, body: Annotated[m.PostMessageRequest, Body()]
) -> Response[str]:
    """Send a message, its answer streamed.

    The message answered as POST /sessions/{session_id}/messages answers it (the same turn is
    stored), its answer sent as server-sent events while the model writes it: `memory` (data:
    {sources}: what long-term memory put in the prompt), `delta` (data: {text}: the answer's text,
    after the output filters), `turn` (data: the envelope the buffered route answers), `error`
    (data: {status, error: {code, message}}: as the buffered route's errors), and a `: ping` comment
    every 15 s while the model is quiet; `turn` or `error` is last. A bad request is refused before
    the stream starts, with the buffered route's JSON error. A retry with the same client_message_id
    replays the stored answer; a reader that goes away stops the model, and what it was sent is
    stored, marked stopped.
    """
    message = common.message(router, session_id, body)
    # Reached when the stream's own path did not take the request as it is: its events in one.
    return Response(
        status_code=200, content_type=stream.EVENT_STREAM, body=stream.collected_events(message)
    )
