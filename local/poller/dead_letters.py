"""The on-failure destination: batches whose retries ran out, one JSON line each."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from local.lambda_context import LocalLambdaContext
from local.poller.records import sequence_number


class DeadLetterFile:
    """The on-failure destination: one JSON line per discarded batch (AWS's record of the
    batch, plus the records' identifiers and the error), appended and fsynced."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def write(self, entry: dict[str, Any]) -> None:
        """Append one entry and fsync it."""
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(json.dumps(entry, sort_keys=True) + "\n")
                out.flush()
                os.fsync(out.fileno())

    def entries(self) -> list[dict[str, Any]]:
        """Every entry written so far, oldest first."""
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]


def dead_letter_entry(
    *,
    mapping: str,
    shard_id: str,
    stream_arn: str,
    batch: Sequence[Mapping[str, Any]],
    attempts: int,
    error: str,
) -> dict[str, Any]:
    """The description of a discarded batch, as Lambda's on-failure destination receives it,
    with each record's identifiers and the error."""
    created = [r["dynamodb"].get("ApproximateCreationDateTime") for r in batch]
    return {
        "version": "1.0",
        "timestamp": datetime.now(UTC).isoformat(),
        "requestContext": {
            "functionArn": LocalLambdaContext(mapping).invoked_function_arn,
            "condition": "RetryAttemptsExhausted",
            "approximateInvokeCount": attempts,
        },
        "responseContext": {"functionError": error},
        "DDBStreamBatchInfo": {
            "shardId": shard_id,
            "startSequenceNumber": sequence_number(batch[0]),
            "endSequenceNumber": sequence_number(batch[-1]),
            "approximateArrivalOfFirstRecord": _iso(created[0]),
            "approximateArrivalOfLastRecord": _iso(created[-1]),
            "batchSize": len(batch),
            "streamArn": stream_arn,
        },
        "mapping": mapping,
        "error": error,
        "records": [
            {
                "eventID": r.get("eventID"),
                "eventName": r.get("eventName"),
                "sequenceNumber": sequence_number(r),
                "keys": r["dynamodb"].get("Keys"),
            }
            for r in batch
        ],
    }


def _iso(epoch: Any) -> str | None:
    if isinstance(epoch, int | float):
        return datetime.fromtimestamp(epoch, UTC).isoformat()
    return None
