"""Scheduled Lambda: end sessions idle longer than IDLE_MINUTES (consolidation follows)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import wiring
from chatmemory.services.maintenance import sweep_idle_sessions

logger = Logger(service="sweep-idle")


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    ended = sweep_idle_sessions(
        wiring.short_term_memory(),
        now=datetime.now(UTC),
        idle_minutes=wiring.settings().idle_minutes,
    )
    logger.info("idle sessions ended", extra={"count": len(ended)})
    return {"ended": len(ended)}
