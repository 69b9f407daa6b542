"""Scheduled Lambda: end sessions idle longer than IDLE_MINUTES (consolidation follows), and
collect what a crash left behind (abandoned imports, stalled purges)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import wiring
from chatmemory.services.background.maintenance import sweep_idle_sessions, sweep_stale_work
from handlers import init_done

logger = Logger(service="sweep-idle")


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    memory = wiring.short_term_memory()
    now = datetime.now(UTC)
    ended = sweep_idle_sessions(memory, now=now, idle_minutes=wiring.settings().idle_minutes)
    stale = sweep_stale_work(memory, now=now)
    counts = {
        "ended": len(ended),
        "abandoned_imports": len(stale.abandoned_imports),
        "stalled_purges": len(stale.stalled_purges),
    }
    logger.info("sweep", extra=counts)
    return counts


# The end of init: build what invocations use, then resume collection (handlers/__init__.py).
init_done(wiring.short_term_memory)
