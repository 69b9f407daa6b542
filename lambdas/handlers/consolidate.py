"""Consolidation Lambda: sessions stream (OPEN -> ENDED, or a handed-over consolidation) ->
summary, embeddings, long-term index."""

from __future__ import annotations

from datetime import UTC, datetime

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import schema, wiring
from chatmemory.streams import key_of, matches
from handlers import init_done
from handlers.batch import remaining_seconds, stream_handler
from handlers.metrics import metrics_of

logger = Logger(service="consolidate")
metrics = metrics_of("consolidate")


def record_handler(record: DynamoDBRecord, lambda_context: LambdaContext | None = None) -> None:
    if not any(matches(f, record.raw_event) for f in schema.CONSOLIDATION_TRIGGER.filters):
        return  # the event source mapping filters too; this guards other callers
    deps = wiring.consolidation_deps()
    image = record.raw_event["dynamodb"].get("NewImage") or {}
    turns = (image.get(schema.NUM_TURNS) or {}).get("N")
    result = deps.consolidate(
        key_of(record.raw_event, schema.SESSION_ID),
        now=datetime.now(UTC),
        owner=(image.get(schema.USER_ID) or {}).get("S"),
        num_turns=int(turns) if turns is not None else None,
        time_left=remaining_seconds(lambda_context),
    )
    logger.info("consolidation", extra={"result": result.__dict__})
    metrics.add_metric(name=f"Sessions{result.outcome.title()}", unit=MetricUnit.Count, value=1)
    if result.concluded is False:  # it left open questions for the next session
        metrics.add_metric(name="SessionsLeftOpen", unit=MetricUnit.Count, value=1)


handler = stream_handler(record_handler, logger, metrics)


# The end of init: build what invocations use, then resume collection (handlers/__init__.py).
init_done(wiring.consolidation_deps)
