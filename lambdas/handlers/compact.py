"""Rolling-summary Lambda: conversations stream (new turns) -> extend the session's summary."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import schema, wiring
from chatmemory.services.maintenance import compact_session
from chatmemory.streams import key_of, matches

logger = Logger(service="compact")
# A batch whose every record failed is reported like any other (not raised), so Lambda
# retries from the first failed record exactly as for a partial failure.
processor = BatchProcessor(
    event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False
)


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


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
