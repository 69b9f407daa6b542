"""GetRecords records in the shape Lambda delivers them to a DynamoDB stream handler."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime
from typing import Any


def lambda_record(raw: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as Lambda delivers it: creation time in epoch seconds, binary values
    base64-encoded, and the stream ARN."""
    dynamodb = dict(raw.get("dynamodb", {}))
    created = dynamodb.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        dynamodb["ApproximateCreationDateTime"] = created.timestamp()
    record: dict[str, Any] = {
        "eventID": raw.get("eventID"),
        "eventName": raw.get("eventName"),
        "eventVersion": raw.get("eventVersion", "1.1"),
        "eventSource": raw.get("eventSource", "aws:dynamodb"),
        "awsRegion": raw.get("awsRegion"),
        "dynamodb": _jsonable(dynamodb),
        "eventSourceARN": stream_arn,
    }
    if "userIdentity" in raw:
        record["userIdentity"] = _jsonable(raw["userIdentity"])
    return record


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    return value


def sequence_number(record: Mapping[str, Any]) -> str:
    """A record's sequence number (a decimal string)."""
    return str(record["dynamodb"]["SequenceNumber"])


def sequence_order(sequence: str) -> int:
    """A sort key for sequence numbers: they are ordered as numbers, not as strings."""
    return int(sequence)
