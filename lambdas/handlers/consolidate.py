"""Consolidation Lambda: sessions stream (OPEN -> ENDED) -> summary, embeddings, long-term index."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import schema, wiring
from chatmemory.services.consolidation import consolidate_session
from chatmemory.streams import key_of, matches

logger = Logger(service="consolidate")
tracer = Tracer(service="consolidate")
metrics = Metrics(namespace="ChatMemory", service="consolidate")
# A batch whose every record failed is reported like any other (not raised), so Lambda
# retries from the first failed record exactly as for a partial failure.
processor = BatchProcessor(
    event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False
)


def record_handler(record: DynamoDBRecord) -> None:
    if not matches(schema.SESSION_ENDED_FILTER, record.raw_event):
        return  # the event source mapping filters too; this guards other callers
    deps = wiring.consolidation_deps()
    image = record.raw_event["dynamodb"].get("NewImage") or {}
    result = consolidate_session(
        key_of(record.raw_event, schema.SESSION_ID),
        owner=(image.get(schema.USER_ID) or {}).get("S"),
        memory=deps.memory,
        summarizer=deps.summarizer,
        embedder=deps.embedder,
        index=deps.index,
        policy=deps.policy,
        now=datetime.now(UTC),
    )
    logger.info("consolidation", extra={"result": result.__dict__})
    metrics.add_metric(name=f"Sessions{result.outcome.title()}", unit=MetricUnit.Count, value=1)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
