"""Redrive Lambda (an operator's tool): consolidate every FAILED session again.

Invoke it with `aws lambda invoke --function-name <RedriveFunctionName> out.json`; the answer
lists each session with its outcome. It runs with the stack's own roles, so it reaches the
long-term index as consolidation does (a person's credentials have no OpenSearch role).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import wiring
from chatmemory.services.consolidation import redrive_failed

logger = Logger(service="redrive")


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    deps = wiring.consolidation_deps()
    outcomes = redrive_failed(
        memory=deps.memory,
        summarizer=deps.summarizer,
        embedder=deps.embedder,
        index=deps.index,
        policy=deps.policy,
        now=datetime.now(UTC),
    )
    logger.info("redrive", extra={"sessions": len(outcomes)})
    return {"sessions": outcomes}
