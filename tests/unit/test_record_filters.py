"""Filters of POST /memories/records/search answer 400 or match, never 500: through the chat
Lambda on moto, the cases found in use (issue 46), then a property over arbitrary JSON filters
and arbitrary record values (deep JSON, huge numbers, text that is not JSON).

`make test` runs a bounded number of examples; set CHATMEMORY_FILTER_EXAMPLES to run more."""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatmemory.schema import MAX_RECORD_FILTER_DEPTH, MAX_RECORD_FILTER_VALUES
from tests.records_helpers import World, chat_world

EXAMPLES = int(os.environ.get("CHATMEMORY_FILTER_EXAMPLES", "40"))


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context)


_KEYS = itertools.count()


def _store(world: World, namespace: str, *texts: str) -> None:
    for text in texts:
        body = {"text": text, "record_id": f"r{next(_KEYS)}", "namespace": [namespace]}
        status, data = world.api.call("POST", "/memories/records", body)
        assert status == 201, data


def _search(world: World, namespace: str, conditions: Any) -> tuple[int, Any]:
    body = {"namespace_prefix": [namespace], "filter": conditions, "limit": 100}
    return world.api.call("POST", "/memories/records/search", body)


def _found(world: World, namespace: str, conditions: Any) -> list[str]:
    status, data = _search(world, namespace, conditions)
    assert status == 200, data
    return sorted(r["text"] for r in data["records"])


DEEP = '{"a":' * 3000 + "1" + "}" * 3000
HUGE = '{"age": ' + "9" * 400 + "}"
HUGER = '{"age": ' + "9" * 5000 + "}"  # more digits than Python parses as an int


@pytest.mark.parametrize(
    "conditions",
    [
        {"age": {"$gt": 1, "x": 2}},  # an operator object with a field in it
        {"tags": [{"$gt": 1, "x": 2}]},  # the same inside a list
        {"tags": [{"$in": [1]}]},  # an unknown operator inside a list
        {"age": {"$eq": {"$gt": 1}}},  # an operator as an operand
        {"age": {"$gt": {"$lt": 5}}},
        {"age": {"$eq": [{"$regex": "x"}]}},
        {"$or": [{"age": 1}, {"age": 2}]},  # an unknown top-level operator
        {"$and": [{"age": 1}]},
        {"a": json.loads('{"a":' * MAX_RECORD_FILTER_DEPTH + "1" + "}" * MAX_RECORD_FILTER_DEPTH)},
        {f"f{i}": i for i in range(MAX_RECORD_FILTER_VALUES + 1)},
    ],
)
def test_a_filter_no_search_can_apply_answers_400(world: World, conditions: Any) -> None:
    """Failed before (issue 46): the first six answered 500, and $or / $and were taken for
    field names and matched nothing; the last two (past the documented bounds) were read."""
    _store(world, "q", '{"age": 3, "tags": [2]}')
    status, data = _search(world, "q", conditions)
    assert status == 400, data
    assert data["error"]["code"] == "bad_request"


def test_records_no_filter_can_compare_answer_the_others(world: World) -> None:
    """Failed before (issue 46): a record whose value holds a number too large for a float
    (`$gt` converted it), or whose text is JSON nested 3,000 deep (its parse raised
    RecursionError), made every filtered search of its caller answer 500."""
    _store(world, "v", DEEP, HUGE, HUGER, '{"age": 30}', '{"age": "31"}', "age: 32")
    assert _found(world, "v", {"age": {"$gt": 10}}) == sorted(
        [HUGE, '{"age": 30}', '{"age": "31"}']
    )
    assert _found(world, "v", {"age": {"$lt": 31}}) == ['{"age": 30}']
    assert _found(world, "v", {"age": {"$gte": 1e300}}) == [HUGE]
    assert _found(world, "v", {"a.a.a": {"$eq": {"a": {"a": 1}}}}) == []  # DEEP is text
    assert _found(world, "v", {"text": DEEP}) == [DEEP]
    assert _found(world, "v", {"text": HUGER}) == [HUGER]
    # A missing field is not "x" (LangGraph's $ne): every record but the one that is.
    assert DEEP not in _found(world, "v", {"text": {"$ne": DEEP}})
    assert len(_found(world, "v", {"text": {"$ne": DEEP}})) == 5


def test_operators_inside_lists_and_at_the_filters_bounds_match(world: World) -> None:
    _store(world, "w", '{"tags": [1, 5], "n": {"m": 2}}', '{"tags": [1, 9]}')
    assert _found(world, "w", {"tags": [1, {"$lt": 6}]}) == ['{"tags": [1, 5], "n": {"m": 2}}']
    deepest = json.loads(
        '{"n":' * (MAX_RECORD_FILTER_DEPTH - 1) + "1" + "}" * (MAX_RECORD_FILTER_DEPTH - 1)
    )
    assert _found(world, "w", {"x": deepest}) == []
    widest = {f"f{i}": i for i in range(MAX_RECORD_FILTER_VALUES // 2)}
    assert _found(world, "w", widest) == []


# --- the property: arbitrary filters over arbitrary values --------------------------------------

_FIELDS = st.sampled_from(["age", "tags", "n", "text", "a", "a.a", "user.level", "x"])
_OPS = st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$or", "$in", "$", "$and"])
# What a request body may carry (handlers/json_body.strict_json refuses the rest: NaN,
# infinities, integers of over 64 digits).
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**63), max_value=10**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_FILTER_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_FIELDS | _OPS, inner, max_size=3),
    max_leaves=12,
)
_FILTERS = st.dictionaries(_FIELDS | _OPS, _FILTER_VALUES, max_size=4) | st.builds(
    lambda depth, leaf: {"a": json.loads('{"a":' * depth + json.dumps(leaf) + "}" * depth)},
    st.integers(min_value=0, max_value=40),
    _SCALARS,
)

_NUMBERS = (
    st.integers()
    | st.integers(min_value=300, max_value=4000).map(lambda digits: int("9" * digits))
    | st.floats()
)
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | _NUMBERS | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_FIELDS, inner, max_size=3),
    max_leaves=10,
)


def _deep(depth: int, kind: str) -> str:
    opening, closing = ('{"a":', "}") if kind == "object" else ("[", "]")
    return '{"a":' + opening * depth + "1" + closing * depth + "}"


def _huge(digits: int) -> str:
    return '{"age": ' + "9" * digits + "}"


_RECORD_TEXTS = (
    st.dictionaries(_FIELDS, _JSON_VALUES, max_size=4).map(json.dumps)
    | st.builds(
        _deep, st.integers(min_value=1, max_value=3500), st.sampled_from(["object", "list"])
    )
    | st.integers(min_value=300, max_value=6000).map(_huge)
    | st.text(min_size=1, max_size=40).filter(str.strip)
    | st.sampled_from(['{"age": NaN}', '{"age": Infinity}', '{"age": -1e999}', "{", "{}"])
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(texts=st.lists(_RECORD_TEXTS, min_size=1, max_size=3), conditions=_FILTERS)
def test_a_filter_answers_200_or_400_never_500(
    world: World, texts: list[str], conditions: dict[str, Any]
) -> None:
    namespace = f"p{next(_KEYS)}"
    _store(world, namespace, *texts)
    status, data = _search(world, namespace, conditions)
    assert status in (200, 400), (status, data)
    if status == 400:
        assert data["error"]["code"] == "bad_request"
    else:
        assert len(data["records"]) <= len(texts)
