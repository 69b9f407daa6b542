"""Purge Lambda: physical deletion of what callers deleted (sessions stream: a session marked
DELETING; users stream: a forget request; records stream: a profile record marked DELETING, or
one DynamoDB's TTL deleted when it expired).
See services/background/forget.py for why it is safe."""

from __future__ import annotations

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory import schema, wiring
from chatmemory.services.background.forget import purge_session, purge_user
from chatmemory.services.profile.purge import purge_expired_record, purge_record
from chatmemory.streams import key_of, matches
from handlers import init_done
from handlers.batch import remaining_seconds, stream_handler
from handlers.metrics import metrics_of

logger = Logger(service="purge")
metrics = metrics_of("purge")


def record_handler(record: DynamoDBRecord, lambda_context: LambdaContext | None = None) -> None:
    deps = wiring.purge_deps()
    time_left = remaining_seconds(lambda_context)
    event = record.raw_event
    keys = event["dynamodb"]["Keys"]
    if schema.RECORD_ID in keys and matches(schema.RECORD_EXPIRED_FILTER, event):
        # An expired record DynamoDB's TTL deleted: its entries, named by its old image (the
        # codec loads boto3's types: only here, not at cold start).
        from chatmemory.adapters.dynamodb.codec import record_from_item

        purge_expired_record(record_from_item(event["dynamodb"]["OldImage"]), index=deps.index)
        outcome = "expired"
    elif schema.RECORD_ID in keys:  # a profile record deleted through the API
        if not matches(schema.RECORD_DELETING_FILTER, event):
            return
        purged = purge_record(
            key_of(event, schema.USER_ID),
            key_of(event, schema.RECORD_ID),
            memory=deps.memory,
            index=deps.index,
        )
        outcome = "purged" if purged else "gone"
    else:
        # A session marked DELETING, or a forget: purged in rounds as far as time allows.
        if schema.SESSION_ID in keys:
            if not matches(schema.SESSION_DELETING_FILTER, event):
                return
            result = purge_session(key_of(event, schema.SESSION_ID), deps, time_left=time_left)
        else:
            if not matches(schema.USER_PURGE_FILTER, event):
                return
            result = purge_user(key_of(event, schema.USER_ID), deps, time_left=time_left)
        outcome = result.outcome
        logger.info("purge", extra={"result": result.__dict__})
    metrics.add_metric(name=f"Purge{outcome.title()}", unit=MetricUnit.Count, value=1)


handler = stream_handler(record_handler, logger, metrics)


# The end of init: build what invocations use, then resume collection (handlers/__init__.py).
init_done(wiring.purge_deps)
