"""HTTP helpers shared by API handlers: caller identity and the error envelope."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from aws_lambda_powertools.event_handler import Response

from chatmemory.errors import ChatMemoryError


class Unauthorized(ChatMemoryError):
    code = "unauthorized"
    status = 401


def caller_id(event: dict[str, Any]) -> str:
    """The authenticated caller: the Cognito `sub` claim, else the IAM/Lambda authorizer
    identity. Never taken from the request body or headers."""
    context = event.get("requestContext") or {}
    authorizer = context.get("authorizer") or {}
    claims = authorizer.get("claims") or {}
    identity = context.get("identity") or {}
    for candidate in (
        claims.get("sub"),
        authorizer.get("principalId"),
        identity.get("cognitoIdentityId"),
        identity.get("userArn"),
    ):
        if isinstance(candidate, str) and candidate:
            return candidate
    raise Unauthorized("no authenticated caller")


def cors_headers(origin: str | None, allowed: Sequence[str]) -> dict[str, str]:
    """CORS answer headers for a request from `origin`: any origin with "*", else only the
    listed ones (API Gateway answers preflights; proxy responses need these from the Lambda)."""
    if "*" in allowed:
        return {"Access-Control-Allow-Origin": "*"}
    if origin and origin in allowed:
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
    return {}


def with_headers(response: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """Add `headers` to a REST proxy response (Powertools answers in multiValueHeaders)."""
    if headers:
        multi = response.setdefault("multiValueHeaders", {}) or {}
        response["multiValueHeaders"] = multi
        for name, value in headers.items():
            multi[name] = [value]
    return response


def not_json(event: dict[str, Any]) -> dict[str, Any] | None:
    """A 415 proxy reply for a request whose body is not sent as JSON, else None: this API
    reads JSON bodies only."""
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    media = str(headers.get("content-type") or "application/json").split(";")[0]
    if not event.get("body") or media.strip().lower() == "application/json":
        return None
    return {
        "statusCode": 415,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(
            {
                "error": {
                    "code": "unsupported_media_type",
                    "message": "send the body as JSON (Content-Type: application/json)",
                }
            }
        ),
        "isBase64Encoded": False,
    }


def strict_json(body: str) -> Any:
    """A request body's JSON, refusing text that is not Unicode: a lone surrogate escaped in JSON
    ("\\ud800") parses in Python, but no store, model or client can encode it as UTF-8."""
    data = json.loads(body)
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        raise json.JSONDecodeError(
            "a lone surrogate escape: the text is not valid Unicode", body, 0
        ) from error
    return data


def error_response(status: int, code: str, message: str) -> Response:
    return Response(
        status_code=status,
        content_type="application/json",
        body=json.dumps({"error": {"code": code, "message": message}}),
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
