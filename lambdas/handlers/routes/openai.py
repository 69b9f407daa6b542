"""The OpenAI-compatible routes: POST /v1/chat/completions (with `stream`, server-sent
chat.completion.chunk events ending with `data: [DONE]`) and GET /v1/models, so that any OpenAI
client gets a model that remembers by changing its base URL (docs/openai.md).

A completion is a turn of the turn pipeline (services/conversation/completions.py maps the
request's conversation to a stored session; chat.open_turn answers it): the stored session is
the one POST /sessions/{id}/messages would have made, and every other route sees it. The caller
is the authenticated principal, as on every route; the request's `user` names an end user only
for a caller allowed to (handlers/identity.end_user, as X-ChatMemory-End-User does).

Errors are OpenAI's (`{"error": {"message", "type", "param", "code"}}`, the same status codes),
so the SDKs' own error classes and retries work: a field OpenAI has that the stack cannot honour
is refused by name (n > 1, tools, logprobs, a sampling option the text model does not take).

The stream function answers the chat route (handlers/stream.answer sends it here: local mode's
gateway and the deployed stream function), streamed or not; the chat function's Powertools
routes answer it too (buffered: a streamed answer in one body), and describe it in openapi.json.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Annotated, Any, NamedTuple

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from pydantic import ValidationError

from chatmemory import openai_models as o
from chatmemory import wiring
from chatmemory.domain import Turn, is_identifier
from chatmemory.errors import BadRequest, ChatMemoryError
from chatmemory.ports import GenerationOptions, TextGenerator
from chatmemory.schema import END_USER_HEADER, ID_MAX_LENGTH, ID_PATTERN, OPENAI_CHAT_PATH
from chatmemory.services.conversation import chat, completions
from chatmemory.services.prompt import estimate_tokens
from handlers import chat_shared, stream
from handlers.cors import cors_headers
from handlers.http import error_response, validation_message
from handlers.identity import caller_id, end_user, header
from handlers.json_body import strict_json
from handlers.routes.common import route

router = APIGatewayRouter()

SESSION_HEADER = "X-Session-Id"
MODELS_PATH = "/v1/models"
# OpenAI's error types by status.
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}
# GenerationOptions' names as a request writes them.
_PARAMS = {"max_new_tokens": "max_tokens", "stop": "stop", "temperature": "temperature"}


class InvalidRequest(BadRequest):
    """A request OpenAI's API would take that this one cannot honour, with the field at fault."""

    def __init__(self, message: str, *, param: str | None, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.param = param
        self.code = code


def error_json(status: int, code: str, message: str, param: str | None = None) -> str:
    """An error as OpenAI's API writes it."""
    kind = _TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    body = {"message": message, "type": kind, "param": param, "code": code}
    return json.dumps({"error": body})


def failure(error: BaseException) -> tuple[int, str]:
    """The status and OpenAI error body a request that failed with ERROR is answered with."""
    if isinstance(error, ChatMemoryError):
        status, code, text = chat_shared.known_error(error)
        return status, error_json(status, code, text, getattr(error, "param", None))
    status, code, text = chat_shared.unexpected_error()
    return status, error_json(status, code, text)


class Prepared(NamedTuple):
    """A completion admitted: its id, when, its session's client id, and its turn's events."""

    completion_id: str
    created: int
    session_id: str
    events: Any  # Iterator[chat.TurnEvent]
    stop: chat.StopSignal
    stream: bool
    include_usage: bool


def prepare(event: dict[str, Any], request: o.ChatCompletionRequest | None = None) -> Prepared:
    """The completion EVENT asks for, admitted (its errors are raised here, before any byte of
    the answer)."""
    caller = caller_id(event)
    if request is None:
        request = _request(event.get("body"))
    _refuse_unhonoured(request)
    if request.user is not None:
        caller = _end_user(event, caller, request.user)
    conversation = completions.conversation_of(_messages(request))
    deps = wiring.chat_deps()
    policy = _with_options(wiring.chat_policy(), request, deps.generator)
    session_id = header(event, SESSION_HEADER)
    if session_id is not None and not is_identifier(session_id):
        raise InvalidRequest(
            f"{SESSION_HEADER} must be 1-128 letters, digits or _ . : -",
            param=None,
            code="invalid_session_id",
        )
    stop = chat.StopSignal()
    client_id, events = completions.open_completion(
        deps,
        policy,
        user_id=caller,
        conversation=conversation,
        session_id=session_id,
        stream=bool(request.stream),
        stop=stop,
    )
    return Prepared(
        completion_id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        session_id=client_id,
        events=events,
        stop=stop,
        stream=bool(request.stream),
        include_usage=bool(request.stream_options and request.stream_options.include_usage),
    )


def answer(event: dict[str, Any], cors_origins: tuple[str, ...]) -> stream.Answer:
    """The answer to a completion EVENT: streamed chunks with `stream`, else one JSON body."""
    origin = header(event, "origin")
    headers = cors_headers(origin, cors_origins)
    try:
        prepared = prepare(event)
    except Exception as error:  # noqa: BLE001 - every failure is answered in OpenAI's shape
        return _json(*failure(error), headers)
    headers = [*headers, (SESSION_HEADER, prepared.session_id)]
    if prepared.stream:
        sse = [("Content-Type", stream.EVENT_STREAM), ("Cache-Control", "no-cache"), *headers]
        body = stream.server_sent(prepared.events, prepared.stop, form=_Chunks(prepared))
        return stream.Answer(200, sse, body)
    try:
        result = chat.collected(prepared.events)
    except Exception as error:  # noqa: BLE001
        return _json(*failure(error), headers)
    chat_shared.settled(result)
    return _json(200, json.dumps(completion_json(prepared, result)), headers)


def completion_json(prepared: Prepared, result: chat.TurnResult) -> dict[str, Any]:
    """The chat.completion object of a stored turn."""
    answered = result.answer or result.turn
    return {
        "id": prepared.completion_id,
        "object": "chat.completion",
        "created": prepared.created,
        "model": o.MODEL_ID,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answered.response or ""},
                "finish_reason": "stop",
            }
        ],
        "usage": usage_json(answered),
        "chatmemory": _extension(prepared, result),
    }


