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
        parts.append(f"{loc}: {error.get('msg', 'invalid')}" if loc else error.get("msg", ""))
    return "; ".join(parts) or "invalid request"
