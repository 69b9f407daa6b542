"""ports.VectorCache on DynamoDB: one item of the sessions table per set of vectors, under a
reserved key (schema.vector_cache_key), the vectors as float32 bytes."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from typing import Any

from chatmemory import schema
from chatmemory.adapters.dynamodb.client import Guarded
from chatmemory.schema import SESSION_ID, VECTOR_DIMENSION, VECTOR_ROWS, VECTORS

# What the vectors of one item may take: DynamoDB's 400 KB less room for the key and the names.
# 50 phrasings of 1,024 dimensions take 204,800 bytes; beyond about 1,700 dimensions a set of
# 50 is not kept (it is embedded at each cold start instead).
MAX_VECTOR_BYTES = 350_000


def _little_endian(values: array[float]) -> array[float]:
    if sys.byteorder == "big":  # stored little-endian whatever the machine
        values.byteswap()
    return values


class DynamoVectorCache:
    """VectorCache: GetItem and PutItem of one item of the sessions table."""

    def __init__(self, client: Any, table: str) -> None:
        self._client = Guarded(client)
        self._table = table

    def _key(self, key: str) -> dict[str, Any]:
        return {SESSION_ID: {"S": schema.vector_cache_key(key)}}

    def load(self, key: str) -> list[list[float]] | None:
        item = self._client.get_item(TableName=self._table, Key=self._key(key)).get("Item")
        if not item or VECTORS not in item:
            return None
        rows, dimension = int(item[VECTOR_ROWS]["N"]), int(item[VECTOR_DIMENSION]["N"])
        data = item[VECTORS]["B"]
        values = array("f")
        if rows <= 0 or dimension <= 0 or len(data) != rows * dimension * values.itemsize:
            return None  # not what this code writes: embed again, and overwrite it
        values.frombytes(data)
        flat = _little_endian(values).tolist()
        return [flat[i * dimension : (i + 1) * dimension] for i in range(rows)]

    def save(self, key: str, vectors: Sequence[Sequence[float]]) -> None:
        if not vectors:
            return
        values = _little_endian(array("f", [x for vector in vectors for x in vector]))
        data = values.tobytes()
        if len(data) > MAX_VECTOR_BYTES:
            return
        self._client.put_item(
            TableName=self._table,
            Item={
                **self._key(key),
                VECTOR_ROWS: {"N": str(len(vectors))},
                VECTOR_DIMENSION: {"N": str(len(vectors[0]))},
                VECTORS: {"B": data},
            },
        )
