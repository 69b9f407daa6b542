"""DynamoDB Local's database on disk: local mode keeps the user's memory across restarts, in
SQLite's write-ahead-log mode (local/dynamodb_local.write_ahead_log: a write commits with one
sync instead of a journal file created, synced and deleted), including what was written just
before the process was killed, and a database made before keeps its tables."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import boto3
import pytest

from local.dynamodb_local import SHARED_DB_FILE, DynamoDBLocal, find_jar, find_java, free_port

pytestmark = pytest.mark.integration

TABLE = "kept"


@pytest.fixture(autouse=True)
def _needs_dynamodb_local() -> None:
    from local.dynamodb_local import LocalModeError

    try:
        find_java()
        find_jar()
    except LocalModeError as error:
        pytest.skip(f"this test needs DynamoDB Local: {error}")


def _client(server: DynamoDBLocal) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=server.endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def _journal_mode(db_file: Path) -> str:
    with contextlib.closing(sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)) as db:
        return str(db.execute("PRAGMA journal_mode").fetchone()[0])


def _put(client: Any, key: str) -> None:
    client.put_item(TableName=TABLE, Item={"pk": {"S": key}})


def _keys(client: Any) -> set[str]:
    items = client.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    return {item["pk"]["S"] for item in items}


def test_an_older_database_is_kept_in_wal_mode_with_what_a_killed_process_wrote(
    tmp_path: Path,
) -> None:
    db_path = tmp_path / "dynamodb"
    db_file = db_path / SHARED_DB_FILE
    server = DynamoDBLocal(db_path, free_port())
    try:
        # A database as local mode made it before, in SQLite's rollback journal.
        client = _client(server.start())
        client.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        _put(client, "before")
        server.stop()
        with contextlib.closing(sqlite3.connect(db_file)) as db:
            db.execute("PRAGMA journal_mode=DELETE")
        assert _journal_mode(db_file) == "delete"

        client = _client(server.start())
        assert _journal_mode(db_file) == "wal"
        assert _keys(client) == {"before"}

        # Killed without a chance to close its database: what it answered is kept.
        _put(client, "just before the kill")
        assert server.process is not None
        server.process.kill()
        server.process.wait(10)
        server.stop()
        client = _client(server.start())
        assert _keys(client) == {"before", "just before the kill"}
        assert _journal_mode(db_file) == "wal"
    finally:
        server.stop()
