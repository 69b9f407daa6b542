"""What the DynamoDB adapter's parts share: the client, the tables' names, keys, batched
reads and writes, pages, and the hand-off conditions of every write that depends on it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from chatmemory import schema
from chatmemory.adapters.dynamodb.client import Guarded, batch_write
from chatmemory.adapters.dynamodb.tokens import decode_token, page_token
from chatmemory.clock import utc_now
from chatmemory.domain import Handoff, Page
from chatmemory.errors import BadRequest, ShortTermMemoryUnavailable
from chatmemory.schema import IDLE_BUCKET, OPEN_SHARD, SessionStatus

# --- hand-off to a person: the expressions every write that depends on it shares ------------

# What leaves a session with its hand-off (a hand-back, an end, a delete); handoff_turn stays.
_HANDOFF_CLEARED = ", ".join(
    (
        schema.HANDOFF_QUEUE,
        "handoff_state",
        "handoff_reason",
        schema.HANDOFF_AT,
        "handoff_agent",
        "handoff_note",
    )
)


def _handoff_condition(handed_off: bool | None) -> str:
    """The part of a write's condition that requires the session to be handed to a person
    (True), with the bot (False) or either (None); see domain.needs_handoff."""
    if handed_off is None:
        return ""
    test = "attribute_exists" if handed_off else "attribute_not_exists"
    return f" AND {test}({schema.HANDOFF_QUEUE})"


def _handoff_change(handoff: Handoff, sets: list[str], values: dict[str, Any]) -> list[str]:
    """Add a turn's hand-off change to its session update (SET parts and values, in place);
    returns what it REMOVEs."""
    values[":hq"] = {"S": handoff.state}
    sets += [f"{schema.HANDOFF_QUEUE} = :hq", "handoff_state = :hq"]
    if handoff.agent:
        values[":hg"] = {"S": handoff.agent}
        sets.append("handoff_agent = :hg")
    if handoff.reason is None:
        return []
    values.update({":hr": {"S": handoff.reason}, ":hat": {"S": handoff.at or ""}})
    sets += ["handoff_reason = :hr", f"{schema.HANDOFF_AT} = :hat", "handoff_turn = :n1"]
    # Out of the sweeper's index while a person has the session.
    sets[:] = [part for part in sets if not part.startswith(f"{IDLE_BUCKET} =")]
    values.pop(":bucket", None)
    # A hand-off by a turn (/human, a rule) has no note: its text is the turn's.
    return [OPEN_SHARD, IDLE_BUCKET, "handoff_note"] + ([] if handoff.agent else ["handoff_agent"])


# Each session status as the expressions of a session's writes name it (`#s = :open`).
_STATUS_VALUES = {f":{status.lower()}": {"S": status.value} for status in SessionStatus}


def _session_key(session_id: str) -> dict[str, Any]:
    return {schema.SESSION_ID: {"S": session_id}}


def _turn_key(session_id: str, turn: int) -> dict[str, Any]:
    return {schema.SESSION_ID: {"S": session_id}, schema.TURN: {"N": str(turn)}}


def _user_key(user_id: str) -> dict[str, Any]:
    return {schema.USER_ID: {"S": user_id}}


def _record_key(owner: str, record_id: str) -> dict[str, Any]:
    return {schema.USER_ID: {"S": owner}, schema.RECORD_ID: {"S": record_id}}


class DynamoTables:
    """The client and the physical table names (from the deployment) every part uses, and the
    batched reads, writes and pages they share."""

    def __init__(
        self,
        client: Any,
        sessions_table: str,
        conversations_table: str,
        users_table: str = schema.USERS.logical_name,
        records_table: str = schema.RECORDS.logical_name,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._db = Guarded(client)
        # Records expire by this clock (MemoryRecord.expired): reads hide an expired record
        # from its expiry on, before DynamoDB's TTL deletes it.
        self.clock = clock
        self._sessions = sessions_table
        self._turns = conversations_table
        self._users = users_table
        self._records = records_table

    def _session_update(
        self,
        session_id: str,
        update: str,
        condition: str,
        values: dict[str, Any] | None = None,
        names: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """The parameters of an UpdateItem of one session item on `condition`: `#s` names its
        status, and each status the expressions name (`:open`, `:ended`...) has its value."""
        said = f"{update} {condition}"
        statuses = {k: v for k, v in _STATUS_VALUES.items() if re.search(rf"{k}\b", said)}
        return {
            "TableName": self._sessions,
            "Key": _session_key(session_id),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#s": schema.STATUS, **(names or {})},
            "ExpressionAttributeValues": {**statuses, **(values or {})},
        }

    def _batch_get(
        self,
        keys: dict[str, list[dict[str, Any]]],
        *,
        projection: str | None = None,
        names: dict[str, str] | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """BatchGetItem with strongly consistent reads, unprocessed keys asked again."""
        request: dict[str, Any] = {}
        for table, table_keys in keys.items():
            if not table_keys:
                continue
            spec: dict[str, Any] = {"Keys": table_keys, "ConsistentRead": True}
            if projection:
                spec["ProjectionExpression"] = projection
            if names:
                spec["ExpressionAttributeNames"] = names
            request[table] = spec
        found: dict[str, list[dict[str, Any]]] = {}
        if not request:
            return found
        for attempt in range(8):
            answer = self._db.batch_get_item(RequestItems=request)
            for table, items in answer.get("Responses", {}).items():
                found.setdefault(table, []).extend(items)
            request = answer.get("UnprocessedKeys") or {}
            if not request:
                return found
            time.sleep(min(0.05 * 2**attempt, 1.0))
        raise ShortTermMemoryUnavailable("DynamoDB kept keys unprocessed; retry the request")

    def _page(
        self,
        kwargs: dict[str, Any],
        next_token: str | None,
        key: dict[str, str],
        partition: tuple[str, str],
        convert: Callable[[dict[str, Any]], Any],
    ) -> Page:
        """One page of a Query from `next_token`, which must belong to the same partition (a
        token of another owner or session is refused)."""
        if next_token:
            start = decode_token(next_token, key)
            name, value = partition
            if start[name] != {"S": value}:
                raise BadRequest("next_token is not valid")
            kwargs["ExclusiveStartKey"] = start
        answer = self._db.query(**kwargs)
        return Page(
            items=[convert(i) for i in answer.get("Items", [])], next_token=page_token(answer)
        )

    def _partition(
        self, table: str, key: str, value: str, convert: Callable[[dict[str, Any]], Any]
    ) -> Iterator[Any]:
        """Every item of one partition, page by page, strongly consistent."""
        for page in self._db.get_paginator("query").paginate(
            TableName=table,
            KeyConditionExpression=f"{key} = :k",
            ExpressionAttributeValues={":k": {"S": value}},
            ConsistentRead=True,
        ):
            for item in page.get("Items", []):
                yield convert(item)

    def _batch_write(self, table: str, requests: Iterable[dict[str, Any]]) -> None:
        batch_write(self._db, table, requests)
