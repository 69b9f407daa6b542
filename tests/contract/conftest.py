"""The contract suites run each adapter three ways: the in-memory fake, DynamoDB on moto, and
DynamoDB Local (AWS's own emulator: real conditional writes, transactions and key rules, which
moto only imitates). Each DynamoDB Local test gets tables of its own."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest

from chatmemory import schema, wiring

_tables = itertools.count(1)

# The ways a contract is run (fixture params): the fake, moto, DynamoDB Local.
BACKENDS = ["in-memory", "dynamodb", "dynamodb-local"]


def dynamodb_local_tables(
    request: pytest.FixtureRequest, *tables: schema.TableSpec
) -> tuple[object, Mapping[str, str]]:
    """A client of the session's DynamoDB Local and fresh tables of these specs (logical ->
    physical name)."""
    server = request.getfixturevalue("dynamodb_local")
    client = wiring.aws_client("dynamodb", server.endpoint)
    prefix = f"contract{next(_tables)}"
    names = {spec.logical_name: f"{prefix}-{spec.logical_name}" for spec in tables}
    for spec in tables:
        client.create_table(**spec.create_table_kwargs(names[spec.logical_name]))
    for name in names.values():
        client.get_waiter("table_exists").wait(
            TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 300}
        )
    return client, names
