"""Scheduled Lambda: end sessions idle longer than IDLE_MINUTES (consolidation follows), start
again consolidations that were lost (ended long ago, still not consolidated), and collect what a
crash left behind (abandoned imports, stalled purges); every shard of the sweeper's index, page
by page, while the invocation has time (what is left, the next sweep finds). It reports how long
the oldest unconsolidated session has waited (the metric of its alarm)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import schema, wiring
from chatmemory.services.background.maintenance import SweepPolicy, sweep
from handlers import init_done
from handlers.batch import remaining_seconds

logger = Logger(service=schema.SWEEPER_SERVICE)
metrics = Metrics(namespace=schema.METRICS_NAMESPACE, service=schema.SWEEPER_SERVICE)


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    cfg = wiring.settings()
    now = datetime.now(UTC)
    policy = SweepPolicy(
        idle_minutes=cfg.idle_minutes,
        retry_minutes=cfg.consolidation_retry_minutes,
        retries_per_sweep=cfg.consolidation_retries_per_sweep,
    )
    result = sweep(
        wiring.short_term_memory(), now=now, policy=policy, time_left=remaining_seconds(context)
    )
    oldest = result.oldest_unconsolidated
    waited = max((now - oldest).total_seconds(), 0.0) if oldest is not None else 0.0
    counts = {
        "ended": len(result.ended),
        "consolidations_retried": len(result.retried),
        "abandoned_imports": len(result.stale.abandoned_imports),
        "stalled_purges": len(result.stale.stalled_purges),
        "oldest_unconsolidated_seconds": round(waited),
    }
    metrics.add_metric(name="SessionsEnded", unit=MetricUnit.Count, value=len(result.ended))
    metrics.add_metric(
        name="ConsolidationsRetried", unit=MetricUnit.Count, value=len(result.retried)
    )
    metrics.add_metric(
        name=schema.OLDEST_UNCONSOLIDATED_METRIC, unit=MetricUnit.Seconds, value=waited
    )
    logger.info("sweep", extra=counts)
    return counts


# The end of init: build what invocations use, then resume collection (handlers/__init__.py).
init_done(wiring.short_term_memory)
