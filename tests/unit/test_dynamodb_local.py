"""DynamoDB Local process management: an orphan of a killed `make run` is recognized."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from local.dynamodb_local import DynamoDBLocal, free_port


def _lookalike(db_path: Path) -> subprocess.Popen[bytes]:
    """A process whose command line reads like DynamoDB Local serving db_path."""
    code = "import time; time.sleep(60)"
    return subprocess.Popen([sys.executable, "-c", code, "DynamoDBLocal.jar", str(db_path)])


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_an_orphan_of_a_killed_run_is_stopped_but_a_live_runs_server_is_not(
    tmp_path: Path,
) -> None:
    db, pid_file = tmp_path / "dynamodb", tmp_path / "dynamodb.pid"
    server = DynamoDBLocal(db, free_port(), pid_path=pid_file)
    owned = _lookalike(db)
    orphan = _lookalike(db)
    try:
        pid_file.write_text(f"{owned.pid} {os.getpid()}")  # its owner still runs
        server._stop_orphan()
        assert owned.poll() is None and pid_file.exists()

        pid_file.write_text(f"{orphan.pid} {_dead_pid()}")  # its owner was killed
        server._stop_orphan()
        assert orphan.wait(10) is not None and not pid_file.exists()
    finally:
        for process in (owned, orphan):
            process.kill()
            process.wait()


def test_a_table_of_an_older_local_state_gets_the_indexes_added_since(dynamodb_local: Any) -> None:
    """Local mode keeps its tables across runs: a records table made before its indexes
    (profile-records, record-keys) existed gets them, and the namespaces of its records are
    read from it."""
    from dataclasses import replace

    from chatmemory import schema, wiring
    from local.dynamodb_local import ensure_tables

    client = wiring.aws_client("dynamodb", dynamodb_local.endpoint)
    run = uuid.uuid4().hex[:8]  # the server may be shared with other tests of the run
    names = {spec.logical_name: f"older-{run}-{spec.logical_name}" for spec in schema.TABLES}
    older = replace(schema.RECORDS, indexes=())
    client.create_table(**older.create_table_kwargs(names["records"]))

    created = ensure_tables(client, names)
    assert names["records"] not in created and len(created) == len(schema.TABLES) - 1
    table = client.describe_table(TableName=names["records"])["Table"]
    assert sorted(i["IndexName"] for i in table["GlobalSecondaryIndexes"]) == sorted(
        index.name for index in schema.RECORDS.indexes
    )
    ensure_tables(client, names)  # again: nothing to add


def test_indexes_added_to_an_older_table_are_created_one_after_the_other() -> None:
    """Failed before on a busy machine: DynamoDB (Local too) builds one index of a table at a
    time, and the second index was asked for while the first was still CREATING (refused with
    LimitExceededException). Each is now waited for, as a table being created is."""
    from chatmemory import schema
    from local import dynamodb_local

    class Building:
        """A table whose new index stays CREATING for two reads of the table."""

        def __init__(self) -> None:
            self.indexes: dict[str, list[str]] = {}

        def describe_table(self, TableName: str) -> dict[str, Any]:
            indexes = []
            for name, states in self.indexes.items():
                indexes.append({"IndexName": name, "IndexStatus": states[0]})
                if len(states) > 1:
                    states.pop(0)
            return {"Table": {"GlobalSecondaryIndexes": indexes}}

        def update_table(self, TableName: str, GlobalSecondaryIndexUpdates: Any, **_: Any) -> None:
            if any(states[0] == "CREATING" for states in self.indexes.values()):
                raise RuntimeError("LimitExceededException: one index at a time")
            name = GlobalSecondaryIndexUpdates[0]["Create"]["IndexName"]
            self.indexes[name] = ["CREATING", "CREATING", "ACTIVE"]

    client = Building()
    assert len(schema.RECORDS.indexes) >= 2
    dynamodb_local._add_missing_indexes(client, schema.RECORDS, "records")
    assert sorted(client.indexes) == sorted(index.name for index in schema.RECORDS.indexes)
