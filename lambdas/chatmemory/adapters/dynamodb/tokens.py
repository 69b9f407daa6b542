"""Opaque page tokens: a query's LastEvaluatedKey, encoded, and checked when it comes back."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from chatmemory.errors import BadRequest


def encode_token(key: dict[str, Any]) -> str:
    raw = json.dumps(key, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str, types: dict[str, str]) -> dict[str, Any]:
    """The start key in a next_token, if it has exactly the attributes `types` names
    (name -> "S" or "N"), each of its type: anything else would reach DynamoDB as an invalid
    ExclusiveStartKey (a 500), not as the client's bad request it is."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        key = json.loads(raw)
    except (ValueError, TypeError) as exc:
        raise BadRequest("next_token is not valid") from exc
    if not isinstance(key, dict) or set(key) != set(types):
        raise BadRequest("next_token is not valid")
    for name, kind in types.items():
        value = key[name]
        if not isinstance(value, dict) or list(value) != [kind] or not isinstance(value[kind], str):
            raise BadRequest("next_token is not valid")
        if not value[kind] or len(value[kind]) > 1024:  # DynamoDB refuses empty key values
            raise BadRequest("next_token is not valid")
        if kind == "N" and not re.fullmatch(r"-?\d{1,38}", value[kind]):
            raise BadRequest("next_token is not valid")
    return key


def page_token(answer: dict[str, Any]) -> str | None:
    key = answer.get("LastEvaluatedKey")
    return encode_token(key) if key else None
