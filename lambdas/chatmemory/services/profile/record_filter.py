"""Filters on records' values (POST /memories/records/search): LangGraph's store filters,
applied on the server so a search's page holds only what matches.

A record's value is the JSON object its text holds (an agent's store keeps its values so), or
`{"text": text}` for any other text. A condition is a field equal to a value, or operators
`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte` (numbers compare as numbers; a missing or
non-numeric field is outside any range); nested objects match field by field, and a dotted
name ("user.level") reaches into nested objects."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chatmemory.errors import BadRequest

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def value_of(text: str) -> dict[str, Any]:
    """The value a record's text holds."""
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    return {"text": text}


def check(conditions: Mapping[str, Any]) -> None:
    """Refuse (400) an operator no search knows, before anything is read."""
    for wanted in conditions.values():
        if isinstance(wanted, Mapping):
            unknown = [op for op in wanted if str(op).startswith("$") and op not in OPERATORS]
            if unknown:
                raise BadRequest(f"unsupported filter operator: {unknown[0]}")
            check({k: v for k, v in wanted.items() if not str(k).startswith("$")})


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    return all(_compare(_field(value, field), wanted) for field, wanted in conditions.items())


def _field(value: Mapping[str, Any], name: str) -> Any:
    """A field, or a nested one by its dotted path ("user.level") when no field has the name."""
    if name in value or "." not in name:
        return value.get(name)
    found: Any = value
    for part in name.split("."):
        if not isinstance(found, Mapping):
            return None
        found = found.get(part)
    return found


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and matches(actual, wanted)
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    # True is not 1 here (JSON tells them apart).
    return bool(actual == wanted) and isinstance(actual, bool) == isinstance(wanted, bool)


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _compare(actual, operand)
    if op == "$ne":
        return not _compare(actual, operand)
    if isinstance(actual, bool) or isinstance(operand, bool):
        return False
    try:
        left, right = float(actual), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[
        op
    ]
