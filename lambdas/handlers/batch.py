"""Batch processing shared by the DynamoDB Streams handlers (consolidate, compact, purge)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType


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
