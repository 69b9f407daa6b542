"""Local mode at rest as its data builds up: the CPU DynamoDB Local spends while nothing happens,
with the stream poller reading every shard four times a second (as it did), with the poller
backing off on empty reads (as it does now), and with no poller at all.

DynamoDB Local (a fresh database) gets conversations written as the chat writes them: each turn
one transaction that puts the turn and updates its session (a record on the conversations and
sessions streams), each session ended after its turns and three profile records stated (the
sessions and records streams), in 20-turn sessions. At each level the poller first reads
everything written (its handlers do nothing: only DynamoDB Local's work is measured), then the
JVM's CPU time (user + system, from /proc) is read over `--window` seconds of rest for each way
of polling. Linux only (/proc).

    python -m bench.local_idle [--turns 0,2500,5000] [--window 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chatmemory import wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.clock import iso, utc_now
from chatmemory.domain import MemoryRecord
from chatmemory.schema import RecordOrigin, RecordType
from chatmemory.services.conversation import sessions
from chatmemory.services.conversation.turns import store_turn
from chatmemory.services.profile import profile
from chatmemory.settings import Settings
from local.dynamodb_local import DynamoDBLocal, ensure_tables, free_port, table_names
from local.poller import MAPPINGS, StreamPoller

TURNS_PER_SESSION = 20
MESSAGE = " ".join(["word"] * 60)
ANSWER = " ".join(["answer"] * 80)
# How the poller polls in each variant: the longest wait between reads of an idle shard, and
# between listings of an idle mapping's shards (its loop steps every 0.25 s in both).
VARIANTS = {
    "every 0.25 s (before)": (0.25, 5.0),
    "backing off (now)": (16.0, 60.0),
}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cores(pid: int, window: float) -> float:
    """The cores the process used on average over `window` seconds from now."""
    before, started = _cpu_seconds(pid), time.monotonic()
    time.sleep(window)
    return (_cpu_seconds(pid) - before) / (time.monotonic() - started)


def _write(memory: DynamoShortTermMemory, user: str, turns: int) -> None:
    """`turns` more turns of `user`, in ended sessions of 20 with three records each."""

    def session(number: int) -> None:
        sid = sessions.create_session(memory, user).session_id
        for n in range(TURNS_PER_SESSION):
            store_turn(
                memory, user_id=user, session_id=sid, input=f"{MESSAGE} {n}", response=ANSWER,
                client_message_id=None, created_at=None, metadata={}, max_input_chars=4000,
                clock=utc_now, sleep=time.sleep,
            )  # fmt: skip
        sessions.end_session(memory, user, sid)
        now = iso(datetime.now(UTC))
        for k in range(3):
            memory.put_record(
                MemoryRecord(
                    profile.new_record_id(datetime.now(UTC)), memory.get_user(user).owner,
                    RecordType.FACT, f"Fact {k} of session {number}: {MESSAGE[:40]}", now, now,
                    RecordOrigin.STATED,
                )
            )  # fmt: skip

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(session, range(turns // TURNS_PER_SESSION)))


def run(levels: list[int], window: float) -> dict[str, Any]:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    state = Path(tempfile.mkdtemp(prefix="bench-idle-"))
    server = DynamoDBLocal(state / "db", free_port()).start()
    rows: list[dict[str, Any]] = []
    try:
        assert server.process is not None
        pid = server.process.pid
        settings = Settings.from_env({"DYNAMODB_ENDPOINT_URL": server.endpoint})
        client = wiring.aws_client("dynamodb", server.endpoint)
        ensure_tables(client, table_names(settings))
        memory = DynamoShortTermMemory(
            client, settings.sessions_table, settings.conversations_table,
            settings.users_table, settings.records_table,
        )  # fmt: skip
        nothing = {m.name: (lambda event, context: {"batchItemFailures": []}) for m in MAPPINGS}
        written = 0
        for level in levels:
            started = time.monotonic()
            _write(memory, "bench-user", level - written)
            written = level
            print(f"{level:,} turns written in {time.monotonic() - started:.0f} s", file=sys.stderr)
            row: dict[str, Any] = {"turns": level}
            for name, (longest, listing) in VARIANTS.items():
                poller = StreamPoller(
                    client, wiring.aws_client("dynamodbstreams", server.endpoint),
                    checkpoint_path=state / "checkpoints.json",
                    dead_letter_path=state / "dead-letters.jsonl",
                    table_names=table_names(settings), handlers=nothing,
                    max_idle_backoff_seconds=longest, max_shard_refresh_seconds=listing,
                )  # fmt: skip
                poller.drain(timeout=600)
                poller.start(0.25)
                time.sleep(min(2 * listing, 2 * longest + window))  # its backoff settles
                row[name] = round(_cores(pid, window), 4)
                poller.stop()
            row["no poller"] = round(_cores(pid, window), 4)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        server.stop()
    return {
        "window_seconds": window,
        "turns_per_session": TURNS_PER_SESSION,
        "rows": rows,
    }


def _table(result: dict[str, Any]) -> str:
    names = [*VARIANTS, "no poller"]
    heads = [f"poller {n}" if n in VARIANTS else n for n in names]
    lines = [
        "| turns stored | " + " | ".join(heads) + " |",
        "|---|" + "---|" * len(names),
    ]
    for row in result["rows"]:
        lines.append(f"| {row['turns']:,} | " + " | ".join(f"{row[n]:.4f}" for n in names) + " |")
    return "\n".join(lines)


def section(result: dict[str, Any]) -> str:
    """The section of bench/RESULTS.md (`make bench`)."""
    rows = result["rows"]
    before, now = (f"poller {name}" for name in VARIANTS)
    first, last = rows[0], rows[-1]
    names = list(VARIANTS)
    return "\n\n".join(
        [
            "## Local mode at rest as data builds up",
            "`python -m bench.local_idle --turns "
            + ",".join(str(r["turns"]) for r in rows)
            + f" --window {result['window_seconds']:g}` — DynamoDB Local's CPU while nothing "
            "happens, in cores (CPU seconds per second of its JVM, from /proc, over the window), "
            "on one fresh database filled level by level with 20-turn sessions written as the "
            "chat writes them (each turn a transaction on the conversations and sessions "
            "tables), each session ended, three profile records each. At each level the stream "
            "poller first reads everything (handlers that do nothing), then rests: reading "
            "every shard at each 0.25 s step and listing the shards every 5 s, as it did; "
            "backing off on empty reads (0.25 s, doubling, to 16 s) and listings (5 s, "
            "doubling, to 60 s) until something is written, as it does now; and with no poller.",
            _table(result),
            f"From {first['turns']:,} to {last['turns']:,} turns: {before} "
            f"{first[names[0]]:.4f} -> {last[names[0]]:.4f} cores, {now} "
            f"{first[names[1]]:.4f} -> {last[names[1]]:.4f} (no poller "
            f"{first['no poller']:.4f} -> {last['no poller']:.4f}).",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="0,2500,5000", help="cumulative turns at each level")
    parser.add_argument("--window", type=float, default=20.0, help="seconds of rest measured")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    levels = [int(t) for t in args.turns.split(",")]
    result = run(levels, args.window)
    if args.json:
        print(json.dumps(result, indent=2))
    print(section(result))


if __name__ == "__main__":
    main()
