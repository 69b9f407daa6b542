"""HTTP helpers of the API handler: caller identity, CORS, JSON-only bodies, the error envelope."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, CORSConfig, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware

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
            if "#" in candidate:
                # "#" separates a caller's id from the generation of their memory (see
                # domain.owner_key): no identity provider we accept issues it.
                raise Unauthorized("the caller's identity is not usable")
            return candidate
    raise Unauthorized("no authenticated caller")


class Forbidden(ChatMemoryError):
    code = "forbidden"
    status = 403


def is_agent(event: dict[str, Any], *, group: str, role_arn: str = "") -> bool:
    """Whether the authenticated caller is a human agent (hand-off to a person): a member of the
    Cognito group `group` (the `cognito:groups` claim), or, with IAM authorization, a session
    of the role `role_arn` (the caller's `userArn` is `...:assumed-role/<name>/<session>`).
    Both come from API Gateway's authorizer, never from the request."""
    context = event.get("requestContext") or {}
    authorizer = context.get("authorizer") or {}
    claims = authorizer.get("claims") or {}
    if group and group in cognito_groups(claims.get("cognito:groups")):
        return True
    identity = context.get("identity") or {}
    return bool(role_arn) and is_session_of(identity.get("userArn"), role_arn)


def cognito_groups(value: Any) -> set[str]:
    """The groups of a `cognito:groups` claim as API Gateway's REST Cognito authorizer passes
    it, every claim being a string there: one group ("agents"), a Java-style list
    ("[agents other]"), comma-separated ("agents,other"); also a JSON list, in a string or not
    (other authorizers, tests)."""
    if isinstance(value, list):
        return {str(item) for item in value}
    if not isinstance(value, str):
        return set()
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return {str(item) for item in parsed}
        text = text[1:-1]
    return {part for part in re.split(r"[,\s]+", text) if part}


_ROLE = re.compile(
    r"^arn:(?P<partition>[\w-]+):iam::(?P<account>\d{12}):role/(?:.*/)?(?P<name>[^/]+)$"
)
_ASSUMED = re.compile(
    r"^arn:(?P<partition>[\w-]+):sts::(?P<account>\d{12}):assumed-role/(?P<name>[^/]+)/[^/]+$"
)


def is_session_of(user_arn: Any, role_arn: str) -> bool:
    """Whether `user_arn` (an STS assumed-role session) is a session of the IAM role `role_arn`
    (same partition, account and role name; a role's path is not in its sessions' ARNs)."""
    if not isinstance(user_arn, str):
        return False
    session, role = _ASSUMED.match(user_arn), _ROLE.match(role_arn)
    if session is None or role is None:
        return False
    return all(session.group(k) == role.group(k) for k in ("partition", "account", "name"))


class UnsupportedMediaType(ChatMemoryError):
    code = "unsupported_media_type"
    status = 415

    def __init__(self) -> None:
        super().__init__("send the body as JSON (Content-Type: application/json)")


class OriginCORSConfig(CORSConfig):
    """Powertools' CORSConfig, plus `Vary: Origin` on an answer that names the caller's origin,
    so that no cache serves it to a page of another origin."""

    def to_dict(self, origin: str | None) -> dict[str, str]:
        headers = super().to_dict(origin)
        if headers and origin != "*":
            headers["Vary"] = "Origin"
        return headers


def cors_config(allowed: Sequence[str]) -> CORSConfig | None:
    """CORS for pages of the `allowed` origins ("*": any), or None for no CORS headers at all.
    API Gateway answers preflights; proxy answers need the headers from the Lambda."""
    if not allowed:
        return None
    return OriginCORSConfig(allow_origin=allowed[0], extra_origins=list(allowed[1:]))


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


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise ValueError("a number too large for a float")
    return number


def _bounded_int(text: str) -> int:
    # Python refuses int() of over 4,300 digits anyway; nothing here needs more than 19.
    if len(text.lstrip("-")) > 64:
        raise ValueError("an integer with too many digits")
    return int(text)


def strict_json(body: str) -> Any:
    """A request body's JSON, refusing what parses in Python but is not portable JSON or data:
    NaN and Infinity, numbers beyond a float (1e400) or of thousands of digits, nesting deeper
    than the parser's recursion limit, and text that is not Unicode (a lone surrogate escaped
    in JSON, "\\ud800", parses in Python, but no store or client can encode it as UTF-8).
    Each is a JSONDecodeError, which the API answers with 400."""
    try:
        data = json.loads(
            body, parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded_int
        )
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as error:  # from the hooks above, or the depth
        reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
        raise json.JSONDecodeError(reason, body[:0], 0) from None
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", body[:0], 0) from None
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