def usage_json(turn: Turn) -> dict[str, int]:
    """The turn's token counts (the model's, else estimated as the prompt builder does)."""
    prompt = turn.input_tokens if turn.input_tokens is not None else estimate_tokens(turn.input)
    completion = turn.output_tokens
    if completion is None:
        completion = estimate_tokens(turn.response or "")
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _extension(prepared: Prepared, result: chat.TurnResult) -> dict[str, Any]:
    return {
        "session_id": prepared.session_id,
        "turn": result.turn.turn,
        "sources": [
            {"kind": str(getattr(s.kind, "value", s.kind)), "id": s.id, "title": s.title}
            for s in (result.answer or result.turn).sources
        ],
    }


class _Chunks:
    """A turn's events as OpenAI's chat.completion.chunk events (stream.Form)."""

    def __init__(self, prepared: Prepared) -> None:
        self._prepared = prepared
        self._started = False

    def delta(self, text: str) -> bytes:
        delta = {"content": text}
        if not self._started:
            delta = {"role": "assistant", "content": text}
            self._started = True
        return self._chunk([{"index": 0, "delta": delta, "finish_reason": None}])

    def memory(self, memory: chat.Memory) -> bytes:
        return b""  # the sources come with the last chunk (its `chatmemory`)

    def stored(self, result: chat.TurnResult, *, replay: bool) -> Any:
        chat_shared.settled(result)
        answered = result.answer or result.turn
        if replay and answered.response:
            yield self.delta(answered.response)  # a retry: its answer, as if written now
        elif not self._started:
            yield self.delta("")
        last = [{"index": 0, "delta": {}, "finish_reason": "stop"}]
        yield self._chunk(last, chatmemory=_extension(self._prepared, result))
        if self._prepared.include_usage:
            yield self._chunk([], usage=usage_json(answered))
        yield b"data: [DONE]\n\n"

    def error(self, error: BaseException) -> bytes:
        _, body = failure(error)
        return f"data: {body}\n\n".encode()

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> bytes:
        chunk = {
            "id": self._prepared.completion_id,
            "object": "chat.completion.chunk",
            "created": self._prepared.created,
            "model": o.MODEL_ID,
            "choices": choices,
            **extra,
        }
        return f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode()


def _json(status: int, body: str, headers: list[tuple[str, str]]) -> stream.Answer:
    return stream.Answer(
        status, [("Content-Type", "application/json"), *headers], iter([body.encode()])
    )


def _request(body: Any) -> o.ChatCompletionRequest:
    if not isinstance(body, str) or not body:
        raise InvalidRequest("send the request as a JSON body", param=None)
    try:
        data = strict_json(body)
    except ValueError as error:
        raise InvalidRequest(f"the body is not JSON: {error}", param=None) from None
    try:
        return o.ChatCompletionRequest.model_validate(data)
    except ValidationError as error:
        raise _invalid(error.errors()) from None


def _invalid(errors: Any) -> InvalidRequest:
    """A validation failure, naming its first field as OpenAI does ("messages[0].role")."""
    first = errors[0] if errors else {}
    param = ""
    for part in first.get("loc", ()):
        if part == "body":
            continue
        param += f"[{part}]" if isinstance(part, int) else f".{part}" if param else str(part)
    return InvalidRequest(validation_message(errors), param=param or None)


