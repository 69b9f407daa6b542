"""Redrive Lambda (an operator's tool): consolidate every FAILED session again, and hand every
unfinished forget to a new purge (one whose stream record went to the dead-letter queue).

Invoke it with `aws lambda invoke --function-name <RedriveFunctionName> out.json`; the answer
lists each session with its outcome and the callers whose purge was restarted. It runs with the
stack's own roles, so it reaches the long-term index as consolidation does (a person's
credentials have no OpenSearch role).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import wiring
from chatmemory.services.background.forget import rekick_user_purges
from handlers import init_done

logger = Logger(service="redrive")


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    deps = wiring.consolidation_deps()
    outcomes = deps.redrive(datetime.now(UTC))
    purges = rekick_user_purges(deps.memory)
    logger.info("redrive", extra={"sessions": len(outcomes), "purges": len(purges)})
    return {"sessions": outcomes, "purges_restarted": purges}


# The end of init: build what invocations use, then resume collection (handlers/__init__.py).
init_done(wiring.consolidation_deps)
