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
