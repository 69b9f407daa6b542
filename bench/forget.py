"""Forgetting a heavy user, and one very long session, on DynamoDB Local.

What the request itself costs (DELETE /memories and DELETE /sessions/{id} are one conditional
write each, whatever the size of what is forgotten), that nothing is reachable the moment it
returns, and how long the background purge takes to delete everything physically: the purge
functions' code (services/background/forget.py) run in this process, in order, as one stream shard
would run them.

    python -m bench.forget [--sessions 100] [--turns 1000] [--long-session 10000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from chatmemory import wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.domain import Turn
from chatmemory.errors import SessionNotFound
from chatmemory.services.background.forget import Purging, forget_user, purge_session, purge_user
from chatmemory.services.conversation import sessions
from chatmemory.settings import Settings
from local.dynamodb_local import DynamoDBLocal, ensure_tables, free_port, table_names

# ~60-word messages and ~80-word answers, as in the other benchmarks' realistic turns.
MESSAGE = " ".join(["word"] * 60)
ANSWER = " ".join(["answer"] * 80)


def _fill(memory: DynamoShortTermMemory, user: str, count: int, turns: int) -> list[str]:
    """`count` sessions of `turns` turns each, written in batches by a few threads."""
    ids = [sessions.create_session(memory, user).session_id for _ in range(count)]
    session_items = {sid: memory.get_session(sid) for sid in ids}

    def write(sid: str) -> None:
        owner = session_items[sid].user_id  # type: ignore[union-attr]
        batch = [
            Turn(sid, n, owner, MESSAGE, ANSWER, created_at="2026-11-01T10:00:00.000Z")
            for n in range(1, turns + 1)
        ]
        memory.put_turns(batch)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, ids))
    return ids


def _count_items(client: Any, table: str, owner_prefix: str) -> int:
    total = 0
    for page in client.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression="begins_with(user_id, :u)",
        ExpressionAttributeValues={":u": {"S": owner_prefix}},
        Select="COUNT",
    ):
        total += page["Count"]
    return total


def run(*, session_count: int, turns: int, long_session: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="bench-forget-"))
    server = DynamoDBLocal(root / "data", free_port(), log_path=root / "dynamodb.log").start()
    try:
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        cfg = Settings()
        client = wiring.aws_client("dynamodb", server.endpoint)
        ensure_tables(client, table_names(cfg))
        memory = DynamoShortTermMemory(
            client, cfg.sessions_table, cfg.conversations_table, cfg.users_table, cfg.records_table
        )
        result: dict[str, Any] = {"sessions": session_count, "turns_per_session": turns}

        started = time.perf_counter()
        ids = _fill(memory, "heavy", session_count, turns)
        result["setup_seconds"] = round(time.perf_counter() - started, 1)

        started = time.perf_counter()
        forget_user(memory, "heavy")
        result["forget_request_ms"] = round((time.perf_counter() - started) * 1000, 1)
        listed = sessions.list_sessions(memory, "heavy", limit=100, next_token=None).items
        unreachable = 0
        for sid in ids:
            try:
                sessions.get_session(memory, "heavy", sid)
            except SessionNotFound:
                unreachable += 1
        result["listed_after_forget"] = len(listed)
        result["reachable_after_forget"] = len(ids) - unreachable

        started = time.perf_counter()
        purge_user("heavy", Purging(memory, None), time_left=lambda: 900.0, sleep=lambda s: None)
        marked = time.perf_counter()
        deleted = 0
        for sid in ids:  # one stream shard: one session after another
            deleted += purge_session(sid, Purging(memory, None), time_left=lambda: 900).deleted
        finished = time.perf_counter()
        result["purge_mark_seconds"] = round(marked - started, 2)
        result["purge_seconds"] = round(finished - started, 1)
        result["turns_deleted"] = deleted
        result["turns_deleted_per_second"] = round(deleted / (finished - marked))
        result["items_left"] = _count_items(client, cfg.conversations_table, "heavy") + (
            _count_items(client, cfg.sessions_table, "heavy")
        )

        if long_session:
            sid = _fill(memory, "long", 1, long_session)[0]
            started = time.perf_counter()
            sessions.delete_session(memory, "long", sid)
            result["long_session_turns"] = long_session
            result["long_delete_request_ms"] = round((time.perf_counter() - started) * 1000, 1)
            started = time.perf_counter()
            rounds = 0
            while True:  # a 60 s invocation budget, handing over as the stream would
                deadline = time.monotonic() + 60
                rounds += 1
                outcome = purge_session(
                    sid,
                    Purging(memory, None),
                    time_left=lambda deadline=deadline: deadline - time.monotonic(),
                ).outcome
                if outcome != "continued":
                    break
            result["long_purge_seconds"] = round(time.perf_counter() - started, 1)
            result["long_purge_invocations"] = rounds
            result["long_items_left"] = _count_items(client, cfg.conversations_table, "long")
        return result
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--long-session", type=int, default=10_000)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args()
    result = run(session_count=args.sessions, turns=args.turns, long_session=args.long_session)
    if not args.json:
        for key, value in result.items():
            print(f"{key:>28}: {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
