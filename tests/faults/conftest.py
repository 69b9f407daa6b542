"""Fixtures of the fault tier: short-term memory on fresh DynamoDB Local tables (real
parallelism, real conditional writes and transactions), read back item by item."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from chatmemory import schema, wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory, deserialize
from local.dynamodb_local import DynamoDBLocal, ensure_tables

_tables = itertools.count(1)


@dataclass
class Store:
    """A DynamoShortTermMemory on its own tables, and what is stored in them."""

    client: Any
    memory: DynamoShortTermMemory
    sessions_table: str
    conversations_table: str

    def turns(self, session_id: str) -> list[dict[str, Any]]:
        """Every stored turn of the session (plain values), oldest first."""
        items: list[dict[str, Any]] = []
        for page in self.client.get_paginator("query").paginate(
            TableName=self.conversations_table,
            KeyConditionExpression="session_id = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
            ConsistentRead=True,
        ):
            items += [deserialize(i) for i in page["Items"]]
        return items

    def session(self, session_id: str) -> dict[str, Any]:
        item = self.client.get_item(
            TableName=self.sessions_table,
            Key={"session_id": {"S": session_id}},
            ConsistentRead=True,
        )["Item"]
        return deserialize(item)


@pytest.fixture
def store(dynamodb_local: DynamoDBLocal) -> Store:
    """Fresh tables on DynamoDB Local, through a client built by wiring.aws_client (standard
    retries, as in Lambda)."""
    client = wiring.aws_client("dynamodb", dynamodb_local.endpoint)
    prefix = f"ft{next(_tables)}"
    names = {
        schema.SESSIONS.logical_name: f"{prefix}-sessions",
        schema.CONVERSATIONS.logical_name: f"{prefix}-conversations",
    }
    ensure_tables(client, names)
    sessions, conversations = names.values()
    return Store(
        client, DynamoShortTermMemory(client, sessions, conversations), sessions, conversations
    )


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """botocore's standard retries without their waits (up to 1 s, 2 s... on throttling):
    the retries still happen; the delays they would have waited are recorded."""
    from botocore.retries import standard

    waited: list[float] = []
    real = standard.ExponentialBackoff.delay_amount

    def record(self: Any, context: Any) -> float:
        waited.append(real(self, context))
        return 0.0

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", record)
    return waited
