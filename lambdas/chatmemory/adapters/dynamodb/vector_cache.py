"""ports.VectorCache on DynamoDB: items of the sessions table under reserved keys
(schema.vector_cache_key), the vectors as float32 bytes.

A set is kept in `copies` items, and each process reads and writes one of them, drawn when it
starts: every cold start of the chat reads the cache, and with one item all of them (a deploy
starts hundreds at once) read one key, one partition's 3,000 reads a second, while a read it
cannot make costs that cold start an embedding of every phrasing and a rewrite. A process whose
copy is not written yet reads the first one (and writes its own from it); the process that
embeds a set no copy holds writes the first copy too; a read refused for throughput tries
another copy before it gives up."""

from __future__ import annotations

import random
import sys
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from chatmemory import schema
from chatmemory.adapters.dynamodb.client import Guarded
from chatmemory.errors import ShortTermMemoryUnavailable
from chatmemory.schema import SESSION_ID, VECTOR_DIMENSION, VECTOR_ROWS, VECTORS

# Copies of each set: a deploy's cold starts read 16 keys (16 partitions' throughput) rather
# than one; each copy is written once, by the first process that draws it.
COPIES = 16

# What the vectors of one item may take: DynamoDB's 400 KB less room for the key and the names.
# 50 phrasings of 1,024 dimensions take 204,800 bytes; beyond about 1,700 dimensions a set of
# 50 is not kept (it is embedded at each cold start instead).
MAX_VECTOR_BYTES = 350_000


def _little_endian(values: array[float]) -> array[float]:
    if sys.byteorder == "big":  # stored little-endian whatever the machine
        values.byteswap()
    return values


class DynamoVectorCache:
    """VectorCache: GetItem and PutItem of this process's copy of a set (one item of the
    sessions table); `draw` picks the copy (a random one by default)."""

    def __init__(
        self,
        client: Any,
        table: str,
        *,
        copies: int = COPIES,
        draw: Callable[[int], int] = random.randrange,
    ) -> None:
        self._client = Guarded(client)
        self._table = table
        self._copies = max(1, copies)
        self._copy = draw(self._copies)
        # The first copy was read and not there: this process's save writes it too, or every
        # cold start that draws another unwritten copy would embed the set again.
        self._first_absent = False

    def _key(self, key: str, copy: int) -> dict[str, Any]:
        """The item of one copy: the first keeps the set's own key (written before copies)."""
        name = key if copy == 0 else f"{key}#{copy}"
        return {SESSION_ID: {"S": schema.vector_cache_key(name)}}

    def load(self, key: str) -> list[list[float]] | None:
        try:
            found = self._read(key, self._copy)
        except ShortTermMemoryUnavailable:
            if self._copies == 1:
                raise
            # Refused for throughput (or briefly down): another copy, another partition.
            other = (self._copy + 1 + random.randrange(self._copies - 1)) % self._copies
            return self._read(key, other)
        if found is None and self._copy != 0:
            found = self._read(key, 0)  # this copy is not written yet: the first one
            if found is not None:
                self.save(key, found)
        self._first_absent = found is None
        return found

    def _read(self, key: str, copy: int) -> list[list[float]] | None:
        item = self._client.get_item(TableName=self._table, Key=self._key(key, copy)).get("Item")
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
        copies = [self._copy] + ([0] if self._first_absent and self._copy != 0 else [])
        for copy in copies:
            self._client.put_item(
                TableName=self._table,
                Item={
                    **self._key(key, copy),
                    VECTOR_ROWS: {"N": str(len(vectors))},
                    VECTOR_DIMENSION: {"N": str(len(vectors[0]))},
                    VECTORS: {"B": data},
                },
            )
        self._first_absent = False
