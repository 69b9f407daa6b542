"""DynamoDB Streams records: the filter-pattern matcher shared by handlers and the local poller."""

from __future__ import annotations

from typing import Any


def matches(pattern: dict[str, Any], record: dict[str, Any]) -> bool:
    """Evaluate a Lambda event filter pattern (the subset schema.py uses: nested objects whose
    leaves are lists of allowed exact values) against a stream record."""
    for key, expected in pattern.items():
        if key not in record:
            return False
        actual = record[key]
        if isinstance(expected, dict):
            if not isinstance(actual, dict) or not matches(expected, actual):
                return False
        elif isinstance(expected, list):
            if actual not in expected:
                return False
        elif actual != expected:
            return False
    return True


def key_of(record: dict[str, Any], name: str) -> str:
    """A string key attribute of the record's item (from Keys, in DynamoDB JSON)."""
    return record["dynamodb"]["Keys"][name]["S"]
