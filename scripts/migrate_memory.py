"""Copy a deployed stack's old memory index into its current ones: the shared S3 Vectors memory
index into per-user indexes, or a domain's memory indexes of the previous generation
(`searchMigrateMemoryFrom`) into the new one (`python -m scripts.migrate_memory --stack
ChatMemory-dev`, or `make migrate-memory`).

It invokes the stack's MigrateMemory function (handlers/migrate_memory.py) until the shared
index has been read to its end. Each invocation runs up to its 15 minutes and answers where
to continue; the token is kept in a state file (.local/migrate-memory-<stack>.json) after every
invocation, so a run that fails or is interrupted resumes where it stopped when started again.
Copies overwrite, so a page done twice is harmless. Then deploy with
`-c chatmemory:sharedMemoryIndex=false` to drop the shared index, or without
`searchMigrateMemoryFrom` once a domain's old indexes are deleted (docs/operations.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

STATE_DIR = Path(".local")
# A synchronous invocation of up to 15 minutes: the client waits that long for the answer.
READ_TIMEOUT_SECONDS = 910


def function_name(cloudformation: Any, stack: str) -> str:
    """The stack's MigrateMemory function, from its outputs."""
    outputs = {
        o["OutputKey"]: o["OutputValue"]
        for o in cloudformation.describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    }
    name = outputs.get("MigrateMemoryFunctionName")
    if not name:
        raise SystemExit(
            f"{stack} has no MigrateMemory function: it has no memory index to migrate "
            "(searchMode=s3vectors with sharedMemoryIndex=true, or a domain deployed with "
            "searchMigrateMemoryFrom)"
        )
    return name


def migrate(
    lambda_client: Any,
    function: str,
    state: Path,
    *,
    report: Callable[[str], None] = print,
) -> dict[str, int]:
    """Invoke `function` until it is done, from the token kept in `state` (if any); the totals
    of this run. The state file is removed once the index has been read to its end."""
    token = json.loads(state.read_text()).get("token") if state.exists() else None
    if token:
        report(f"resuming from {state}")
    totals = {"copied": 0, "skipped": 0, "invocations": 0}
    while True:
        answer = lambda_client.invoke(
            FunctionName=function, Payload=json.dumps({"token": token}).encode()
        )
        payload = json.loads(answer["Payload"].read() or b"null")
        if answer.get("FunctionError"):
            raise SystemExit(f"{function} failed (run again to resume): {payload}")
        totals["invocations"] += 1
        totals["copied"] += payload["copied"]
        totals["skipped"] += payload["skipped"]
        token = payload["next_token"]
        report(
            f"copied {payload['copied']}, skipped {payload['skipped']} (deleted or expired); "
            + ("done" if payload["done"] else "continuing")
        )
        if payload["done"]:
            state.unlink(missing_ok=True)
            return totals
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({"function": function, "token": token}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.migrate_memory", description=__doc__)
    parser.add_argument("--stack", default="ChatMemory-dev", help="the deployed stack's name")
    args = parser.parse_args(argv)
    import boto3
    from botocore.config import Config

    function = function_name(boto3.client("cloudformation"), args.stack)
    client = boto3.client(
        "lambda",
        config=Config(read_timeout=READ_TIMEOUT_SECONDS, retries={"max_attempts": 1}),
    )
    totals = migrate(client, function, STATE_DIR / f"migrate-memory-{args.stack}.json")
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
