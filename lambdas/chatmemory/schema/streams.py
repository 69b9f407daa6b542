"""The stream filter patterns and triggers (Lambda event source mappings and the local poller)."""

from __future__ import annotations

from typing import Any, NamedTuple

from chatmemory.schema.kinds import PurgeState, RecordStatus, RecordType, SessionStatus
from chatmemory.schema.tables import (
    CONVERSATIONS,
    PURGE_STATE,
    RECORDS,
    SESSIONS,
    STATUS,
    USERS,
    TableSpec,
)

# --- stream filter patterns (Lambda event source mappings and the local poller) -----------------

# A session whose status changed from OPEN to ENDED: the only record consolidation acts on.
SESSION_ENDED_FILTER: dict[str, Any] = {
    "eventName": ["MODIFY"],
    "dynamodb": {
        "OldImage": {STATUS: {"S": [SessionStatus.OPEN]}},
        "NewImage": {STATUS: {"S": [SessionStatus.ENDED]}},
    },
}
# A consolidation that handed over to a next invocation (its checkpoint's write): every change
# of the session while the checkpoint stands lets a run resume, and runs are idempotent.
CONSOLIDATION_STATE = "consolidation_state"
CONSOLIDATION_CONTINUE = "CONTINUE"
# When the sweeper last started an ENDED session's consolidation again (its stream record lost:
# expired, dead-lettered, or its run died): the same write as a checkpoint's hand-over.
CONSOLIDATION_RETRIED_AT = "consolidation_retried_at"
# The sweeper's metric (namespace ChatMemory, dimension service=sweep-idle) of how long the
# oldest session ENDED and not yet consolidated has waited, in seconds: the alarm's.
OLDEST_UNCONSOLIDATED_METRIC = "OldestUnconsolidatedSeconds"
SWEEPER_SERVICE = "sweep-idle"
METRICS_NAMESPACE = "ChatMemory"
CONSOLIDATION_CONTINUE_FILTER: dict[str, Any] = {
    "eventName": ["MODIFY"],
    "dynamodb": {
        "NewImage": {
            STATUS: {"S": [SessionStatus.ENDED, SessionStatus.FAILED]},
            CONSOLIDATION_STATE: {"S": [CONSOLIDATION_CONTINUE]},
        }
    },
}
# A new turn: what the rolling-summary compaction looks at.
TURN_INSERTED_FILTER: dict[str, Any] = {"eventName": ["INSERT"]}
# A session marked DELETING (and every later change of it, which is how a purge that ran out of
# time hands over to the next invocation).
SESSION_DELETING_FILTER: dict[str, Any] = {
    "eventName": ["MODIFY"],
    "dynamodb": {"NewImage": {STATUS: {"S": [SessionStatus.DELETING]}}},
}
# A record marked DELETING (by DELETE /memories/records/{id}).
RECORD_DELETING_FILTER: dict[str, Any] = {
    "eventName": ["MODIFY"],
    "dynamodb": {"NewImage": {STATUS: {"S": [RecordStatus.DELETING]}}},
}
# A record DynamoDB's TTL deleted (its expiry passed): the purge removes its index entries,
# named by the old image. Only the service's own deletes: the API's are purged in the request.
# Only records (every one has a type): a statement's claim expiring has nothing to purge.
RECORD_EXPIRED_FILTER: dict[str, Any] = {
    "eventName": ["REMOVE"],
    "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
    "dynamodb": {"OldImage": {"type": {"S": [t.value for t in RecordType]}}},
}
# A user whose forget request still has namespaces to purge.
USER_PURGE_FILTER: dict[str, Any] = {
    "eventName": ["INSERT", "MODIFY"],
    "dynamodb": {"NewImage": {PURGE_STATE: {"S": [PurgeState.PENDING]}}},
}


class StreamTrigger(NamedTuple):
    """One event source mapping: which table's stream runs which handler, with which filters (a
    record matching any of them goes through), batch size and retries. CDK deploys these and
    local mode's poller runs them."""

    name: str
    table: TableSpec
    handler: str
    filters: tuple[dict[str, Any], ...]
    batch_size: int
    # The function's timeout: what a run has before it must hand over to a next invocation.
    timeout_seconds: int
    # Retries after the first attempt. Consolidation marks a session FAILED on its third
    # failed attempt, so its records stop failing before these run out.
    retry_attempts: int = 3


CONSOLIDATION_TRIGGER = StreamTrigger(
    name="consolidate",
    table=SESSIONS,
    handler="handlers.consolidate.handler",
    filters=(SESSION_ENDED_FILTER, CONSOLIDATION_CONTINUE_FILTER),
    batch_size=5,  # each session is a few model calls
    timeout_seconds=300,
)
COMPACTION_TRIGGER = StreamTrigger(
    name="compact",
    table=CONVERSATIONS,
    handler="handlers.compact.handler",
    filters=(TURN_INSERTED_FILTER,),
    timeout_seconds=120,  # an extension of the rolling summary: at most 2 rounds of calls
    batch_size=20,  # most records only find the session below the threshold
)
# One purge function serves the three purge triggers (deleted sessions, forget requests,
# deleted or expired records): its handler and its timeout are that function's.
PURGE_HANDLER = "handlers.purge.handler"
PURGE_TIMEOUT_SECONDS = 300


def _purge_trigger(
    name: str, table: TableSpec, filters: tuple[dict[str, Any], ...], batch_size: int
) -> StreamTrigger:
    """A trigger of the purge function, on TABLE's records that match FILTERS."""
    return StreamTrigger(name, table, PURGE_HANDLER, filters, batch_size, PURGE_TIMEOUT_SECONDS)


SESSION_PURGE_TRIGGER = _purge_trigger("purge-session", SESSIONS, (SESSION_DELETING_FILTER,), 10)
# One forget request can mean thousands of sessions to mark: one at a time.
USER_PURGE_TRIGGER = _purge_trigger("purge-user", USERS, (USER_PURGE_FILTER,), 1)
RECORD_PURGE_TRIGGER = _purge_trigger(
    "purge-record", RECORDS, (RECORD_DELETING_FILTER, RECORD_EXPIRED_FILTER), 10
)
STREAM_TRIGGERS: tuple[StreamTrigger, ...] = (
    CONSOLIDATION_TRIGGER,
    COMPACTION_TRIGGER,
    SESSION_PURGE_TRIGGER,
    USER_PURGE_TRIGGER,
    RECORD_PURGE_TRIGGER,
)
