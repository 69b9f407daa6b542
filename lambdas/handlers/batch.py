"""Batch processing shared by the DynamoDB Streams handlers (consolidate, compact, purge)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

StreamHandler = Callable[[dict[str, Any], LambdaContext], PartialItemFailureResponse]


def stream_processor() -> BatchProcessor:
    """A Powertools batch processor for DynamoDB Streams records (report_batch_item_failures).

    A batch whose every record failed is reported like any other, not raised, so Lambda retries
    from the first failed record exactly as after a partial failure."""
    return BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)


def remaining_seconds(context: Any) -> Callable[[], float]:
    """Seconds left in this invocation (unlimited without a Lambda context: a direct call)."""
    if context is None:
        return lambda: math.inf
    return lambda: context.get_remaining_time_in_millis() / 1000


def stream_handler(
    record_handler: Callable[..., None], logger: Logger, metrics: Metrics | None = None
) -> StreamHandler:
    """The Lambda handler of a stream function: each record of a batch to `record_handler`
    (with the Lambda context when it takes one), failures reported per record; the context
    logged and, with `metrics`, the metrics flushed after each invocation."""
    processor = stream_processor()

    def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )

    if metrics is not None:
        handler = metrics.log_metrics(handler)
    return logger.inject_lambda_context(handler)
