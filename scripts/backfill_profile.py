"""Give the records written before the profile block their category, so that they join it
(`python -m scripts.backfill_profile`).

Facts and preferences have a category since the profile block (services/profile/traits.py),
and the profile index (schema.PROFILE_RECORDS_INDEX) holds only the records that carry their
place in it. A deployment that had records before has to give the older ones theirs once: this
reads the records table in pages (a Scan), and saves each fact or preference without a category
again with it (services/profile/profile.categorize; the same conditional write as any change
of a record, so a record changed meanwhile is left to its writer, who categorizes it). Records
that have one are skipped: running it again does nothing, and `--start-key` (the last key it
printed) resumes a run that stopped.

With the settings of the environment, as `python -m scripts.redrive`: local mode's (`make run`
does this by itself at start), or a deployment's tables when their variables are set
(RECORDS_TABLE, SESSIONS_TABLE, ... and AWS credentials; see docs/operations.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

from chatmemory import schema

PAGE_ITEMS = 500


def backfill(
    client: Any, table: str, memory: Any, *, start_key: dict[str, Any] | None = None
) -> Iterator[tuple[int, int, dict[str, Any] | None]]:
    """Scan `table` page by page; yields (records read, records categorized, the key to resume
    from: None at the end) after each page."""
    from chatmemory.adapters.dynamodb.codec import record_from_item
    from chatmemory.services.profile.entries import categorize

    kwargs: dict[str, Any] = {
        "TableName": table,
        "Limit": PAGE_ITEMS,
        # Only what could need a category: a fact or a preference without one.
        "FilterExpression": "#t IN (:fact, :preference) AND attribute_not_exists(category)",
        "ExpressionAttributeNames": {"#t": "type"},
        "ExpressionAttributeValues": {
            ":fact": {"S": schema.RecordType.FACT},
            ":preference": {"S": schema.RecordType.PREFERENCE},
        },
    }
    if start_key:
        kwargs["ExclusiveStartKey"] = start_key
    while True:
        page = client.scan(**kwargs)
        done = 0
        for item in page.get("Items", []):
            record = categorize(record_from_item(item))
            if record.category and memory.save_record(record):
                done += 1
        next_key = page.get("LastEvaluatedKey")
        yield page.get("ScannedCount", 0), done, next_key
        if not next_key:
            return
        kwargs["ExclusiveStartKey"] = next_key


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start-key", default="", help="resume after this key (JSON)")
    args = parser.parse_args()
    from chatmemory import wiring

    cfg = wiring.settings()
    client = wiring.aws_client("dynamodb", cfg.dynamodb_endpoint)
    memory = wiring.short_term_memory(cfg)
    start = json.loads(args.start_key) if args.start_key else None
    read = changed = 0
    for scanned, done, next_key in backfill(client, cfg.records_table, memory, start_key=start):
        read, changed = read + scanned, changed + done
        print(json.dumps({"read": read, "categorized": changed, "next_key": next_key}))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