def _refuse_unhonoured(request: o.ChatCompletionRequest) -> None:
    """Refuse, by name, what OpenAI's API takes and this one cannot honour."""
    refused = {
        "n": (request.n or 1) > 1,
        "top_p": request.top_p not in (None, 1),
        "presence_penalty": request.presence_penalty not in (None, 0),
        "frequency_penalty": request.frequency_penalty not in (None, 0),
        "logit_bias": bool(request.logit_bias),
        "logprobs": bool(request.logprobs),
        "top_logprobs": request.top_logprobs is not None,
        "tools": bool(request.tools),
        "tool_choice": request.tool_choice not in (None, "none"),
        "functions": bool(request.functions),
        "function_call": request.function_call not in (None, "none"),
        "response_format": (request.response_format or {}).get("type", "text") != "text",
    }
    for param, asked in refused.items():
        if asked:
            raise InvalidRequest(
                f"{param} is not supported: the model has no tools, and answers one choice of "
                "plain text (docs: Use it from any OpenAI client)",
                param=param,
                code="unsupported_parameter",
            )


def _messages(request: o.ChatCompletionRequest) -> list[tuple[str, str]]:
    """The request's messages as (role, text); a tool call or a part that is not text refused."""
    found = []
    for index, message in enumerate(request.messages):
        if message.role not in completions.ROLES:
            raise InvalidRequest(
                f"messages[{index}].role {message.role!r} is not supported (system, developer, "
                "user, assistant)",
                param=f"messages[{index}].role",
                code="unsupported_value",
            )
        if message.tool_calls:
            raise InvalidRequest(
                "tool calls are not supported: the model has no tools",
                param=f"messages[{index}].tool_calls",
                code="unsupported_parameter",
            )
        content = message.content
        if isinstance(content, list):
            if any(part.type != "text" or part.text is None for part in content):
                raise InvalidRequest(
                    "only text content parts are supported",
                    param=f"messages[{index}].content",
                    code="unsupported_value",
                )
            content = "\n".join(part.text or "" for part in content)
        found.append((message.role, content or ""))
    return found


def _with_options(
    policy: chat.ChatPolicy, request: o.ChatCompletionRequest, generator: TextGenerator
) -> chat.ChatPolicy:
    """The turn's policy with the request's max_tokens, temperature and stop, each refused when
    the text model cannot honour it (TextGenerator.unsupported)."""
    max_tokens = request.max_completion_tokens or request.max_tokens
    stop = (request.stop,) if isinstance(request.stop, str) else tuple(request.stop or ())
    if len(stop) > 4 or not all(stop):
        raise InvalidRequest("stop takes up to 4 non-empty sequences", param="stop")
    asked = GenerationOptions(max_tokens or policy.max_new_tokens, stop, request.temperature)
    for name, why in generator.unsupported(asked).items():
        if name == "max_new_tokens" and max_tokens is None:
            continue  # the deployment's own, not asked for
        raise InvalidRequest(
            f"{why} (model {generator.name})", param=_PARAMS.get(name), code="unsupported_parameter"
        )
    return policy._replace(
        # The deployment's max_new_tokens bounds what a caller may ask for.
        max_new_tokens=min(max_tokens, policy.max_new_tokens)
        if max_tokens
        else policy.max_new_tokens,
        temperature=request.temperature,
        stop=stop,
    )


def _end_user(event: dict[str, Any], caller: str, user: str) -> str:
    """The end user the request's `user` names: allowed as X-ChatMemory-End-User is (403 from
    anyone else); with the header as well, both must name the same one."""
    try:
        named = end_user(event, user)
    except BadRequest as error:
        raise InvalidRequest(str(error).replace(END_USER_HEADER, "user"), param="user") from None
    if header(event, END_USER_HEADER) is not None and named != caller:
        raise InvalidRequest(f"user and {END_USER_HEADER} name different end users", param="user")
    return named


# --- the chat function's routes (buffered), which openapi.json describes ----------------------

_ERROR = {"application/json": {"model": o.OpenAIError}}
_ERRORS: dict[int, Any] = {
    status: {"description": text, "content": _ERROR}
    for status, text in {
        400: "A malformed request, or a field the stack cannot honour (param names it)",
        401: "No authenticated caller",
        403: "`user` (or X-ChatMemory-End-User) from a caller not allowed to name end users",
        404: "No such session for this caller (X-Session-Id)",
        409: "The session is busy with concurrent messages",
        413: "A message over the configured limit",
        415: "A body that is not sent as application/json",
        500: "Unexpected error (no details are leaked)",
        502: "The model answered with an error",
        503: "A model or a store is unavailable or throttled: retry later",
    }.items()
}

