"""The sessions table: create, read, list, end, consolidation states, deletion, import."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from chatmemory import limits, schema
from chatmemory.adapters.dynamodb.client import (
    applied,
    is_conditional_failure,
    scan_ids,
    suppress_conditional,
    transact,
)
from chatmemory.adapters.dynamodb.codec import (
    deserialize,
    idle_bucket,
    open_shard,
    serialize,
    serialize_value,
    session_from_item,
    session_to_item,
    user_from_item,
)
from chatmemory.adapters.dynamodb.tables import (
    _HANDOFF_CLEARED,
    DynamoTables,
    _handoff_condition,
    _session_key,
    _user_key,
)
from chatmemory.adapters.dynamodb.tokens import decode_token, page_token
from chatmemory.domain import (
    ClientAlias,
    Named,
    Page,
    Session,
    SessionCreation,
    UserState,
    visible_to,
)
from chatmemory.errors import BadRequest, Conflict, SessionNotFound
from chatmemory.schema import (
    IDLE_BUCKET,
    LAST_ACTIVE_AT,
    OPEN_SHARD,
    SESSION_ID,
    STARTED_AT,
    STATUS,
    USER_ID,
    VISIBLE_STATUSES,
    SessionStatus,
)


class DynamoSessionStore(DynamoTables):
    """ports.SessionStore on the sessions table (the users part is DynamoUserStore)."""

    def create_session(self, session: Session, creation: SessionCreation) -> None:
        """One TransactWriteItems: the put, the check of the caller's generation, the ends it
        holds room for (those beyond are written first, one by one) and the alias."""
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
                    "Key": _user_key(creation.user.user_id),
                    "ConditionExpression": f"attribute_not_exists({USER_ID}) OR #g = :g",
                    "ExpressionAttributeNames": {"#g": schema.GENERATION},
                    "ExpressionAttributeValues": {":g": {"N": str(creation.user.generation)}},
                }
            },
        ]
        alias = creation.alias
        tail = [self._alias_action(alias, session.session_id)] if alias is not None else []
        previous = session.continued_from
        if previous is not None and previous not in creation.end:
            # A continuation only of a session that is not being deleted: a delete that wrote
            # its tombstone after the continuation read it fails this, so nothing written to
            # the continuation outlives a delete that answered (an open one is ended below, on
            # the condition that it is open).
            tail.append(self._not_deleting(previous))
        # The room left for ends is what the other actions leave of one transaction; the
        # ends beyond it are written first, one by one (one ended or deleted meanwhile is
        # no longer the caller's to end).
        room = limits.DYNAMODB_TRANSACTION.count - len(actions) - len(tail)
        for extra in creation.end[room:]:
            with contextlib.suppress(Conflict, SessionNotFound):
                self.end_session(extra, creation.ended_at)
        actions += [self._end_action(ended, creation.ended_at) for ended in creation.end[:room]]
        actions += tail
        transact(
            self._db, actions, "the caller's sessions changed while this one was created; retry"
        )

    def _not_deleting(self, session_id: str) -> dict[str, Any]:
        return {
            "ConditionCheck": {
                "TableName": self._sessions,
                "Key": _session_key(session_id),
                "ConditionExpression": f"attribute_exists({SESSION_ID}) AND #s <> :deleting",
                "ExpressionAttributeNames": {"#s": schema.STATUS},
                "ExpressionAttributeValues": {":deleting": {"S": SessionStatus.DELETING}},
            }
        }

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
        """OPEN -> ENDED. The session moves to the ENDED shards of the sweeper's index, sorted
        by when it ended, and stays there until it is CONSOLIDATED or FAILED: a consolidation
        whose stream record expired, went to the dead letters or died with its run is found
        there again (retry_consolidation)."""
        update = (
            "SET #s = :ended, ended_at = :t, version = version + :one, "
            f"{OPEN_SHARD} = :shard, {IDLE_BUCKET} = :bucket REMOVE {_HANDOFF_CLEARED}"
        )
        values = {
            ":t": {"S": ended_at},
            ":one": {"N": "1"},
            ":shard": {"S": open_shard(session_id, SessionStatus.ENDED)},
            ":bucket": {"S": idle_bucket(ended_at)},
        }
        return {"Update": self._session_update(session_id, update, "#s = :open", values)}

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

    def get_named(self, name: str, user_id: str) -> Named:
        """One BatchGetItem for the alias of the caller's client id `name`, the session whose
        server id is `name` and the caller's state (all strongly consistent): a message pays
        for finding its session, the session and the caller's generation in one round trip."""
        alias = schema.alias_key(user_id, name)
        found = self._batch_get(
            {
                self._sessions: [_session_key(alias), _session_key(name)],
                self._users: [_user_key(user_id)],
            }
        )
        target, session = None, None
        for item in found.get(self._sessions) or []:
            if item[SESSION_ID]["S"] == alias:
                target = item[schema.ALIAS_TARGET]["S"]
            else:
                session = session_from_item(item)
        users = found.get(self._users) or []
        return Named(target, session, user_from_item(user_id, users[0] if users else None))

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
        return self.stale_page(state, shard, before, limit, None).items

    def stale_page(
        self, state: str, shard: int, before: str, limit: int, next_token: str | None
    ) -> Page[str]:
        """A page of stale_sessions, oldest first, and the token of the next one."""
        request: dict[str, Any] = {
            "TableName": self._sessions,
            "IndexName": schema.OPEN_SESSIONS_INDEX.name,
            "KeyConditionExpression": f"{OPEN_SHARD} = :shard AND {IDLE_BUCKET} < :bucket",
            "ExpressionAttributeValues": {
                ":shard": {"S": schema.sweep_shard(state, shard)},
                ":bucket": {"S": idle_bucket(before)},
            },
            "Limit": limit,
        }
        if next_token:
            request["ExclusiveStartKey"] = decode_token(
                next_token, {SESSION_ID: "S", OPEN_SHARD: "S", IDLE_BUCKET: "S"}
            )
        answer = self._db.query(**request)
        ids = [item[SESSION_ID]["S"] for item in answer.get("Items", [])]
        return Page(ids, page_token(answer))

    def oldest_stale(self, state: str, shard: int) -> str | None:
        """The bucket of the oldest session in `state` of one shard (None: there is none)."""
        answer = self._db.query(
            TableName=self._sessions,
            IndexName=schema.OPEN_SESSIONS_INDEX.name,
            KeyConditionExpression=f"{OPEN_SHARD} = :shard",
            ExpressionAttributeValues={":shard": {"S": schema.sweep_shard(state, shard)}},
            Limit=1,
        )
        items = answer.get("Items", [])
        return items[0][IDLE_BUCKET]["S"] if items else None

    def retry_consolidation(
        self, session_ids: Sequence[str], *, at: str, before: str, limit: int
    ) -> list[str]:
        """Start again the consolidation of those of these sessions that are still ENDED and
        were not started again since `before` (at most `limit`): one consistent read of them
        (BatchGetItem), then for each one due a conditional write that the consolidation
        mapping's stream filter takes (schema.CONSOLIDATION_CONTINUE_FILTER); a run resumes
        from a checkpoint it finds. Returns the sessions started again."""
        found = self._batch_get(
            {self._sessions: [_session_key(s) for s in dict.fromkeys(session_ids)]},
            projection=f"{SESSION_ID}, #s, {schema.CONSOLIDATION_RETRIED_AT}",
            names={"#s": STATUS},
        ).get(self._sessions, [])
        due = [
            item[SESSION_ID]["S"]
            for item in found
            if item.get(STATUS, {}).get("S") == SessionStatus.ENDED
            and item.get(schema.CONSOLIDATION_RETRIED_AT, {}).get("S", "") < before
        ]
        retry = (
            "SET #state = :continue, #retried = :at ADD consolidation_retries :one",
            "#s = :ended AND (attribute_not_exists(#retried) OR #retried < :before)",
            {
                ":continue": {"S": schema.CONSOLIDATION_CONTINUE},
                ":at": {"S": at},
                ":before": {"S": before},
                ":one": {"N": "1"},
            },
            {"#state": schema.CONSOLIDATION_STATE, "#retried": schema.CONSOLIDATION_RETRIED_AT},
        )
        retried: list[str] = []
        for session_id in sorted(due, key=list(session_ids).index)[:limit]:
            with suppress_conditional():  # consolidated, failed or retried meanwhile
                self._db.update_item(**self._session_update(session_id, *retry))
                retried.append(session_id)
        return retried

    def record_consolidation_failure(self, session_id: str, reason: str) -> int | None:
        try:
            answer = self._db.update_item(
                **self._session_update(
                    session_id,
                    "SET failure_reason = :r ADD consolidation_attempts :one",
                    "#s IN (:ended, :failed)",
                    {":r": {"S": reason}, ":one": {"N": "1"}},
                ),
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
            remove=(OPEN_SHARD, IDLE_BUCKET),  # the redrive's now, not the sweeper's
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
                schema.CONSOLIDATION_RETRIED_AT,
                OPEN_SHARD,
                IDLE_BUCKET,
            ),
        )

    def checkpoint_consolidation(
        self, session_id: str, *, expected_round: int, cursor: int, summary: str
    ) -> bool:
        update = (
            "SET #state = :continue, consolidation_cursor = :cursor, "
            "consolidation_summary = :summary, consolidation_round = :next"
        )
        condition = (
            "#s IN (:ended, :failed) AND "
            "(attribute_not_exists(consolidation_round) OR consolidation_round = :round)"
        )
        values = {
            ":continue": {"S": schema.CONSOLIDATION_CONTINUE},
            ":cursor": {"N": str(cursor)},
            ":summary": {"S": summary},
            ":round": {"N": str(expected_round)},
            ":next": {"N": str(expected_round + 1)},
        }
        names = {"#state": schema.CONSOLIDATION_STATE}
        request = self._session_update(session_id, update, condition, values, names)
        return applied(self._db.update_item, **request)

    def failed_sessions(self) -> list[str]:
        """FAILED sessions, for the redrive command (an operator's scan, not a request path)."""
        return scan_ids(
            self._db,
            self._sessions,
            SESSION_ID,
            FilterExpression="#s = :failed",
            ExpressionAttributeNames={"#s": schema.STATUS},
            ExpressionAttributeValues={":failed": {"S": SessionStatus.FAILED}},
        )

    def reset_consolidation(self, session_id: str) -> None:
        with suppress_conditional():  # deleted meanwhile: nothing to redrive
            self._db.update_item(
                **self._session_update(
                    session_id,
                    "SET consolidation_attempts = :zero",
                    "#s = :failed",
                    {":zero": {"N": "0"}},
                )
            )

    def forget_summary(self, session_id: str) -> None:
        self._mark_forgotten(session_id, "SET summary_forgotten = :v", {"BOOL": True})

    def forget_facts(self, session_id: str, keys: Sequence[str]) -> None:
        if keys:
            self._mark_forgotten(session_id, "ADD forgotten_facts :v", {"SS": sorted(set(keys))})

    def _mark_forgotten(self, session_id: str, update: str, value: dict[str, Any]) -> None:
        """What the caller deleted of a session's records, marked on it for good (`:v`)."""
        with suppress_conditional():  # gone or being deleted: its records go with it
            condition = f"attribute_exists({SESSION_ID}) AND #s <> :deleting"
            self._db.update_item(
                **self._session_update(session_id, update, condition, {":v": value})
            )

    def update_running_summary(
        self, session_id: str, summary: str, through_turn: int, expected_through: int
    ) -> bool:
        """Advance the rolling summary only if nobody advanced it meanwhile (and the session is
        not being deleted: a write must never bring a purged item back)."""
        values = {
            ":summary": {"S": summary},
            ":t": {"N": str(through_turn)},
            ":e": {"N": str(expected_through)},
        }
        request = self._session_update(
            session_id,
            "SET running_summary = :summary, summary_through_turn = :t",
            "#s IN (:open, :ended) AND summary_through_turn = :e",
            values,
        )
        return applied(self._db.update_item, **request)

    def _set_status(
        self,
        session_id: str,
        status: str,
        extra: dict[str, Any],
        *,
        allowed: tuple[str, ...],
        remove: tuple[str, ...] = (),
    ) -> bool:
        update = (
            f"SET #s = :{status.lower()}, "
            + ", ".join(f"#{k} = :{k}" for k in extra)
            + (" REMOVE " + ", ".join(f"#{k}" for k in remove) if remove else "")
        )
        condition = "#s IN ({})".format(", ".join(f":{a.lower()}" for a in allowed))
        values = {f":{k}": serialize_value(v) for k, v in extra.items()}
        names = {f"#{k}": k for k in (*extra, *remove)}
        # moved on meanwhile (already consolidated, deleted)
        request = self._session_update(session_id, update, condition, values, names)
        return applied(self._db.update_item, **request)

    # --- deletion ---------------------------------------------------------------------------

    def mark_deleting(self, session_id: str, at: str) -> bool:
        update = (
            f"SET #s = :deleting, deleting_at = :t, {OPEN_SHARD} = :shard, "
            f"{IDLE_BUCKET} = :bucket, version = version + :one "
            f"REMOVE {_HANDOFF_CLEARED}"  # out of the agents' queue at once
        )
        values = {
            ":t": {"S": at},
            ":shard": {"S": open_shard(session_id, SessionStatus.DELETING)},
            ":bucket": {"S": idle_bucket(at)},
            ":one": {"N": "1"},
        }
        condition = f"attribute_exists({SESSION_ID}) AND #s <> :deleting"
        request = self._session_update(session_id, update, condition, values)
        return applied(self._db.update_item, **request)

    def continue_purge(self, session_id: str, at: str) -> None:
        with suppress_conditional():  # already purged
            self._db.update_item(
                **self._session_update(
                    session_id,
                    f"SET {IDLE_BUCKET} = :bucket ADD purge_round :one",
                    "#s = :deleting",
                    {":bucket": {"S": idle_bucket(at)}, ":one": {"N": "1"}},
                )
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
                **self._session_update(
                    session_id,
                    f"SET #s = :open, {LAST_ACTIVE_AT} = :active, {OPEN_SHARD} = :shard, "
                    f"{IDLE_BUCKET} = :bucket",
                    "#s = :importing",
                    {
                        ":shard": {"S": open_shard(session_id)},
                        ":bucket": {"S": idle_bucket(last_active_at)},
                        ":active": {"S": last_active_at},
                    },
                )
            )
        except ClientError as error:
            if is_conditional_failure(error):
                raise Conflict("the import was abandoned meanwhile; import again") from None
            raise
