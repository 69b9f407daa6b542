"""Short-term memory on DynamoDB: the sessions, conversations and users tables of schema.py."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from chatmemory import schema
from chatmemory.adapters.dynamodb.client import (
    Guarded,
    is_conditional_failure,
    suppress_conditional,
)
from chatmemory.adapters.dynamodb.codec import (
    deserialize,
    idle_bucket,
    open_shard,
    record_from_item,
    record_to_item,
    serialize,
    serialize_value,
    session_from_item,
    session_to_item,
    turn_from_item,
    turn_to_item,
    user_from_item,
)
from chatmemory.adapters.dynamodb.tokens import decode_token, page_token
from chatmemory.clock import utc_now
from chatmemory.domain import (
    ClientAlias,
    Handoff,
    MemoryRecord,
    Page,
    PurgeEntry,
    Session,
    Turn,
    UserState,
    caller_of,
    message_key,
    needs_handoff,
    visible_to,
)
from chatmemory.errors import (
    BadRequest,
    Conflict,
    SessionNotFound,
    ShortTermMemoryUnavailable,
    TurnNotFound,
)
from chatmemory.schema import (
    IDLE_BUCKET,
    LAST_ACTIVE_AT,
    OPEN_SHARD,
    RECORD_ID,
    SESSION_ID,
    STARTED_AT,
    STATUS,
    TURN,
    USER_ID,
    VISIBLE_STATUSES,
    HandoffState,
    PurgeState,
    RecordStatus,
    SessionStatus,
    TurnOrigin,
)

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


def _session_key(session_id: str) -> dict[str, Any]:
    return {schema.SESSION_ID: {"S": session_id}}


def _turn_key(session_id: str, turn: int) -> dict[str, Any]:
    return {schema.SESSION_ID: {"S": session_id}, schema.TURN: {"N": str(turn)}}


def _user_key(user_id: str) -> dict[str, Any]:
    return {schema.USER_ID: {"S": user_id}}


def _record_key(owner: str, record_id: str) -> dict[str, Any]:
    return {schema.USER_ID: {"S": owner}, schema.RECORD_ID: {"S": record_id}}


class DynamoShortTermMemory:
    """SessionStore + TurnStore on the sessions, conversations and users tables (physical names
    from the deployment)."""

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

    # --- users ------------------------------------------------------------------------------

    def get_user(self, user_id: str) -> UserState:
        answer = self._db.get_item(
            TableName=self._users, Key=_user_key(user_id), ConsistentRead=True
        )
        return user_from_item(user_id, answer.get("Item"))

    def forget_user(self, user: UserState, at: str) -> UserState:
        entry = {"owner": user.owner, "requested_at": at, "state": PurgeState.PENDING}
        try:
            answer = self._db.update_item(
                TableName=self._users,
                Key=_user_key(user.user_id),
                UpdateExpression=(
                    "SET #g = :next, #p = list_append(if_not_exists(#p, :none), :entry), "
                    "#ps = :pending ADD #r :one"
                ),
                ConditionExpression=f"attribute_not_exists({USER_ID}) OR #g = :current",
                ExpressionAttributeNames={
                    "#g": schema.GENERATION,
                    "#p": schema.PURGES,
                    "#ps": schema.PURGE_STATE,
                    "#r": schema.PURGE_ROUND,
                },
                ExpressionAttributeValues={
                    ":next": {"N": str(user.generation + 1)},
                    ":current": {"N": str(user.generation)},
                    ":none": {"L": []},
                    ":entry": {"L": [serialize_value(entry)]},
                    ":pending": {"S": PurgeState.PENDING},
                    ":one": {"N": "1"},
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if is_conditional_failure(error):
                raise Conflict("another request forgot this user's memory meanwhile") from None
            raise
        return user_from_item(user.user_id, answer["Attributes"])

    def save_purges(self, user: UserState, purges: Sequence[PurgeEntry], *, handover: bool) -> bool:
        pending = any(p.state == PurgeState.PENDING for p in purges)
        update = "SET #p = :purges" + (", #ps = :pending" if pending else "")
        update += " ADD #r :one" + ("" if pending else " REMOVE #ps")
        values: dict[str, Any] = {
            ":purges": serialize_value([vars(p) for p in purges]),
            ":round": {"N": str(user.purge_round)},
            ":one": {"N": "1"},
        }
        if pending:
            values[":pending"] = {"S": PurgeState.PENDING}
        del handover  # any write of a PENDING user item starts the next invocation
        try:
            self._db.update_item(
                TableName=self._users,
                Key=_user_key(user.user_id),
                UpdateExpression=update,
                ConditionExpression="#r = :round",
                ExpressionAttributeNames={
                    "#p": schema.PURGES,
                    "#ps": schema.PURGE_STATE,
                    "#r": schema.PURGE_ROUND,
                },
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True

    def pending_user_purges(self) -> list[str]:
        """Callers whose forget still has keys to purge (an operator's scan: the redrive)."""
        ids: list[str] = []
        for page in self._db.get_paginator("scan").paginate(
            TableName=self._users,
            FilterExpression="attribute_exists(#ps)",
            ExpressionAttributeNames={"#ps": schema.PURGE_STATE},
            ProjectionExpression=USER_ID,
        ):
            ids += [item[USER_ID]["S"] for item in page.get("Items", [])]
        return ids

    # --- sessions ---------------------------------------------------------------------------

    def create_session(
        self,
        session: Session,
        *,
        user: UserState,
        end: Sequence[str] = (),
        ended_at: str = "",
        alias: ClientAlias | None = None,
    ) -> None:
        actions: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._sessions,
                    "Item": serialize(session_to_item(session)),
                    "ConditionExpression": f"attribute_not_exists({SESSION_ID})",
                }
            },
            {
                # A forget that committed after the caller's state was read fails the put:
                # no session can be born into a namespace that is being purged.
                "ConditionCheck": {
                    "TableName": self._users,
                    "Key": _user_key(user.user_id),
                    "ConditionExpression": f"attribute_not_exists({USER_ID}) OR #g = :g",
                    "ExpressionAttributeNames": {"#g": schema.GENERATION},
                    "ExpressionAttributeValues": {":g": {"N": str(user.generation)}},
                }
            },
        ]
        actions += [self._end_action(session_id, ended_at) for session_id in end]
        if alias is not None:
            actions.append(self._alias_action(alias, session.session_id))
        try:
            self._db.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                raise Conflict(
                    "the caller's sessions changed while this one was created; retry"
                ) from None
            raise

    def _alias_action(self, alias: ClientAlias, session_id: str) -> dict[str, Any]:
        """The alias's put, conditional on it being unwritten or still naming what the caller
        read (two PUTs of one new id: one creates, the other reads the winner's session)."""
        put: dict[str, Any] = {
            "TableName": self._sessions,
            "Item": {
                SESSION_ID: {"S": schema.alias_key(alias.caller, alias.client_id)},
                schema.ALIAS_TARGET: {"S": session_id},
            },
        }
        if alias.replaces is None:
            put["ConditionExpression"] = f"attribute_not_exists({SESSION_ID})"
        else:
            put["ConditionExpression"] = "#a = :replaced"
            put["ExpressionAttributeNames"] = {"#a": schema.ALIAS_TARGET}
            put["ExpressionAttributeValues"] = {":replaced": {"S": alias.replaces}}
        return {"Put": put}

    def get_alias(self, caller: str, client_id: str) -> str | None:
        answer = self._db.get_item(
            TableName=self._sessions,
            Key=_session_key(schema.alias_key(caller, client_id)),
            ConsistentRead=True,
        )
        item = answer.get("Item")
        return item[schema.ALIAS_TARGET]["S"] if item else None

    def drop_alias(self, caller: str, client_id: str, session_id: str) -> None:
        with suppress_conditional():  # it names another session since (or is gone)
            self._db.delete_item(
                TableName=self._sessions,
                Key=_session_key(schema.alias_key(caller, client_id)),
                ConditionExpression="#a = :target",
                ExpressionAttributeNames={"#a": schema.ALIAS_TARGET},
                ExpressionAttributeValues={":target": {"S": session_id}},
            )

    def _end_action(self, session_id: str, ended_at: str) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._sessions,
                "Key": _session_key(session_id),
                "UpdateExpression": (
                    "SET #s = :ended, ended_at = :t, version = version + :one "
                    f"REMOVE {OPEN_SHARD}, {IDLE_BUCKET}, {_HANDOFF_CLEARED}"
                ),
                "ConditionExpression": "#s = :open",
                "ExpressionAttributeNames": {"#s": schema.STATUS},
                "ExpressionAttributeValues": {
                    ":ended": {"S": SessionStatus.ENDED},
                    ":open": {"S": SessionStatus.OPEN},
                    ":t": {"S": ended_at},
                    ":one": {"N": "1"},
                },
            }
        }

    def get_session(self, session_id: str, *, consistent: bool = True) -> Session | None:
        answer = self._db.get_item(
            TableName=self._sessions,
            Key=_session_key(session_id),
            ConsistentRead=consistent,
        )
        item = answer.get("Item")
        return session_from_item(item) if item else None

    def get_owned(self, session_id: str, user_id: str) -> tuple[Session | None, UserState]:
        """One BatchGetItem for the session and its caller's state (both strongly consistent):
        a turn pays the caller's generation check without an extra round trip."""
        found = self._batch_get(
            {
                self._sessions: [_session_key(session_id)],
                self._users: [_user_key(user_id)],
            }
        )
        sessions = found.get(self._sessions) or []
        users = found.get(self._users) or []
        session = session_from_item(sessions[0]) if sessions else None
        return session, user_from_item(user_id, users[0] if users else None)

    def live_sessions(self, owner: str, session_ids: Sequence[str]) -> set[str]:
        unique = list(dict.fromkeys(session_ids))
        live: set[str] = set()
        for start in range(0, len(unique), 100):
            keys = [_session_key(sid) for sid in unique[start : start + 100]]
            items = self._batch_get(
                {self._sessions: keys},
                projection=f"{SESSION_ID}, {USER_ID}, #s",
                names={"#s": schema.STATUS},
            ).get(self._sessions, [])
            for item in items:
                data = deserialize(item)
                if visible_to(owner, data.get(USER_ID), data.get(STATUS)):
                    live.add(data[SESSION_ID])
        return live

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

    def list_sessions(self, owner: str, limit: int, next_token: str | None) -> Page:
        """A page of the user index, checked against the table: the index is eventually
        consistent, and a session deleted a moment ago must not be listed."""
        page = self.sessions_of_owner(owner, limit, next_token)
        ids = [s.session_id for s in page.items]
        items = self._batch_get({self._sessions: [_session_key(i) for i in ids]}).get(
            self._sessions, []
        )
        current = {s.session_id: s for s in map(session_from_item, items)}
        visible = [
            current[i]
            for i in ids
            if i in current and visible_to(owner, current[i].user_id, current[i].status)
        ]
        return Page(items=visible, next_token=page.next_token)

    def sessions_of_owner(self, owner: str, limit: int, next_token: str | None) -> Page:
        kwargs: dict[str, Any] = {
            "TableName": self._sessions,
            "IndexName": schema.USER_SESSIONS_INDEX.name,
            "KeyConditionExpression": f"{USER_ID} = :u",
            "ExpressionAttributeValues": {":u": {"S": owner}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if next_token:
            start = decode_token(next_token, {SESSION_ID: "S", USER_ID: "S", STARTED_AT: "S"})
            if start[USER_ID] != {"S": owner}:
                raise BadRequest("next_token is not valid")
            kwargs["ExclusiveStartKey"] = start
        answer = self._db.query(**kwargs)
        return Page(
            items=[session_from_item(i) for i in answer.get("Items", [])],
            next_token=page_token(answer),
        )

    def open_sessions_of(self, owner: str) -> list[Session]:
        sessions: list[Session] = []
        kwargs: dict[str, Any] = {
            "TableName": self._sessions,
            "IndexName": schema.USER_SESSIONS_INDEX.name,
            "KeyConditionExpression": f"{USER_ID} = :u",
            "FilterExpression": "#s = :open",
            "ExpressionAttributeNames": {"#s": schema.STATUS},
            "ExpressionAttributeValues": {
                ":u": {"S": owner},
                ":open": {"S": SessionStatus.OPEN},
            },
        }
        for page in self._db.get_paginator("query").paginate(**kwargs):
            sessions += [session_from_item(i) for i in page.get("Items", [])]
        return sessions

    def end_session(
        self, session_id: str, ended_at: str, *, idle_before: str | None = None
    ) -> Session:
        """OPEN -> ENDED; with idle_before, only if the session is still idle since then."""
        action = self._end_action(session_id, ended_at)["Update"]
        if idle_before is not None:
            # The sweeper never ends a session handed to a person (who may answer hours later).
            action["ConditionExpression"] += " AND last_active_at < :idle"
            action["ConditionExpression"] += _handoff_condition(False)
            action["ExpressionAttributeValues"][":idle"] = {"S": idle_before}
        try:
            answer = self._db.update_item(**action, ReturnValues="ALL_NEW")
        except ClientError as error:
            if not is_conditional_failure(error):
                raise
            found = self.get_session(session_id)
            if found is None or found.status not in VISIBLE_STATUSES:
                raise SessionNotFound(f"session {session_id} not found") from None
            raise Conflict(f"session {session_id} is not open") from None
        return session_from_item(answer["Attributes"])

    def stale_sessions(self, state: str, shard: int, before: str, limit: int) -> list[str]:
        """Sessions in `state` of one shard of the sparse index whose activity falls in a bucket
        wholly before `before` (the caller's conditional write checks the exact time)."""
        answer = self._db.query(
            TableName=self._sessions,
            IndexName=schema.OPEN_SESSIONS_INDEX.name,
            KeyConditionExpression=f"{OPEN_SHARD} = :shard AND {IDLE_BUCKET} < :bucket",
            ExpressionAttributeValues={
                ":shard": {"S": schema.sweep_shard(state, shard)},
                ":bucket": {"S": idle_bucket(before)},
            },
            Limit=limit,
        )
        return [item[SESSION_ID]["S"] for item in answer.get("Items", [])]

    def record_consolidation_failure(self, session_id: str, reason: str) -> int | None:
        try:
            answer = self._db.update_item(
                TableName=self._sessions,
                Key=_session_key(session_id),
                UpdateExpression="SET failure_reason = :r ADD consolidation_attempts :one",
                ConditionExpression="#s IN (:ended, :failed)",
                ExpressionAttributeNames={"#s": schema.STATUS},
                ExpressionAttributeValues={
                    ":r": {"S": reason},
                    ":one": {"N": "1"},
                    ":ended": {"S": SessionStatus.ENDED},
                    ":failed": {"S": SessionStatus.FAILED},
                },
                ReturnValues="UPDATED_NEW",
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return None  # deleted (or consolidated) meanwhile
            raise
        return int(answer["Attributes"]["consolidation_attempts"]["N"])

    def mark_failed(self, session_id: str, reason: str) -> None:
        self._set_status(
            session_id,
            SessionStatus.FAILED,
            {"failure_reason": reason},
            allowed=(SessionStatus.ENDED,),
        )

    def mark_consolidated(self, session_id: str, summary: str, at: str) -> bool:
        return self._set_status(
            session_id,
            SessionStatus.CONSOLIDATED,
            {"summary": summary, "consolidated_at": at, "consolidation_attempts": 0},
            allowed=(SessionStatus.ENDED, SessionStatus.FAILED),
            remove=(
                schema.CONSOLIDATION_STATE,
                "consolidation_cursor",
                "consolidation_summary",
                "consolidation_round",
            ),
        )

    def checkpoint_consolidation(
        self, session_id: str, *, expected_round: int, cursor: int, summary: str
    ) -> bool:
        try:
            self._db.update_item(
                TableName=self._sessions,
                Key=_session_key(session_id),
                UpdateExpression=(
                    "SET #state = :continue, consolidation_cursor = :cursor, "
                    "consolidation_summary = :summary, consolidation_round = :next"
                ),
                ConditionExpression=(
                    "#s IN (:ended, :failed) AND "
                    "(attribute_not_exists(consolidation_round) OR consolidation_round = :round)"
                ),
                ExpressionAttributeNames={"#s": STATUS, "#state": schema.CONSOLIDATION_STATE},
                ExpressionAttributeValues={
                    ":continue": {"S": schema.CONSOLIDATION_CONTINUE},
                    ":cursor": {"N": str(cursor)},
                    ":summary": {"S": summary},
                    ":round": {"N": str(expected_round)},
                    ":next": {"N": str(expected_round + 1)},
                    ":ended": {"S": SessionStatus.ENDED},
                    ":failed": {"S": SessionStatus.FAILED},
                },
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True

    def failed_sessions(self) -> list[str]:
        """FAILED sessions, for the redrive command (an operator's scan, not a request path)."""
        ids: list[str] = []
        for page in self._db.get_paginator("scan").paginate(
            TableName=self._sessions,
            FilterExpression="#s = :failed",
            ExpressionAttributeNames={"#s": schema.STATUS},
            ExpressionAttributeValues={":failed": {"S": SessionStatus.FAILED}},
            ProjectionExpression=SESSION_ID,
        ):
            ids += [item[SESSION_ID]["S"] for item in page.get("Items", [])]
        return ids

    def reset_consolidation(self, session_id: str) -> None:
        with suppress_conditional():  # deleted meanwhile: nothing to redrive
            self._db.update_item(
                TableName=self._sessions,
                Key=_session_key(session_id),
                UpdateExpression="SET consolidation_attempts = :zero",
                ConditionExpression="#s = :failed",
                ExpressionAttributeNames={"#s": schema.STATUS},
                ExpressionAttributeValues={
                    ":zero": {"N": "0"},
                    ":failed": {"S": SessionStatus.FAILED},
                },
            )

    def forget_summary(self, session_id: str) -> None:
        with suppress_conditional():  # gone or being deleted: its records go with it
            self._db.update_item(
                TableName=self._sessions,
                Key=_session_key(session_id),
                UpdateExpression="SET summary_forgotten = :yes",
                ConditionExpression=f"attribute_exists({SESSION_ID}) AND #s <> :deleting",
                ExpressionAttributeNames={"#s": schema.STATUS},
                ExpressionAttributeValues={
                    ":yes": {"BOOL": True},
                    ":deleting": {"S": SessionStatus.DELETING},
                },
            )

    def update_running_summary(
        self, session_id: str, summary: str, through_turn: int, expected_through: int
    ) -> bool:
        """Advance the rolling summary only if nobody advanced it meanwhile (and the session is
        not being deleted: a write must never bring a purged item back)."""
        try:
            self._db.update_item(
                TableName=self._sessions,
                Key=_session_key(session_id),
                UpdateExpression="SET running_summary = :s, summary_through_turn = :t",
                ConditionExpression="#st IN (:open, :ended) AND summary_through_turn = :e",
                ExpressionAttributeNames={"#st": schema.STATUS},
                ExpressionAttributeValues={
                    ":s": {"S": summary},
                    ":t": {"N": str(through_turn)},
                    ":e": {"N": str(expected_through)},
                    ":open": {"S": SessionStatus.OPEN},
                    ":ended": {"S": SessionStatus.ENDED},
                },
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True

    def _set_status(
        self,
        session_id: str,
        status: str,
        extra: dict[str, Any],
        *,
        allowed: tuple[str, ...],
        remove: tuple[str, ...] = (),
    ) -> bool:
        names = {"#s": schema.STATUS, **{f"#{k}": k for k in (*extra, *remove)}}
        values = {
            ":status": {"S": status},
            **{f":{k}": serialize_value(v) for k, v in extra.items()},
            **{f":a{i}": {"S": a} for i, a in enumerate(allowed)},
        }
        allowed_expr = ", ".join(f":a{i}" for i in range(len(allowed)))
        try:
            self._db.update_item(
                TableName=self._sessions,
                Key=_session_key(session_id),
                UpdateExpression="SET #s = :status, "
                + ", ".join(f"#{k} = :{k}" for k in extra)
                + (" REMOVE " + ", ".join(f"#{k}" for k in remove) if remove else ""),
                ConditionExpression=f"#s IN ({allowed_expr})",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False  # moved on meanwhile (already consolidated, deleted)
            raise
        return True

    # --- deletion ---------------------------------------------------------------------------

    def mark_deleting(self, session_id: str, at: str) -> bool:
        try:
            self._db.update_item(
                TableName=self._sessions,
                Key=_session_key(session_id),
                UpdateExpression=(
                    f"SET #s = :deleting, deleting_at = :t, {OPEN_SHARD} = :shard, "
                    f"{IDLE_BUCKET} = :bucket, version = version + :one "
                    f"REMOVE {_HANDOFF_CLEARED}"  # out of the agents' queue at once
                ),
                ConditionExpression=f"attribute_exists({SESSION_ID}) AND #s <> :deleting",
                ExpressionAttributeNames={"#s": schema.STATUS},
                ExpressionAttributeValues={
                    ":deleting": {"S": SessionStatus.DELETING},
                    ":t": {"S": at},
                    ":shard": {"S": open_shard(session_id, SessionStatus.DELETING)},
                    ":bucket": {"S": idle_bucket(at)},
                    ":one": {"N": "1"},
                },
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True

    def continue_purge(self, session_id: str, at: str) -> None:
        with suppress_conditional():  # already purged
            self._db.update_item(
                TableName=self._sessions,
                Key=_session_key(session_id),
                UpdateExpression=f"SET {IDLE_BUCKET} = :bucket ADD purge_round :one",
                ConditionExpression="#s = :deleting",
                ExpressionAttributeNames={"#s": schema.STATUS},
                ExpressionAttributeValues={
                    ":deleting": {"S": SessionStatus.DELETING},
                    ":bucket": {"S": idle_bucket(at)},
                    ":one": {"N": "1"},
                },
            )

    def remove_session(self, session_id: str) -> None:
        with suppress_conditional():  # already removed by a concurrent purge
            self._db.delete_item(
                TableName=self._sessions,
                Key=_session_key(session_id),
                ConditionExpression="#s = :deleting",
                ExpressionAttributeNames={"#s": schema.STATUS},
                ExpressionAttributeValues={":deleting": {"S": SessionStatus.DELETING}},
            )

    def finish_import(self, session_id: str, last_active_at: str) -> None:
        try:
            self._db.update_item(
                TableName=self._sessions,
                Key=_session_key(session_id),
                UpdateExpression=(
                    f"SET #s = :open, {LAST_ACTIVE_AT} = :active, {OPEN_SHARD} = :shard, "
                    f"{IDLE_BUCKET} = :bucket"
                ),
                ConditionExpression="#s = :importing",
                ExpressionAttributeNames={"#s": schema.STATUS},
                ExpressionAttributeValues={
                    ":open": {"S": SessionStatus.OPEN},
                    ":importing": {"S": SessionStatus.IMPORTING},
                    ":shard": {"S": open_shard(session_id)},
                    ":bucket": {"S": idle_bucket(last_active_at)},
                    ":active": {"S": last_active_at},
                },
            )
        except ClientError as error:
            if is_conditional_failure(error):
                raise Conflict("the import was abandoned meanwhile; import again") from None
            raise

    # --- hand-off to a person (services/handoff.py) ------------------------------------------

    def _session_update(self, **update: Any) -> Session | None:
        """A conditional UpdateItem of a session item: the session as written, or None when
        its condition failed."""
        try:
            answer = self._db.update_item(
                TableName=self._sessions, ReturnValues="ALL_NEW", **update
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return None
            raise
        return session_from_item(answer["Attributes"])

    def hand_off(
        self, session_id: str, *, reason: str, at: str, note: str | None = None
    ) -> Session | None:
        noted = {":note": {"S": note}} if note else {}
        return self._session_update(
            Key=_session_key(session_id),
            UpdateExpression=(
                "SET #q = :state, handoff_state = :state, handoff_reason = :reason, "
                "#hat = :at, handoff_turn = num_turns"
                + (", handoff_note = :note " if note else " ")
                + f"REMOVE handoff_agent, {OPEN_SHARD}, {IDLE_BUCKET}"
                + ("" if note else ", handoff_note")
            ),
            ConditionExpression="#s = :open" + _handoff_condition(False),
            ExpressionAttributeNames={
                "#s": STATUS,
                "#q": schema.HANDOFF_QUEUE,
                "#hat": schema.HANDOFF_AT,
            },
            ExpressionAttributeValues={
                ":state": {"S": HandoffState.WAITING},
                ":reason": {"S": reason},
                ":at": {"S": at},
                ":open": {"S": SessionStatus.OPEN},
                **noted,
            },
        )

    def hand_back(self, session_id: str, *, at: str) -> Session | None:
        return self._session_update(
            Key=_session_key(session_id),
            UpdateExpression=(
                f"SET {LAST_ACTIVE_AT} = :at, {OPEN_SHARD} = :shard, {IDLE_BUCKET} = :bucket "
                f"REMOVE {_HANDOFF_CLEARED}"
            ),
            ConditionExpression="#s = :open" + _handoff_condition(True),
            ExpressionAttributeNames={"#s": STATUS},
            ExpressionAttributeValues={
                ":at": {"S": at},
                ":shard": {"S": open_shard(session_id)},
                ":bucket": {"S": idle_bucket(at)},
                ":open": {"S": SessionStatus.OPEN},
            },
        )

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
        try:
            self._db.transact_write_items(TransactItems=items)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                raise Conflict("the messages or the hand-off changed meanwhile") from None
            raise

    # --- records ----------------------------------------------------------------------------

    def put_record(self, record: MemoryRecord) -> bool:
        try:
            self._db.put_item(
                TableName=self._records,
                Item=serialize(record_to_item(record)),
                ConditionExpression=f"attribute_not_exists({RECORD_ID})",
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True

    def get_record(self, owner: str, record_id: str) -> MemoryRecord | None:
        answer = self._db.get_item(
            TableName=self._records, Key=_record_key(owner, record_id), ConsistentRead=True
        )
        item = answer.get("Item")
        record = record_from_item(item) if item else None
        return None if record is None or record.expired(self.clock()) else record

    def expired_record(self, owner: str, record_id: str) -> MemoryRecord | None:
        answer = self._db.get_item(
            TableName=self._records, Key=_record_key(owner, record_id), ConsistentRead=True
        )
        item = answer.get("Item")
        record = record_from_item(item) if item else None
        return record if record is not None and record.expired(self.clock()) else None

    def remove_expired_record(self, owner: str, record_id: str, version: int) -> bool:
        try:
            self._db.delete_item(
                TableName=self._records,
                Key=_record_key(owner, record_id),
                ConditionExpression="version = :v AND #e <= :now",
                ExpressionAttributeNames={"#e": schema.EXPIRES_AT},
                ExpressionAttributeValues={
                    ":v": {"N": str(version)},
                    ":now": {"N": str(int(self.clock().timestamp()))},
                },
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True

    def list_records(
        self,
        owner: str,
        record_type: str | None,
        limit: int,
        next_token: str | None,
        namespace_prefix: tuple[str, ...] | None = None,
    ) -> Page[MemoryRecord]:
        names = {"#s": STATUS, "#e": schema.EXPIRES_AT}
        values: dict[str, Any] = {
            ":u": {"S": owner},
            ":deleting": {"S": RecordStatus.DELETING},
            ":now": {"N": str(int(self.clock().timestamp()))},
        }
        condition = "#s <> :deleting AND (attribute_not_exists(#e) OR #e > :now)"
        if record_type:
            names["#type"] = "type"
            values[":type"] = {"S": record_type}
            condition += " AND #type = :type"
        if namespace_prefix:
            # The namespace's path begins with the prefix's (schema.namespace_path); the
            # profile's own records have none (schema.PROFILE_NAMESPACE).
            names["#ns"] = schema.RECORD_NAMESPACE
            values[":ns"] = {"S": schema.namespace_path(namespace_prefix)}
            if tuple(namespace_prefix) == schema.PROFILE_NAMESPACE:
                condition += " AND (attribute_not_exists(#ns) OR begins_with(#ns, :ns))"
            else:
                condition += " AND begins_with(#ns, :ns)"
        kwargs: dict[str, Any] = {
            "TableName": self._records,
            "KeyConditionExpression": f"{USER_ID} = :u",
            "FilterExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,  # record ids begin with their time: newest first
            "Limit": limit,
            "ConsistentRead": True,
        }
        key = {USER_ID: "S", RECORD_ID: "S"}
        return self._page(kwargs, next_token, key, (USER_ID, owner), record_from_item)

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

    def records_of_owner(
        self, owner: str, *, include_expired: bool = False
    ) -> Iterator[MemoryRecord]:
        now = self.clock()
        for record in self._partition(self._records, USER_ID, owner, record_from_item):
            if include_expired or not record.expired(now):
                yield record

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

    def save_record(self, record: MemoryRecord) -> bool:
        expected = record.version
        record.version = expected + 1
        try:
            self._db.put_item(
                TableName=self._records,
                Item=serialize(record_to_item(record)),
                ConditionExpression="version = :v AND #s <> :deleting",
                ExpressionAttributeNames={"#s": STATUS},
                ExpressionAttributeValues={
                    ":v": {"N": str(expected)},
                    ":deleting": {"S": RecordStatus.DELETING},
                },
            )
        except ClientError as error:
            record.version = expected
            if is_conditional_failure(error):
                return False
            raise
        return True

    def mark_record_deleting(self, owner: str, record_id: str) -> bool:
        try:
            self._db.update_item(
                TableName=self._records,
                Key=_record_key(owner, record_id),
                UpdateExpression="SET #s = :deleting ADD version :one",
                ConditionExpression=f"attribute_exists({RECORD_ID}) AND #s <> :deleting",
                ExpressionAttributeNames={"#s": STATUS},
                ExpressionAttributeValues={
                    ":deleting": {"S": RecordStatus.DELETING},
                    ":one": {"N": "1"},
                },
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True

    def remove_records(self, owner: str, record_ids: Sequence[str]) -> None:
        self._batch_write(
            self._records,
            ({"DeleteRequest": {"Key": _record_key(owner, rid)}} for rid in record_ids),
        )

    def remove_deleted_record(self, owner: str, record_id: str) -> bool:
        try:
            self._db.delete_item(
                TableName=self._records,
                Key=_record_key(owner, record_id),
                ConditionExpression="#s = :deleting",
                ExpressionAttributeNames={"#s": STATUS},
                ExpressionAttributeValues={":deleting": {"S": RecordStatus.DELETING}},
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True

    def live(
        self, owner: str, session_ids: Sequence[str], record_ids: Sequence[str]
    ) -> tuple[set[str], dict[str, str]]:
        """One BatchGetItem (strongly consistent) over both tables, 100 keys a request."""
        keys = [(self._sessions, _session_key(s)) for s in dict.fromkeys(session_ids)]
        keys += [(self._records, _record_key(owner, r)) for r in dict.fromkeys(record_ids)]
        sessions: set[str] = set()
        records: dict[str, str] = {}
        for start in range(0, len(keys), 100):
            request: dict[str, list[dict[str, Any]]] = {}
            for table, key in keys[start : start + 100]:
                request.setdefault(table, []).append(key)
            found = self._batch_get(
                request,
                projection=f"{SESSION_ID}, {RECORD_ID}, {USER_ID}, #s, #e, #g",
                names={"#s": STATUS, "#e": schema.EXPIRES_AT, "#g": "generation"},
            )
            now = int(self.clock().timestamp())
            for item in found.get(self._sessions, []):
                data = deserialize(item)
                if visible_to(owner, data.get(USER_ID), data.get(STATUS)):
                    sessions.add(data[SESSION_ID])
            for item in found.get(self._records, []):
                data = deserialize(item)
                expires_at = data.get(schema.EXPIRES_AT)
                if data.get(STATUS) != RecordStatus.DELETING and (
                    expires_at is None or int(expires_at) > now
                ):
                    records[data[RECORD_ID]] = str(data.get("generation", ""))
        return sessions, records

    # --- turns ------------------------------------------------------------------------------

    def recent_turns(self, session_id: str, count: int) -> list[Turn]:
        if count <= 0:
            return []
        answer = self._db.query(
            TableName=self._turns,
            KeyConditionExpression=f"{SESSION_ID} = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
            ScanIndexForward=False,
            Limit=count,
            ConsistentRead=True,
        )
        return [turn_from_item(i) for i in reversed(answer.get("Items", []))]

    def get_turn(self, session_id: str, turn: int) -> Turn | None:
        answer = self._db.get_item(
            TableName=self._turns,
            Key=_turn_key(session_id, turn),
            ConsistentRead=True,
        )
        item = answer.get("Item")
        return turn_from_item(item) if item else None

    def list_turns(
        self, session_id: str, limit: int, next_token: str | None, ascending: bool
    ) -> Page:
        kwargs: dict[str, Any] = {
            "TableName": self._turns,
            "KeyConditionExpression": f"{SESSION_ID} = :s",
            "ExpressionAttributeValues": {":s": {"S": session_id}},
            "ScanIndexForward": ascending,
            "Limit": limit,
        }
        key = {SESSION_ID: "S", TURN: "N"}
        return self._page(kwargs, next_token, key, (SESSION_ID, session_id), turn_from_item)

    def turns_between(self, session_id: str, after: int, through: int) -> list[Turn]:
        """Turns after..through (exclusive, inclusive), oldest first; none for an empty range
        (DynamoDB refuses `BETWEEN a AND b` with a > b: a session without a turn asks for it)."""
        if through <= after:
            return []
        turns: list[Turn] = []
        for page in self._db.get_paginator("query").paginate(
            TableName=self._turns,
            KeyConditionExpression=f"{SESSION_ID} = :s AND #t BETWEEN :a AND :b",
            ExpressionAttributeNames={"#t": schema.TURN},
            ExpressionAttributeValues={
                ":s": {"S": session_id},
                ":a": {"N": str(after + 1)},
                ":b": {"N": str(through)},
            },
            ConsistentRead=True,
        ):
            turns += [turn_from_item(i) for i in page.get("Items", [])]
        return turns

    def all_turns(self, session_id: str) -> Iterator[Turn]:
        yield from self._partition(self._turns, SESSION_ID, session_id, turn_from_item)

    def append_turn(
        self,
        session: Session,
        turn: Turn,
        *,
        keep_message_ids: int,
        rename: str | None = None,
        at: str | None = None,
        stack: bool = False,
        handoff: Handoff | None = None,
    ) -> Session:
        """One TransactWriteItems: put the turn (new number only) and advance the session,
        conditional on nobody else having advanced it since `session` was read."""
        number = session.num_turns + 1
        turn.turn = number
        names: dict[str, str] = {"#s": schema.STATUS}
        values: dict[str, Any] = {
            ":n": {"N": str(session.num_turns)},
            ":n1": {"N": str(number)},
            # The session's activity is the server's time: a client's created_at may be old.
            ":now": {"S": at or turn.created_at},
            ":one": {"N": "1"},
        }
        # idle_bucket only changes (and so only rewrites the sweeper's index) in a new bucket.
        values[":bucket"] = {"S": idle_bucket(at or turn.created_at)}
        sets = [
            "num_turns = :n1",
            "last_active_at = :now",
            "version = version + :one",
        ]
        if rename:
            names["#name"] = "name"
            values.update(
                {":name": {"S": rename}, ":false": {"BOOL": False}, ":titled": {"BOOL": True}}
            )
            sets += ["#name = :name", "auto_named = :false", "titled = :titled"]
        recent = dict(session.recent_messages)
        overflow: list[str] = []
        if turn.client_message_id:
            key = message_key(turn.client_message_id)
            names["#cm"] = key
            sets.append("recent_messages.#cm = :n1")
            recent[key] = number
            oldest_first = sorted(recent, key=recent.__getitem__)
            overflow = oldest_first[: max(0, len(recent) - keep_message_ids)]
        for i, old in enumerate(overflow):
            names[f"#o{i}"] = old
            del recent[old]
        if stack:
            # A message waiting for its answer: the newest one is the stack's head.
            sets.append("stack_head = :n1")
        if turn.pending and turn.origin == TurnOrigin.CHAT and not stack:
            # A failed model call keeps the message even if the session ended meanwhile, but
            # never in a session being deleted or imported.
            condition = "num_turns = :n AND #s IN (:v0, :v1, :v2, :v3)"
            values.update({f":v{i}": {"S": v} for i, v in enumerate(VISIBLE_STATUSES)})
            if session.status == SessionStatus.OPEN:
                sets.append(f"{IDLE_BUCKET} = :bucket")
            else:
                del values[":bucket"]
        else:
            # A completed turn is only accepted into an open session.
            condition = "num_turns = :n AND #s = :open"
            values[":open"] = {"S": SessionStatus.OPEN}
            sets.append(f"{IDLE_BUCKET} = :bucket")
        # Hand-off to a person: who may write this turn now, and what it changes.
        condition += _handoff_condition(needs_handoff(turn))
        removes = _handoff_change(handoff, sets, values) if handoff is not None else []
        update = "SET " + ", ".join(sets)
        removes = [f"recent_messages.#o{i}" for i in range(len(overflow))] + removes
        if removes:
            update += " REMOVE " + ", ".join(removes)
        session_update: dict[str, Any] = {
            "TableName": self._sessions,
            "Key": _session_key(session.session_id),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        try:
            self._db.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self._turns,
                            "Item": serialize(turn_to_item(turn)),
                            "ConditionExpression": f"attribute_not_exists({SESSION_ID})",
                        }
                    },
                    {"Update": session_update},
                ]
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                raise Conflict("the session changed while the turn was written") from None
            raise
        session.num_turns = number
        session.last_active_at = at or turn.created_at
        session.version += 1
        session.recent_messages = recent
        if rename:
            session.name, session.auto_named, session.titled = rename, False, True
        if stack:
            session.stack_head = number
        if handoff is not None:
            handoff.apply(session, number)
        return session

    def complete_turn(self, turn: Turn) -> None:
        try:
            self._db.update_item(**self._completion(turn))
        except ClientError as error:
            if is_conditional_failure(error):
                raise Conflict("the turn was completed by another request") from None
            raise

    def claim_answer(self, session_id: str, turn: int, *, until: str, now: str) -> bool:
        try:
            self._db.update_item(
                TableName=self._turns,
                Key=_turn_key(session_id, turn),
                UpdateExpression="SET answering_until = :until",
                ConditionExpression=(
                    "pending = :true AND attribute_not_exists(answered_by) AND "
                    "(attribute_not_exists(answering_until) OR answering_until < :now)"
                ),
                ExpressionAttributeValues={
                    ":true": {"BOOL": True},
                    ":until": {"S": until},
                    ":now": {"S": now},
                },
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True

    def release_answer(self, session_id: str, turn: int, *, until: str) -> None:
        try:
            self._db.update_item(
                TableName=self._turns,
                Key=_turn_key(session_id, turn),
                UpdateExpression="REMOVE answering_until",
                ConditionExpression="answering_until = :until",
                ExpressionAttributeValues={":until": {"S": until}},
            )
        except ClientError as error:
            if not is_conditional_failure(error):
                raise

    def _completion(self, turn: Turn) -> dict[str, Any]:
        """The update that fills in a pending turn's answer, conditional on it being pending."""
        item = turn_to_item(turn)
        # Everything the answer filled in: a completed /past or /verified turn keeps its
        # sources, and a degraded answer says so, as a turn answered at the first try does.
        fields = [
            "response",
            "sources",
            "degraded",
            "model",
            "latency_ms",
            "input_tokens",
            "output_tokens",
            "prompt",
            "metadata",
            "remember_response",
            "messages",
        ]
        present = [f for f in fields if item.get(f) is not None]
        return {
            "TableName": self._turns,
            "Key": _turn_key(turn.session_id, turn.turn),
            "UpdateExpression": "SET "
            + ", ".join(f"#{f} = :{f}" for f in present)
            + " REMOVE pending",
            "ConditionExpression": "pending = :true AND attribute_not_exists(answered_by)",
            "ExpressionAttributeNames": {f"#{f}": f for f in present},
            "ExpressionAttributeValues": {
                ":true": {"BOOL": True},
                **{f":{f}": serialize_value(item[f]) for f in present},
            },
        }

    def complete_stack(
        self,
        answer: Turn,
        covered: Sequence[int],
        *,
        head: int | None,
        rename: str | None = None,
    ) -> None:
        """One TransactWriteItems: the answer, `answered_by` on the earlier messages, and the
        session's check (OPEN, still this head) or its new name."""
        items: list[dict[str, Any]] = [{"Update": self._completion(answer)}]
        for number in covered:
            items.append(
                {
                    "Update": {
                        "TableName": self._turns,
                        "Key": _turn_key(answer.session_id, number),
                        "UpdateExpression": "SET answered_by = :by REMOVE pending",
                        "ConditionExpression": (
                            "pending = :true AND attribute_not_exists(answered_by)"
                        ),
                        "ExpressionAttributeValues": {
                            ":by": {"N": str(answer.turn)},
                            ":true": {"BOOL": True},
                        },
                    }
                }
            )
        names = {"#s": schema.STATUS}
        values: dict[str, Any] = {":open": {"S": SessionStatus.OPEN}}
        # A bot's answer, so only while the session is with the bot (not handed to a person).
        condition = "#s = :open" + _handoff_condition(False)
        if head is not None:
            condition += " AND stack_head = :head"
            values[":head"] = {"N": str(head)}
        check: dict[str, Any] = {
            "TableName": self._sessions,
            "Key": _session_key(answer.session_id),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        if rename:
            # Only a generated name gives way: one the user chose meanwhile stays.
            names["#name"] = "name"
            values.update(
                {":name": {"S": rename}, ":false": {"BOOL": False}, ":true": {"BOOL": True}}
            )
            check["ConditionExpression"] = condition + " AND auto_named = :true"
            update = "SET #name = :name, auto_named = :false, titled = :true"
            items.append({"Update": {**check, "UpdateExpression": update}})
        else:
            items.append({"ConditionCheck": check})
        try:
            self._db.transact_write_items(TransactItems=items)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                raise Conflict("the stacked messages changed while they were answered") from None
            raise

    def update_turn(self, session_id: str, turn: int, values: dict[str, Any]) -> None:
        try:
            self._db.update_item(
                TableName=self._turns,
                Key=_turn_key(session_id, turn),
                UpdateExpression="SET " + ", ".join(f"#{f} = :{f}" for f in values),
                ConditionExpression=f"attribute_exists({SESSION_ID})",
                ExpressionAttributeNames={f"#{f}": f for f in values},
                ExpressionAttributeValues={f":{f}": serialize_value(v) for f, v in values.items()},
            )
        except ClientError as error:
            if is_conditional_failure(error):
                raise TurnNotFound(f"turn {turn} of session {session_id} not found") from None
            raise

    def put_turns(self, turns: Sequence[Turn]) -> None:
        self._batch_write(
            self._turns, ({"PutRequest": {"Item": serialize(turn_to_item(t))}} for t in turns)
        )

    def delete_turns(self, session_id: str, limit: int) -> int:
        answer = self._db.query(
            TableName=self._turns,
            KeyConditionExpression=f"{SESSION_ID} = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
            ProjectionExpression="#t",
            ExpressionAttributeNames={"#t": schema.TURN},
            ConsistentRead=True,
            Limit=limit,
        )
        keys = [
            {schema.SESSION_ID: {"S": session_id}, schema.TURN: item[schema.TURN]}
            for item in answer.get("Items", [])
        ]
        self._batch_write(self._turns, ({"DeleteRequest": {"Key": k}} for k in keys))
        return len(keys)

    def _batch_write(self, table: str, requests: Iterator[dict[str, Any]] | Any) -> None:
        batch: list[dict[str, Any]] = []
        for request in requests:
            batch.append(request)
            if len(batch) == 25:
                self._flush(table, batch)
                batch = []
        if batch:
            self._flush(table, batch)

    def _flush(self, table: str, batch: list[dict[str, Any]]) -> None:
        pending: dict[str, Any] = {table: batch}
        for attempt in range(8):
            answer = self._db.batch_write_item(RequestItems=pending)
            pending = answer.get("UnprocessedItems") or {}
            if not pending:
                return
            time.sleep(min(0.05 * 2**attempt, 1.0))
        # Unprocessed items are DynamoDB shedding load: an outage to retry, not a conflict.
        raise ShortTermMemoryUnavailable("DynamoDB kept items unprocessed; retry the request")
