"""Migration Lambda (an operator's tool): copy the shared memory index of an S3 Vectors
deployment made before per-user indexes into each owner's own index, or a domain's memory
indexes of the previous generation into the current one (their vectors embedded again where the
old index kept none), until its time runs short.

Event: {"token": <the next_token of the previous run>, absent or null for the first}. The answer
says what was copied and skipped and where to continue (`next_token`, null once done);
`make migrate-memory` (scripts/migrate_memory.py) invokes it until then, keeping the token in a
file, so a failed or interrupted run resumes where it stopped.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import wiring
from chatmemory.services.background.migrate import migrate_shared_index
from handlers import init_done
from handlers.batch import remaining_seconds

logger = Logger(service="migrate-memory")


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    token = event.get("token")
    if token is not None and not isinstance(token, str):
        raise ValueError("token must be the next_token of the previous run, or null")
    progress = migrate_shared_index(
        wiring.shared_memory_index(),
        wiring.short_term_memory(),
        token=token or None,
        time_left=remaining_seconds(context),
        embedder=wiring.migration_embedder(),
    )
    answer = progress.answer()
    logger.info("migration", extra=answer)
    return answer


# The end of init: build what invocations use, then resume collection (handlers/__init__.py).
init_done(
    lambda: (
        wiring.shared_memory_index(),
        wiring.short_term_memory(),
        wiring.migration_embedder(),
    )
)
