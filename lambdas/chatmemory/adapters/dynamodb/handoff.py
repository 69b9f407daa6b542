"""Hand-off to a person: hand off and hand back (the sessions table), the agents' queue (its
sparse index) and the turns marked for an agent (services/conversation/handoff.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from chatmemory import schema
from chatmemory.adapters.dynamodb.client import is_conditional_failure, transact
from chatmemory.adapters.dynamodb.codec import (
    deserialize,
    idle_bucket,
    open_shard,
    session_from_item,
    user_from_item,
)
from chatmemory.adapters.dynamodb.tables import (
    _HANDOFF_CLEARED,
    DynamoTables,
    _handoff_condition,
    _session_key,
    _turn_key,
    _user_key,
)
from chatmemory.domain import Page, Session, caller_of
from chatmemory.schema import (
    IDLE_BUCKET,
    LAST_ACTIVE_AT,
    OPEN_SHARD,
    SESSION_ID,
    USER_ID,
    HandoffState,
    SessionStatus,
)


class DynamoHandoffStore(DynamoTables):
    """ports.HandoffStore on the sessions and conversations tables."""

    def _updated_session(self, request: dict[str, Any]) -> Session | None:
        """A conditional UpdateItem of a session item (DynamoTables._session_update): the
        session as written, or None when its condition failed."""
        try:
            answer = self._db.update_item(**request, ReturnValues="ALL_NEW")
        except ClientError as error:
            if is_conditional_failure(error):
                return None
            raise
        return session_from_item(answer["Attributes"])

    def hand_off(
        self, session_id: str, *, reason: str, at: str, note: str | None = None
    ) -> Session | None:
        noted = {":note": {"S": note}} if note else {}
        update = (
            "SET #q = :state, handoff_state = :state, handoff_reason = :reason, "
            "#hat = :at, handoff_turn = num_turns"
            + (", handoff_note = :note " if note else " ")
            + f"REMOVE handoff_agent, {OPEN_SHARD}, {IDLE_BUCKET}"
            + ("" if note else ", handoff_note")
        )
        values = {":state": {"S": HandoffState.WAITING}, ":reason": {"S": reason}, ":at": {"S": at}}
        condition = "#s = :open" + _handoff_condition(False)
        names = {"#q": schema.HANDOFF_QUEUE, "#hat": schema.HANDOFF_AT}
        return self._updated_session(
            self._session_update(session_id, update, condition, {**values, **noted}, names)
        )

    def hand_back(self, session_id: str, *, at: str) -> Session | None:
        update = (
            f"SET {LAST_ACTIVE_AT} = :at, {OPEN_SHARD} = :shard, {IDLE_BUCKET} = :bucket "
            f"REMOVE {_HANDOFF_CLEARED}"
        )
        values = {
            ":at": {"S": at},
            ":shard": {"S": open_shard(session_id)},
            ":bucket": {"S": idle_bucket(at)},
        }
        condition = "#s = :open" + _handoff_condition(True)
        return self._updated_session(self._session_update(session_id, update, condition, values))

    def handoff_queue(self, state: str, limit: int, next_token: str | None) -> Page[Session]:
        """A page of the sparse hand-off index, checked against the tables (the index is
        eventually consistent: a session handed back or deleted a moment ago is left out, and
        so is one of a user who forgot everything since: its purge may not have begun)."""
        kwargs: dict[str, Any] = {
            "TableName": self._sessions,
            "IndexName": schema.HANDOFF_SESSIONS_INDEX.name,
            "KeyConditionExpression": "#q = :q",
            "ExpressionAttributeNames": {"#q": schema.HANDOFF_QUEUE},
            "ExpressionAttributeValues": {":q": {"S": state}},
            "ScanIndexForward": True,  # longest waiting first
            "Limit": limit,
            "ProjectionExpression": SESSION_ID,
        }
        key = {SESSION_ID: "S", schema.HANDOFF_QUEUE: "S", schema.HANDOFF_AT: "S"}
        page = self._page(
            kwargs, next_token, key, (schema.HANDOFF_QUEUE, state), lambda i: i[SESSION_ID]["S"]
        )
        ids: list[str] = list(page.items)
        items = self._batch_get({self._sessions: [_session_key(i) for i in ids]}).get(
            self._sessions, []
        )
        current = {s.session_id: s for s in map(session_from_item, items)}
        # The owners' current keys (a caller never seen has no item: the key is their id).
        callers = sorted({caller_of(s.user_id) for s in current.values()})
        users = self._batch_get({self._users: [_user_key(c) for c in callers]})
        keys = {
            user.user_id: user.owner
            for user in (
                user_from_item(deserialize(i)[USER_ID], i) for i in users.get(self._users, [])
            )
        }
        owners = {keys.get(c, c) for c in callers}
        found = [
            current[i]
            for i in ids
            if i in current
            and current[i].status == SessionStatus.OPEN
            and current[i].handoff_state == state
            and current[i].user_id in owners
        ]
        return Page(items=found, next_token=page.next_token)

    def mark_for_agent(self, session_id: str, turns: Sequence[int]) -> None:
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self._turns,
                    "Key": _turn_key(session_id, number),
                    "UpdateExpression": "SET for_agent = :true REMOVE pending",
                    "ConditionExpression": "pending = :true AND attribute_not_exists(answered_by)",
                    "ExpressionAttributeValues": {":true": {"BOOL": True}},
                }
            }
            for number in dict.fromkeys(turns)
        ]
        items.append(
            {
                "ConditionCheck": {
                    "TableName": self._sessions,
                    "Key": _session_key(session_id),
                    "ConditionExpression": f"attribute_exists({schema.HANDOFF_QUEUE})",
                }
            }
        )
        transact(self._db, items, "the messages or the hand-off changed meanwhile")
