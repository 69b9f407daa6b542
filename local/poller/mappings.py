"""Event source mappings: which table's stream feeds which handler, with Lambda's options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chatmemory import schema


@dataclass(frozen=True)
class StreamMapping:
    """One event source mapping: which table's stream feeds which handler, and how."""

    name: str
    table: str  # logical table name (schema.TableSpec.logical_name)
    handler: str  # "package.module.function"
    filters: tuple[dict[str, Any], ...] = ()  # any pattern matching lets a record through
    batch_size: int = 10
    max_retry_attempts: int = 2  # retries after the first attempt; -1 retries forever
    bisect_batch_on_error: bool = True
    report_batch_item_failures: bool = True
    # The deployed function's timeout: the context of each invocation counts down from it.
    timeout_seconds: float = 30.0


# The mappings of the system, exactly as CDK deploys them: chatmemory.schema's triggers
# (handler, filter pattern, batch size, retries), bisection and item failure reports. (A session
# whose consolidation keeps failing is marked FAILED by its third attempt, ConsolidationPolicy's
# max_attempts, before the retries run out: such records do not reach the dead letters.)
# Not emulated: MaximumRecordAge (a laptop that slept should still consolidate its sessions).
MAPPINGS: tuple[StreamMapping, ...] = tuple(
    StreamMapping(
        name=trigger.name,
        table=trigger.table.logical_name,
        handler=trigger.handler,
        filters=trigger.filters,
        timeout_seconds=trigger.timeout_seconds,
        batch_size=trigger.batch_size,
        max_retry_attempts=trigger.retry_attempts,
    )
    for trigger in schema.STREAM_TRIGGERS
)