_MODEL_ERRORS = {status: _ERRORS[status] for status in (401, 404, 500)}
ModelId = Annotated[
    str,
    Path(
        min_length=1,
        max_length=ID_MAX_LENGTH,
        pattern=ID_PATTERN,
        description=f"A model id ({o.MODEL_ID} is the one served).",
    ),
]


@route(
    router.post,
    OPENAI_CHAT_PATH,
    responses={
        200: {
            "description": "The answer (a chat.completion, or with stream an event stream)",
            "content": {
                "application/json": {"model": o.ChatCompletion},
                "text/event-stream": {"schema": {"type": "string"}},
            },
        },
        **_ERRORS,
    },
    tags=["OpenAI-compatible"],
)
def chat_completions(body: Annotated[o.ChatCompletionRequest, Body()]) -> Response[Any]:
    """Chat completion (OpenAI-compatible).

    OpenAI's chat completions API, answered by the stack's model with memory: the conversation is
    stored as an ordinary session (X-Session-Id names it by the caller's id; without it the
    conversation is recognised from the messages sent back), the client's system message and earlier
    turns are honoured, and auto-recall and the profile are added to the prompt. With stream,
    server-sent chat.completion.chunk events ending with `data: [DONE]`. Errors are OpenAI's.
    """
    event = router.current_event.raw_event
    try:
        prepared = prepare(event, body)
    except Exception as error:  # noqa: BLE001 - every failure is answered in OpenAI's shape
        return _response(*failure(error))
    session = {SESSION_HEADER: prepared.session_id}
    if prepared.stream:  # this function buffers: the events in one body
        chunks = stream.server_sent(prepared.events, prepared.stop, form=_Chunks(prepared))
        text = b"".join(chunks).decode()
        return Response(200, stream.EVENT_STREAM, text, {**session, "Cache-Control": "no-cache"})
    try:
        result = chat.collected(prepared.events)
    except Exception as error:  # noqa: BLE001
        return _response(*failure(error))
    chat_shared.settled(result)
    return Response(200, "application/json", json.dumps(completion_json(prepared, result)), session)


@route(
    router.get,
    MODELS_PATH,
    values={"MODEL_ID": o.MODEL_ID},
    responses={
        200: {"description": "The models", "content": {"application/json": {"model": o.ModelList}}},
        **_MODEL_ERRORS,
    },
    tags=["OpenAI-compatible"],
)
def list_models() -> Response[Any]:
    """List models (OpenAI-compatible).

    The one model the stack serves, `{MODEL_ID}`: its text model with memory.
    """
    try:
        caller_id(router.current_event.raw_event)  # any authenticated caller
    except ChatMemoryError as error:
        return _response(*failure(error))
    return Response(200, "application/json", json.dumps(models_json()))


@route(
    router.get,
    f"{MODELS_PATH}/<model>",
    values={"MODEL_ID": o.MODEL_ID},
    responses={
        200: {"description": "The model", "content": {"application/json": {"model": o.ModelCard}}},
        **_MODEL_ERRORS,
    },
    tags=["OpenAI-compatible"],
)
def get_model(model: ModelId) -> Response[Any]:
    """Get a model (OpenAI-compatible).

    `{MODEL_ID}`, the one model the stack serves; any other id answers 404.
    """
    try:
        caller_id(router.current_event.raw_event)
    except ChatMemoryError as error:
        return _response(*failure(error))
    if model != o.MODEL_ID:
        message = f"The model {model!r} does not exist; this stack serves {o.MODEL_ID!r}"
        return _response(404, error_json(404, "model_not_found", message, "model"))
    return Response(200, "application/json", json.dumps(model_card()))


def models_json() -> dict[str, Any]:
    return {"object": "list", "data": [model_card()]}


def model_card() -> dict[str, Any]:
    return {"id": o.MODEL_ID, "object": "model", "created": 0, "owned_by": "chatmemory"}


def _response(status: int, body: str) -> Response[Any]:
    return Response(status, "application/json", body)


def invalid_request(error: RequestValidationError) -> Response[Any]:
    """A body the chat function's validation refused: OpenAI's error on the /v1 routes, the
    API's own everywhere else (handlers/chat_routes.py registers it for every router: the
    resolver's exception handlers are one table)."""
    if str(router.current_event.path).startswith("/v1/"):
        return _response(400, error_json(400, "invalid_request", *_message_param(error)))
    return error_response(400, "bad_request", validation_message(error.errors()))


def _message_param(error: RequestValidationError) -> tuple[str, str | None]:
    invalid = _invalid(error.errors())
    return str(invalid), invalid.param
