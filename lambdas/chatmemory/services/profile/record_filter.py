"""Filters on records' values (POST /memories/records/search): LangGraph's store filters,
applied on the server so a search's page holds only what matches.

A record's value is the JSON object its text holds (an agent's store keeps its values so), or
`{"text": text}` for any other text: one that is not a JSON object, or is one Python's parser
refuses (nested deeper than about 1,000 levels, an integer of over 4,300 digits). A condition
is a field equal to a value, or operators `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte` (numbers
compare as numbers, exactly whatever their size; a numeric string is its number; a missing or
non-numeric field is outside any range); nested objects match field by field, lists element by
element, and a dotted name ("user.level") reaches into nested objects.

`check` refuses (400) before anything is read what LangGraph's stores fail on or would take for
a field: an operator none of them knows (a top-level `$or` among them), an object mixing
operators and fields, an operator inside an operand (an operand is a value, not a condition),
and a filter nested deeper than schema.MAX_RECORD_FILTER_DEPTH or holding more than
schema.MAX_RECORD_FILTER_VALUES keys and values. What passes it is matched against any
record's value without an error."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from chatmemory.errors import BadRequest
from chatmemory.schema import MAX_RECORD_FILTER_DEPTH, MAX_RECORD_FILTER_VALUES

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def value_of(text: str) -> dict[str, Any]:
    """The value a record's text holds."""
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, a huge integer, nested too deep
            value = None
        if isinstance(value, dict):
            return value
    return {"text": text}


def check(conditions: Mapping[str, Any]) -> None:
    """Refuse (400) a filter no search can apply, before anything is read (see the module)."""
    budget = [MAX_RECORD_FILTER_VALUES]
    for name, wanted in conditions.items():
        if str(name).startswith("$"):
            raise BadRequest(
                f"unsupported filter operator: {name} (a filter's keys name fields; operators "
                f"go on a field: {{field: {{{OPERATORS[0]}: value}}}})"
            )
        _count(budget, 1)
        _check_condition(wanted, 2, budget)


def _check_condition(wanted: Any, depth: int, budget: list[int]) -> None:
    _check_node(wanted, depth, budget, _check_fields_or_operators)


def _check_operand(operand: Any, depth: int, budget: list[int]) -> None:
    """An operator's operand: a value (no operator inside), within the filter's bounds."""
    _check_node(operand, depth, budget, _check_value_object)


def _check_node(
    node: Any,
    depth: int,
    budget: list[int],
    check_mapping: Callable[[Mapping[Any, Any], int, list[int]], None],
) -> None:
    """A condition's or an operand's node: an object (as `check_mapping` checks it), a list of
    nodes of the same kind, or one value."""
    if isinstance(node, Mapping):
        _deeper(depth)
        check_mapping(node, depth, budget)
    elif isinstance(node, list | tuple):
        _deeper(depth)
        for item in node:
            _check_node(item, depth + 1, budget, check_mapping)
    else:
        _count(budget, 1)


def _check_fields_or_operators(wanted: Mapping[Any, Any], depth: int, budget: list[int]) -> None:
    operators = [k for k in wanted if str(k).startswith("$")]
    if not operators:
        for _, nested in wanted.items():
            _count(budget, 1)
            _check_condition(nested, depth + 1, budget)
        return
    unknown = [op for op in operators if op not in OPERATORS]
    if unknown:
        raise BadRequest(f"unsupported filter operator: {unknown[0]}")
    if len(operators) != len(wanted):
        field = next(k for k in wanted if not str(k).startswith("$"))
        raise BadRequest(
            f"a filter object holds operators or fields, not both: {operators[0]} and {field}"
        )
    for operand in wanted.values():
        _count(budget, 1)
        _check_operand(operand, depth + 1, budget)


def _check_value_object(operand: Mapping[Any, Any], depth: int, budget: list[int]) -> None:
    for key, nested in operand.items():
        if str(key).startswith("$"):
            raise BadRequest(f"an operator's operand is a value, not a condition: {key}")
        _count(budget, 1)
        _check_operand(nested, depth + 1, budget)


def _deeper(depth: int) -> None:
    if depth > MAX_RECORD_FILTER_DEPTH:
        raise BadRequest(f"a filter is nested at most {MAX_RECORD_FILTER_DEPTH} levels deep")


def _count(budget: list[int], n: int) -> None:
    budget[0] -= n
    if budget[0] < 0:
        raise BadRequest(f"a filter holds at most {MAX_RECORD_FILTER_VALUES} keys and values")


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    """Whether a record's value meets a filter `check` passed."""
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
    return _same_scalar(actual, wanted)


def _same_scalar(actual: Any, wanted: Any) -> bool:
    """A value equal to a scalar of the filter: True is not 1 here (JSON tells them apart), and
    a container is never equal to a scalar (nothing of its depth is compared)."""
    if isinstance(actual, Mapping | list | tuple):
        return False
    return bool(actual == wanted) and isinstance(actual, bool) == isinstance(wanted, bool)


def _number(value: Any) -> int | float | None:
    """A value as a number for a range operator: numbers as they are (Python compares an int
    and a float exactly, whatever their size: no float() that overflows), a numeric string as
    its float; None for anything else (a bool, a container, other text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _compare(actual, operand)
    if op == "$ne":
        return not _compare(actual, operand)
    left, right = _number(actual), _number(operand)
    if left is None or right is None:
        return False
    if op == "$gt":
        return left > right
    if op == "$gte":
        return left >= right
    if op == "$lt":
        return left < right
    return left <= right
