"""Index setup: the on_event handler of the CDK custom-resource Provider that creates the
long-term indexes from schema.py at deploy time.

Create/Update: on a managed domain map the runtime roles (fine-grained access control), then
create both indexes through the runtime's own OpenSearchLongTermIndex, or add to an existing one
the fields a newer schema.py defines (a new mapping changes the resource's IndexBodySha256, so a
deployment runs an Update). Delete: nothing (the indexes go with the domain or collection). The
Provider framework answers CloudFormation: a return is SUCCESS, an exception is FAILED with its
message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.data_classes import (
    CloudFormationCustomResourceEvent,
    event_source,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import schema, wiring
from chatmemory.errors import ConfigurationError
from handlers import init_done

logger = Logger(service="index-setup")

PHYSICAL_ID = "long-term-indexes"
# Right after a domain or collection is created its access policies can lag behind for a
# minute: retry instead of failing the deployment (the framework does not retry a failure).
ATTEMPTS = 6
PAUSE_SECONDS = 15.0
# What the Provider framework passes instead of CloudFormation's pre-signed URL (it answers).
FRAMEWORK_RESPONSE_URL = "..."
# Stop retrying while there is still time to raise the real error: a timeout says nothing.
MARGIN_SECONDS = 30.0


def setup(role_arns: Sequence[str], *, region: str) -> None:
    """Map the runtime roles (domain only), create the indexes if missing and add missing
    fields to the existing ones (idempotent: a rerun finds nothing to add)."""
    from chatmemory.adapters.opensearch import OpenSearchLongTermIndex, opensearch_client
    from chatmemory.adapters.opensearch_security import OpenSearchSecurity

    settings = wiring.settings()
    index = wiring.long_term_index(settings)
    if not isinstance(index, OpenSearchLongTermIndex):
        raise ConfigurationError("index setup needs LONG_TERM_BACKEND=opensearch")
    if not settings.opensearch_serverless and role_arns:
        client = opensearch_client(settings.opensearch_endpoint, region, serverless=False)
        security = OpenSearchSecurity(
            client,
            memory_indexes=settings.opensearch_memory_indexes,
            generation=settings.opensearch_memory_generation,
            previous=settings.opensearch_previous_memory_indexes,
        )
        security.map_runtime_roles(role_arns)
    index.ensure_indexes()


def with_retries(
    action: Callable[[], None],
    *,
    attempts: int,
    pause: float,
    seconds_left: Callable[[], float],
) -> None:
    """Run `action` until it succeeds, `attempts` are used up, or too little time is left to
    try again. A configuration error is final at once."""
    for attempt in range(1, attempts + 1):
        try:
            action()
            return
        except ConfigurationError:
            raise
        except Exception as error:
            if attempt == attempts or seconds_left() < pause + MARGIN_SECONDS:
                raise
            logger.warning("setup attempt failed", extra={"attempt": attempt, "error": str(error)})
            time.sleep(pause)


@logger.inject_lambda_context
@event_source(data_class=CloudFormationCustomResourceEvent)
def on_event(event: CloudFormationCustomResourceEvent, context: LambdaContext) -> dict[str, Any]:
    """Create/Update: set the indexes up; Delete: keep them. Raises when the setup fails."""
    if event.response_url != FRAMEWORK_RESPONSE_URL:
        # CloudFormation itself invoked this function (see _answer_retired_resource).
        _answer_retired_resource(event)
        return {"PhysicalResourceId": event.physical_resource_id or PHYSICAL_ID}
    if event.request_type == "Delete":
        return {"PhysicalResourceId": event.physical_resource_id}
    # The domain belongs to this function's stack, so it is in this function's region.
    region = context.invoked_function_arn.split(":")[3]
    role_arns = list(event.resource_properties.get("RuntimeRoleArns") or [])
    with_retries(
        lambda: setup(role_arns, region=region),
        attempts=ATTEMPTS,
        pause=PAUSE_SECONDS,
        seconds_left=lambda: context.get_remaining_time_in_millis() / 1000,
    )
    settings = wiring.settings()
    names = schema.long_term_index_names(
        settings.opensearch_memory_indexes, settings.opensearch_memory_generation
    )
    return {"PhysicalResourceId": PHYSICAL_ID, "Data": {"Indexes": ",".join(names)}}


def _answer_retired_resource(event: CloudFormationCustomResourceEvent) -> None:
    """Stacks deployed before the Provider framework have a custom resource whose service token
    is this function; CloudFormation cannot move it to the framework (a service token never
    changes), so the template replaces it and deletes the old one by invoking this function
    directly. Answer that Delete (nothing to delete) so the stack update does not wait an hour
    for a reply; anything else from the old resource is refused. Remove once every deployed
    stage has been updated past the Provider change."""
    import urllib.request  # this path only (at init: 6 M instructions of every cold start)

    ok = event.request_type == "Delete"
    body = json.dumps(
        {
            "Status": "SUCCESS" if ok else "FAILED",
            "Reason": "nothing to delete" if ok else "the index setup runs through its Provider",
            "PhysicalResourceId": event.physical_resource_id or PHYSICAL_ID,
            "StackId": event.stack_id,
            "RequestId": event.request_id,
            "LogicalResourceId": event.logical_resource_id,
        }
    ).encode()
    request = urllib.request.Request(
        event.response_url,
        data=body,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - CloudFormation's URL
        answer.read()


# The end of init: build what invocations use, then resume collection (handlers/__init__.py).
init_done(wiring.long_term_index)
