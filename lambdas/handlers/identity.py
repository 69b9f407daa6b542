"""Who is calling: the caller's identity and whether the caller is an agent, from what API
Gateway's authorizer put in the event (never from the request). No Powertools: the chat
function's message route reads it before anything else is imported (handlers/chat_api.py)."""

from __future__ import annotations

import json
import re
from typing import Any

from chatmemory.errors import BadRequest, ChatMemoryError
from chatmemory.schema import END_USER_HEADER, ID_MAX_LENGTH, ID_PATTERN


class Unauthorized(ChatMemoryError):
    code = "unauthorized"
    status = 401


def caller_id(event: dict[str, Any]) -> str:
    """The authenticated caller: the Cognito `sub` claim, else the IAM/Lambda authorizer
    identity. Never taken from the request body, and from a header only as an end user named
    by a role allowed to (end_user)."""
    caller = _authenticated(event)
    named = _header(event, END_USER_HEADER)
    return caller if named is None else end_user(event, named)


def end_user(event: dict[str, Any], named: str) -> str:
    """The end user a backend names in END_USER_HEADER: allowed only to a session of a role of
    END_USER_ROLE_ARNS (API Gateway's IAM authorizer vouches for the session's ARN), each end
    user a caller of their own under that role ("<role ARN>/end-user/<id>"). Anyone else is
    refused (403), and an id outside schema.ID_PATTERN too (400)."""
    from chatmemory import wiring  # the settings, read once per process

    identity = (event.get("requestContext") or {}).get("identity") or {}
    roles = wiring.settings().end_user_role_arns
    role = next((r for r in roles if is_session_of(identity.get("userArn"), r)), None)
    if role is None:
        raise Forbidden(f"this caller may not name end users ({END_USER_HEADER})")
    if len(named) > ID_MAX_LENGTH or not re.fullmatch(ID_PATTERN, named):
        raise BadRequest(
            f"{END_USER_HEADER} must be 1-{ID_MAX_LENGTH} letters, digits or _ . : - "
            "(not only dots)"
        )
    return f"{role}/end-user/{named}"


def _header(event: dict[str, Any], name: str) -> str | None:
    """A request header's value (names are case-insensitive; the last one of a repeated
    header), or None."""
    wanted = name.lower()
    found = None
    for key, value in (event.get("headers") or {}).items():
        if isinstance(key, str) and key.lower() == wanted and isinstance(value, str):
            found = value
    for key, values in (event.get("multiValueHeaders") or {}).items():
        if isinstance(key, str) and key.lower() == wanted and values:
            found = str(values[-1])
    return found


def _authenticated(event: dict[str, Any]) -> str:
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
