"""HTTP helpers of the API's Powertools routes (handlers/chat_routes.py): CORS, JSON-only bodies,
the error envelope, readable validation errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, CORSConfig, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware

from chatmemory.errors import ChatMemoryError
from handlers.cors import cors_headers
from handlers.json_body import error_json


class UnsupportedMediaType(ChatMemoryError):
    code = "unsupported_media_type"
    status = 415

    def __init__(self) -> None:
        super().__init__("send the body as JSON (Content-Type: application/json)")


class OriginCORSConfig(CORSConfig):
    """Powertools' CORSConfig answering with handlers/cors.py's headers (the same as every
    other way the API answers)."""

    def __init__(self, allowed: Sequence[str]) -> None:
        super().__init__(allow_origin=allowed[0], extra_origins=list(allowed[1:]))
        self._allowed = tuple(allowed)

    def to_dict(self, origin: str | None) -> dict[str, str]:
        return dict(cors_headers(origin, self._allowed))


def cors_config(allowed: Sequence[str]) -> CORSConfig | None:
    """CORS for pages of the `allowed` origins ("*": any), or None for no CORS headers at all.
    API Gateway answers preflights; proxy answers need the headers from the Lambda."""
    if not allowed:
        return None
    return OriginCORSConfig(allowed)


def json_bodies_only(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response:
    """Middleware: refuse a body that is not sent as JSON (415), since this API reads JSON only
    and Powertools would parse a form or multipart body; and give a JSON Content-Type its
    media type in lower case for the validation that follows (see json_media_type)."""
    event = app.current_event.raw_event
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    media = str(headers.get("content-type") or "application/json").split(";")[0]
    if event.get("body") and media.strip().lower() != "application/json":
        raise UnsupportedMediaType()
    json_media_type(event)
    return next_middleware(app)


def json_media_type(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its Content-Type's media type in lower case: media types are
    case-insensitive (RFC 9110), but Powertools' validation only knows "application/json"."""
    for key in ("headers", "multiValueHeaders"):
        headers = event.get(key) or {}
        for name in list(headers):
            if name.lower() == "content-type":
                value = headers[name]
                headers[name] = (
                    [_lower_media(v) for v in value]
                    if isinstance(value, list)
                    else _lower_media(value)
                )
    return event


def _lower_media(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    media, sep, params = value.partition(";")
    return media.strip().lower() + sep + params


def error_response(status: int, code: str, message: str) -> Response:
    return Response(
        status_code=status,
        content_type="application/json",
        body=error_json(code, message),
    )


def validation_message(errors: Sequence[Any]) -> str:
    """Readable pydantic errors without echoing the rejected input back."""
    parts = []
    for error in errors[:5]:
        loc = ".".join(str(p) for p in error.get("loc", ()) if not isinstance(p, int))
        message = error.get("msg", "invalid")
        if error.get("type") == "json_invalid" and (error.get("ctx") or {}).get("error"):
            message += f" ({error['ctx']['error']})"  # the parser's reason, never the input
        parts.append(f"{loc}: {message}" if loc else message)
    return "; ".join(parts) or "invalid request"
