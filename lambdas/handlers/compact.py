"""Rolling-summary Lambda: conversations stream (new turns) -> extend the session's summary."""

from __future__ import annotations

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from chatmemory import schema, wiring
from chatmemory.services.background.maintenance import compact_session
from chatmemory.streams import key_of, matches
from handlers import init_done
from handlers.batch import stream_handler

logger = Logger(service="compact")


def record_handler(record: DynamoDBRecord) -> None:
    if not matches(schema.TURN_INSERTED_FILTER, record.raw_event):
        return
    deps = wiring.compaction_deps()
    compact_session(
        key_of(record.raw_event, schema.SESSION_ID),
        memory=deps.memory,
        summarizer=deps.summarizer,
        policy=deps.policy,
    )


handler = stream_handler(record_handler, logger)


# The end of init: build what invocations use, then resume collection (handlers/__init__.py).
init_done(wiring.compaction_deps)
