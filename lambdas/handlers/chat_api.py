"""Chat API Lambda (API Gateway REST, proxy integration): sessions, messages, export/import."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BeforeValidator

from chatmemory import api_models as m
from chatmemory import wiring
from chatmemory.errors import ChatMemoryError
from chatmemory.services import chat, forget, recall, sessions
from handlers.http import (
    caller_id,
    cors_headers,
    error_response,
    json_media_type,
    not_json,
    strict_json,
    validation_message,
    with_headers,
)

logger = Logger(service="chat-api")
tracer = Tracer(service="chat-api")
metrics = Metrics(namespace="ChatMemory", service="chat-api")
app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=strict_json)


def _digits(value: object) -> object:
    """A query number as the client wrote it must be a plain integer: "1.0" or "1e1" is a
    client bug, not 1 or 10."""
    text = str(value)
    if not (text.isascii() and text.isdigit()):
        raise ValueError("must be a whole number written in digits")
    return value


SessionId = Annotated[str, Path(description="A session id from POST /sessions.")]
Limit = Annotated[int, BeforeValidator(_digits), Query(ge=1, le=100, description="Page size.")]
NextToken = Annotated[str | None, Query(max_length=2048, description="From the previous page.")]


@app.post("/sessions", responses={201: {"description": "Created"}})
def create_session(
    body: Annotated[m.CreateSessionRequest | None, Body()] = None,
) -> tuple[m.SessionEnvelope, int]:
    body = body or m.CreateSessionRequest()
    created = sessions.create_session(
        wiring.chat_deps().memory, _user(), name=body.name, end_previous=body.end_previous
    )
    return m.SessionEnvelope.model_validate({"session": created.public()}), 201


@app.get("/sessions")
def list_sessions(limit: Limit = 20, next_token: NextToken = None) -> m.SessionList:
    page = sessions.list_sessions(
        wiring.chat_deps().memory, _user(), limit=limit, next_token=next_token
    )
    return m.SessionList.model_validate(
        {"sessions": [s.public() for s in page.items], "next_token": page.next_token}
    )


@app.post("/sessions/import", responses={201: {"description": "Imported"}})
def import_session(body: Annotated[m.ImportDocument, Body()]) -> tuple[m.SessionEnvelope, int]:
    settings = wiring.settings()
    created = sessions.import_session(
        wiring.chat_deps().memory,
        _user(),
        body,
        limits=sessions.ImportLimits(max_input_chars=settings.max_input_chars),
    )
    return m.SessionEnvelope.model_validate({"session": created.public()}), 201


@app.get("/sessions/<session_id>")
def get_session(session_id: SessionId) -> m.SessionEnvelope:
    found = sessions.get_session(wiring.chat_deps().memory, _user(), session_id)
    return m.SessionEnvelope.model_validate({"session": found.public()})


@app.post("/sessions/<session_id>/end")
def end_session(session_id: SessionId) -> m.SessionEnvelope:
    ended = sessions.end_session(wiring.chat_deps().memory, _user(), session_id)
    return m.SessionEnvelope.model_validate({"session": ended.public()})


@app.delete("/sessions/<session_id>", responses={204: {"description": "Deleted"}})
def delete_session(session_id: SessionId) -> Response[None]:
    sessions.delete_session(wiring.chat_deps().memory, _user(), session_id)
    return Response(status_code=204, body=None)


@app.post("/sessions/<session_id>/messages")
def post_message(
    session_id: SessionId, body: Annotated[m.PostMessageRequest, Body()]
) -> m.TurnEnvelope:
    result = chat.post_message(
        wiring.chat_deps(),
        wiring.chat_policy(),
        user_id=_user(),
        session_id=session_id,
        content=body.content,
        client_message_id=body.client_message_id,
        window_turns=body.window_turns,
    )
    if not result.replayed:
        metrics.add_metric(name="TurnsStored", unit=MetricUnit.Count, value=1)
    return m.TurnEnvelope.model_validate({"turn": result.turn.public()})


@app.get("/sessions/<session_id>/messages")
def list_messages(
    session_id: SessionId,
    limit: Limit = 50,
    next_token: NextToken = None,
    order: Annotated[Literal["asc", "desc"], Query()] = "asc",
) -> m.MessageList:
    page = sessions.list_messages(
        wiring.chat_deps().memory,
        _user(),
        session_id,
        limit=limit,
        next_token=next_token,
        ascending=order == "asc",
    )
    return m.MessageList.model_validate(
        {"messages": [t.public() for t in page.items], "next_token": page.next_token}
    )


@app.get("/sessions/<session_id>/export")
def export_session(session_id: SessionId) -> m.ExportDocument:
    document = sessions.export_session(wiring.chat_deps().memory, _user(), session_id)
    return m.ExportDocument.model_validate(document)


@app.get("/memories")
def search_memories(
    q: Annotated[str, Query(min_length=1, max_length=1000, description="What to recall.")],
    k: Annotated[
        int, BeforeValidator(_digits), Query(ge=1, le=50, description="How many sessions.")
    ] = 5,
) -> m.MemoryList:
    deps = wiring.chat_deps()
    found = recall.search_memories(deps, wiring.chat_policy(), user_id=_user(), query=q, k=k)
    return m.MemoryList.model_validate({"memories": found})


@app.delete("/memories", responses={204: {"description": "Forgotten"}})
def forget_memories() -> Response[None]:
    forget.forget_user(wiring.chat_deps().memory, _user())
    return Response(status_code=204, body=None)


@app.get("/deletions")
def deletion_status() -> m.DeletionStatus:
    status = forget.deletion_status(wiring.chat_deps().memory, _user())
    return m.DeletionStatus.model_validate(status.__dict__)


def _user() -> str:
    return caller_id(app.current_event.raw_event)


@app.exception_handler(ChatMemoryError)
def _known_error(error: ChatMemoryError) -> Response:
    if error.status >= 500:
        logger.warning("request failed", extra={"code": error.code, "reason": str(error)})
    return error_response(error.status, error.code, str(error))


@app.exception_handler(RequestValidationError)
def _invalid_request(error: RequestValidationError) -> Response:
    return error_response(400, "bad_request", validation_message(error.errors()))


@app.not_found
def _no_route(_: Exception) -> Response:
    return error_response(404, "not_found", "no such route")


@app.exception_handler(Exception)
def _unexpected(error: Exception) -> Response:
    logger.exception("unhandled error")
    return error_response(500, "internal_error", "internal error; the request was not completed")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Powertools would parse a form or multipart body (and fail with a 500 on a bad one).
    response = not_json(event) or app.resolve(json_media_type(event), context)
    origin = {k.lower(): v for k, v in (event.get("headers") or {}).items()}.get("origin")
    return with_headers(response, cors_headers(origin, wiring.settings().cors_origins))


_ERRORS = {
    400: "Malformed JSON, a missing or invalid field",
    401: "No authenticated caller",
    404: "No such session for this caller",
    409: "The session is ended, or busy with concurrent messages",
    413: "Content over the configured limit",
    415: "A body that is not sent as application/json",
    500: "Unexpected error (no details are leaked)",
    502: "The model answered with an error",
    503: (
        "A model or a store is unavailable or throttled: retry later. A message whose model "
        "call failed is kept: retry it with the same client_message_id"
    ),
}


def openapi_document() -> str:
    """The API's OpenAPI 3 document, generated from the route signatures and models above.

    Powertools documents request-validation failures as 422; this API answers them with 400
    and one error envelope, so the document says that instead."""
    document = json.loads(
        app.get_openapi_json_schema(
            title="Chat memory API",
            version="1.0.0",
            summary="Sessions with short-term memory, recall of past sessions, verified answers.",
            description=(
                "Every route acts for the authenticated caller (the Cognito `sub` claim). "
                'Errors are JSON: {"error": {"code", "message"}}.'
            ),
        )
    )
    schemas = document["components"]["schemas"]
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(name, None)
    envelope = m.ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(envelope.pop("$defs", {}))
    schemas["ErrorEnvelope"] = envelope
    error_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    for operations in document["paths"].values():
        for operation in operations.values():
            responses = operation["responses"]
            responses.pop("422", None)
            if "204" in responses:
                responses["204"].pop("content", None)
            for status, text in _ERRORS.items():
                responses.setdefault(str(status), {"description": text, "content": error_ref})
    return json.dumps(document)
