"""What a session, a chat turn and a consolidation send, as the AWS contract scenario records it:
the measured input of the capacity model (scripts/capacity).

The scenario runs a measured session at its end (a user with a profile and memories by then):
its creation, ten chat messages, what the streams run for them, and its end and consolidation.
Every request of each part is counted by the function that sent it, its service, operation and
resource (a table by its logical name, with the index a query reads), with the capacity
DynamoDB says it consumed (DynamoDB Local answers ConsumedCapacity; the recorder asks for it).
The counts are kept in scripts/capacity/measured.json; the contract check holds that file to what
it measures (CHATMEMORY_RECORD_CAPACITY=1 writes it instead: `make capacity ARGS=--measure`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chatmemory import schema
from tests.aws.recorder import Sent

MEASURED = Path(__file__).resolve().parents[2] / "scripts" / "capacity" / "measured.json"
RECORD = "CHATMEMORY_RECORD_CAPACITY"
TURNS = 10
# A realistic message (bench.turns' 60 words), different each turn.
MESSAGE = (
    "Turn {n}: we talked about the garden again, the tomatoes on the south wall, the rain "
    "barrel that leaks, the neighbour's cat that sleeps in the greenhouse, the seeds I ordered "
    "for spring, and whether the apple tree needs pruning before the frost comes this year."
)


def tally(
    sent: Sequence[Sent], *, functions: dict[str, str], tables: dict[str, str]
) -> list[dict[str, Any]]:
    """Requests grouped by (function, service, operation, resource): their count, the items
    they carry (vectors written, texts embedded, keys read), their bodies' bytes, and for
    DynamoDB the capacity
    units they consumed, a table's and each global secondary index's on rows of their own
    ("sessions/open-sessions"). `functions` maps a logical id to its handler's module
    ("chat_api"), `tables` a physical table name to its logical one."""
    rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}

    def add(request: Sent, function: str, resource: str, units: float, items: int) -> None:
        key = (function, request.service, request.operation, resource)
        row = rows.setdefault(
            key,
            {
                "function": function,
                "service": request.service,
                "operation": request.operation,
                "resource": resource,
                "count": 0,
                "items": 0,
                "bytes": 0,
                "units": 0.0,
            },
        )
        row["count"] += 1
        row["items"] += items
        row["bytes"] += request.payload_bytes
        row["units"] += units
        if request.service == "opensearch" and request.operation.endswith("/_bulk"):
            row["stored_bytes"] = row.get("stored_bytes", 0) + _stored_bytes(request)

    for request in sent:
        function = functions.get(request.function, request.function)
        for resource in _resources(request, tables):
            items = _items(request, resource, tables)
            add(request, function, resource, _units(request, resource, tables), items)
        for consumed in request.consumed:
            table = tables.get(consumed.get("TableName", ""), consumed.get("TableName", ""))
            for index, used in (consumed.get("GlobalSecondaryIndexes") or {}).items():
                units = float(used.get("CapacityUnits", 0.0))
                if not request.params.get("IndexName"):  # an index's writes, or a query's
                    add(request, function, f"{table}/{index}", units, 0)
    for row in rows.values():
        row["units"] = round(row["units"], 1)
    return [rows[key] for key in sorted(rows)]


def _items(request: Sent, resource: str, tables: dict[str, str]) -> int:
    """What one request carries: vectors written, texts embedded, keys asked for (of the table
    `resource` names)."""
    params = request.params
    if request.service == "s3vectors" and request.operation == "PutVectors":
        return len(params.get("vectors", []))
    if request.service == "opensearch" and request.operation.endswith("/_bulk"):
        return sum(1 for line in str(params.get("body", "")).splitlines() if line.strip()) // 2
    if request.service == "bedrock-runtime" and request.operation == "InvokeModel":
        return 1  # Titan embeds one text a request
    if request.service == "sagemaker-runtime":
        body = json.loads(params.get("Body") or "{}")
        texts = body.get("text_inputs") or body.get("inputs") or []
        return len(texts) if isinstance(texts, list) else 1
    if request.operation == "BatchGetItem":
        return sum(
            len(spec.get("Keys", []))
            for name, spec in params["RequestItems"].items()
            if tables.get(name, name) == resource
        )
    return 1


def _stored_bytes(request: Sent) -> int:
    """What a domain keeps of a bulk request's documents in their _source: each document as
    sent without the fields the mapping excludes (schema.SOURCE_EXCLUDES: the vector)."""
    lines = [line for line in str(request.params.get("body", "")).splitlines() if line.strip()]
    stored = 0
    for line in lines[1::2]:
        source = json.loads(line)
        for name in schema.SOURCE_EXCLUDES:
            source.pop(name, None)
        stored += len(json.dumps(source, separators=(",", ":")).encode())
    return stored


def _resources(request: Sent, tables: dict[str, str]) -> list[str]:
    """What a request touches, by logical name: its tables (each once), the index a query
    reads, the long-term index or model it calls."""
    params = request.params
    if request.service == "dynamodb":
        names = params.get("RequestItems") or {}
        if "TransactItems" in params:
            names = {
                spec["TableName"]: None
                for item in params["TransactItems"]
                for spec in item.values()
            }
        found = list(names) or [params.get("TableName", "")]
        logical = [tables.get(name, name) for name in dict.fromkeys(found)]
        if params.get("IndexName"):
            logical = [f"{logical[0]}/{params['IndexName']}"]
        return logical
    if request.service == "s3vectors":
        name = str(params.get("indexName", ""))
        return ["owner's index" if name.startswith("m-") else name]
    if request.service == "opensearch":
        return [request.operation.split(" ", 1)[1].split("/")[1]]
    if request.service in ("bedrock-runtime",):
        return [str(params.get("modelId", ""))]
    if request.service == "sagemaker-runtime":
        return [str(params.get("EndpointName", ""))]
    return [""]


def _units(request: Sent, resource: str, tables: dict[str, str]) -> float:
    """The capacity units a DynamoDB request consumed on its table `resource` (the table's own,
    without its indexes'), or on the index a query read ("table/index")."""
    table, _, index = resource.partition("/")
    total = 0.0
    for consumed in request.consumed:
        if tables.get(consumed.get("TableName", "")) != table:
            continue
        if index:
            used = (consumed.get("GlobalSecondaryIndexes") or {}).get(index) or {}
        else:
            used = consumed.get("Table") or {"CapacityUnits": consumed.get("CapacityUnits", 0)}
        total += float(used.get("CapacityUnits", 0.0))
    return total


def query_data(vectors: Any, owner_index: str) -> dict[str, int]:
    """What S3 Vectors bills a query for (the data of the index it searches: each vector's data,
    key and filterable metadata), for the owner's own index and for one index of every user's
    memories as it was before (every memory index of the fake, `vectors` a FakeS3Vectors)."""

    def size(index: Any) -> int:
        filterable = set(
            index.spec.get("metadataConfiguration", {}).get("nonFilterableMetadataKeys", [])
        )
        return sum(
            4 * len(data)
            + len(key.encode())
            + sum(len(k) + len(json.dumps(v)) for k, v in meta.items() if k not in filterable)
            for key, (data, meta) in index.vectors.items()
        )

    own = [i for (_, name), i in vectors.user_indexes().items() if name == owner_index]
    every = vectors.memory_indexes()
    return {
        "own_index_vectors": sum(len(i.vectors) for i in own),
        "own_index_bytes": sum(size(i) for i in own),
        "all_users_vectors": sum(len(i.vectors) for i in every),
        "all_users_bytes": sum(size(i) for i in every),
    }


def check_or_record(profile: str, measured: dict[str, Any]) -> dict[str, Any] | None:
    """With CHATMEMORY_RECORD_CAPACITY set, write `measured` as `profile`'s part of the file and
    return None; else the file's part, for the caller to compare."""
    kept = json.loads(MEASURED.read_text()) if MEASURED.exists() else {}
    if os.environ.get(RECORD):
        kept[profile] = measured
        MEASURED.parent.mkdir(parents=True, exist_ok=True)
        MEASURED.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
        return None
    part = kept.get(profile)
    return part if isinstance(part, dict) else {}
