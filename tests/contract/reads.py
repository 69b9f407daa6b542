"""What a read consumes, counted the same way on every backend of the contract suites.

`MeteredClient` wraps a DynamoDB client (moto's or DynamoDB Local's): each read request
(GetItem, BatchGetItem, Query, Scan) is sent as it is, then the items DynamoDB evaluated for it
are counted with their sizes, as DynamoDB bills them: a projection or a filter does not make an
item read smaller, so what a projected or filtered request evaluated is read again whole (by a
client the count leaves out) and measured. The in-memory fakes count what they hand out into the
same `ReadMeter`, item by item as the DynamoDB adapters' items are laid out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

_READS = frozenset({"get_item", "batch_get_item", "query", "scan"})
_PLACEHOLDER = re.compile(r"[#:][A-Za-z0-9_]+")


@dataclass
class ReadMeter:
    """Items and bytes read, per table (the table's name as requests give it), and the keys of
    the items read (each a tuple of its key attributes' values)."""

    reads: dict[str, list[int]] = field(default_factory=dict)
    keys: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)

    def record(
        self, table: str, items: int, size: int, keys: Iterable[tuple[str, ...]] = ()
    ) -> None:
        counts = self.reads.setdefault(table, [0, 0])
        counts[0] += items
        counts[1] += size
        self.keys.setdefault(table, []).extend(keys)

    def items(self, table: str | None = None) -> int:
        return sum(c[0] for t, c in self.reads.items() if table is None or t == table)

    def bytes(self, table: str | None = None) -> int:
        return sum(c[1] for t, c in self.reads.items() if table is None or t == table)

    def read_keys(self, table: str) -> set[tuple[str, ...]]:
        return set(self.keys.get(table, []))

    def reset(self) -> None:
        self.reads.clear()
        self.keys.clear()


def item_size(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it: each attribute's name and value in bytes."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def value_size(value: dict[str, Any]) -> int:
    ((kind, data),) = value.items()
    if kind == "S":
        return len(data.encode())
    if kind == "B":
        return len(data)
    if kind == "N":
        return (len(data.lstrip("-").replace(".", "")) + 1) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in data.items())
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in data)
    if kind == "SS":
        return sum(len(x.encode()) for x in data)
    if kind == "BS":
        return sum(len(x) for x in data)
    if kind == "NS":
        return sum((len(x) + 1) // 2 + 1 for x in data)
    raise ValueError(f"unknown attribute type {kind}")


class MeteredClient:
    """A DynamoDB client whose reads are counted in `meter` (see the module's docstring)."""

    def __init__(self, client: Any, meter: ReadMeter) -> None:
        self._client = client
        self.meter = meter
        self._keys: dict[str, list[str]] = {}

    def __getattr__(self, name: str) -> Any:
        if name in _READS:
            return lambda **kwargs: self._read(name, kwargs)
        if name == "get_paginator":
            return lambda operation: _Paginator(self, operation)
        return getattr(self._client, name)

    def _read(self, operation: str, request: dict[str, Any]) -> Any:
        answer = getattr(self._client, operation)(**request)
        if operation == "get_item":
            self._count_items(request["TableName"], [answer.get("Item")], request)
        elif operation == "batch_get_item":
            for table, items in answer.get("Responses", {}).items():
                self._count_items(table, items, request["RequestItems"][table])
        else:
            self._count_query(operation, request, answer)
        return answer

    def _count_items(
        self, table: str, items: list[dict[str, Any] | None], request: dict[str, Any]
    ) -> None:
        found = [item for item in items if item]
        keys = self._key_names(table)
        if "ProjectionExpression" in request:
            found = [
                self._client.get_item(
                    TableName=table, Key={k: item[k] for k in keys}, ConsistentRead=True
                ).get("Item", {})
                for item in found
            ]
        self._record(table, found)

    def _record(self, table: str, items: list[dict[str, Any]]) -> None:
        names = self._key_names(table)
        self.meter.record(
            table,
            len(items),
            sum(item_size(item) for item in items),
            [tuple(next(iter(item[k].values())) for k in names) for item in items],
        )

    def _count_query(self, operation: str, request: dict[str, Any], answer: dict[str, Any]) -> None:
        table = request["TableName"]
        evaluated = answer.get("ScannedCount", len(answer.get("Items", [])))
        items = answer.get("Items", [])
        if evaluated and ("FilterExpression" in request or "ProjectionExpression" in request):
            # The same request without its filter and projection, as far as it went.
            again = {
                k: v
                for k, v in request.items()
                if k not in ("FilterExpression", "ProjectionExpression", "Select", "Limit")
            }
            used = " ".join(str(again.get(k, "")) for k in ("KeyConditionExpression",))
            for part in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
                kept = {k: v for k, v in again.get(part, {}).items() if k in _placeholders(used)}
                if kept:
                    again[part] = kept
                else:
                    again.pop(part, None)
            again["Limit"] = evaluated
            items = getattr(self._client, operation)(**again).get("Items", [])
        self._record(table, items)

    def _key_names(self, table: str) -> list[str]:
        if table not in self._keys:
            described = self._client.describe_table(TableName=table)["Table"]
            self._keys[table] = [k["AttributeName"] for k in described["KeySchema"]]
        return self._keys[table]


def _placeholders(expression: str) -> set[str]:
    return set(_PLACEHOLDER.findall(expression))


class _Paginator:
    """botocore's paginator for Query and Scan, through the metered client."""

    def __init__(self, client: MeteredClient, operation: str) -> None:
        self._client = client
        self._operation = operation

    def paginate(self, **request: Any) -> Iterator[dict[str, Any]]:
        while True:
            answer = self._client._read(self._operation, dict(request))
            yield answer
            if "LastEvaluatedKey" not in answer:
                return
            request["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
