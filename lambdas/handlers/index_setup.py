"""Custom resource Lambda: create the long-term indexes at deploy time from schema.py.

Create/Update: on a managed domain map the runtime roles (fine-grained access control), then
create both indexes through the runtime's own OpenSearchLongTermIndex. Delete: nothing (the
indexes go with the domain or collection). Every request is answered, failures included, so a
stack never waits an hour for a lost reply.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import wiring

logger = Logger(service="index-setup")

PHYSICAL_ID = "long-term-indexes"
# Right after a domain or collection is created its access policies can lag behind for a
# minute; retry instead of failing the deployment.
ATTEMPTS = 6
PAUSE_SECONDS = 15.0


def setup(properties: dict[str, Any]) -> None:
    """Map the runtime roles (domain only) and create the indexes if missing."""
    from chatmemory.adapters.opensearch import OpenSearchLongTermIndex, opensearch_client
    from chatmemory.adapters.opensearch_security import map_runtime_roles

    settings = wiring.settings()
    index = wiring.long_term_index(settings)
    if not isinstance(index, OpenSearchLongTermIndex):
        raise RuntimeError("index setup needs LONG_TERM_BACKEND=opensearch")
    role_arns = list(properties.get("RuntimeRoleArns") or [])
    if not settings.opensearch_serverless and role_arns:
        client = opensearch_client(
            settings.opensearch_endpoint, os.environ["AWS_REGION"], serverless=False
        )
        map_runtime_roles(client, role_arns)
    index.ensure_indexes()


def with_retries(
    action: Callable[[], None],
    *,
    attempts: int,
    pause: float,
    seconds_left: Callable[[], float],
) -> None:
    """Run `action` until it succeeds, `attempts` are used up, or too little time is left to
    try again and still answer CloudFormation."""
    for attempt in range(1, attempts + 1):
        try:
            action()
            return
        except Exception as error:
            if attempt == attempts or seconds_left() < pause + 60:
                raise
            logger.warning("setup attempt failed", extra={"attempt": attempt, "error": str(error)})
            time.sleep(pause)


def send_response(event: dict[str, Any], status: str, reason: str) -> None:
    """PUT the result to CloudFormation's pre-signed response URL."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:1000],
            "PhysicalResourceId": event.get("PhysicalResourceId") or PHYSICAL_ID,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"],
        data=body,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - CloudFormation's URL
        answer.read()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> None:
    status, reason = "SUCCESS", "indexes ready"
    try:
        if event["RequestType"] in ("Create", "Update"):
            with_retries(
                lambda: setup(event.get("ResourceProperties") or {}),
                attempts=ATTEMPTS,
                pause=PAUSE_SECONDS,
                seconds_left=lambda: context.get_remaining_time_in_millis() / 1000,
            )
        else:
            reason = "nothing to delete"
    except Exception as error:
        logger.exception("index setup failed")
        status, reason = "FAILED", f"{type(error).__name__}: {error}"
    send_response(event, status, reason)
