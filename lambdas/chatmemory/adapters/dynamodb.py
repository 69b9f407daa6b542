"""Short-term memory on DynamoDB: the sessions and conversations tables from schema.py."""

from __future__ import annotations

import base64
import json
import re
import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from chatmemory import schema
from chatmemory.domain import Page, PurgeEntry, Session, Source, Turn, UserState, message_key
from chatmemory.errors import BadRequest, Conflict, SessionNotFound, ShortTermMemoryUnavailable
from chatmemory.schema import PurgeState, SessionStatus

_ser = TypeSerializer()
_de = TypeDeserializer()

_SESSION_FIELDS = (
    "session_id user_id name status started_at last_active_at ended_at num_turns "
    "running_summary summary_through_turn version recent_messages failure_reason "
    "summary consolidated_at consolidation_attempts"
).split()


def _to_dynamo(value: Any) -> Any:
    """Floats become Decimals and None values are dropped (DynamoDB stores neither)."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _to_dynamo(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_to_dynamo(v) for v in value]
    return value


def _from_dynamo(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_dynamo(v) for v in value]
    return value


def serialize(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(v) for k, v in _to_dynamo(item).items()}


def deserialize(item: dict[str, Any]) -> dict[str, Any]:
    return _from_dynamo({k: _de.deserialize(v) for k, v in item.items()})


def open_shard(session_id: str, state: str = SessionStatus.OPEN) -> str:
    """Spread sessions in `state` over OPEN_SHARDS partitions of the sweeper's sparse index."""
    return f"{state}#{zlib.crc32(session_id.encode()) % schema.OPEN_SHARDS}"


def idle_bucket(timestamp: str) -> str:
    """A stored time (ISO 8601, UTC) rounded down to IDLE_BUCKET_MINUTES: "2026-11-23T07:10"."""
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(UTC)
    minute = moment.minute - moment.minute % schema.IDLE_BUCKET_MINUTES
    return moment.strftime("%Y-%m-%dT%H:") + f"{minute:02d}"


# Statuses whose sessions the sweeper watches through the sparse index.
_SWEPT = (SessionStatus.OPEN, SessionStatus.IMPORTING, SessionStatus.DELETING)


def session_to_item(session: Session) -> dict[str, Any]:
    item = {name: getattr(session, name) for name in _SESSION_FIELDS}
    if session.status in _SWEPT:
        item[schema.OPEN_SHARD] = open_shard(session.session_id, session.status)
        item[schema.IDLE_BUCKET] = idle_bucket(session.last_active_at)
    return item


def session_from_item(item: dict[str, Any]) -> Session:
    data = deserialize(item)
    return Session(**{k: data[k] for k in _SESSION_FIELDS if k in data})


def user_from_item(user_id: str, item: dict[str, Any] | None) -> UserState:
    if not item:
        return UserState(user_id)
    data = deserialize(item)
    return UserState(
        user_id=user_id,
        generation=int(data.get(schema.GENERATION, 0)),
        purges=[PurgeEntry(**entry) for entry in data.get(schema.PURGES, [])],
        purge_round=int(data.get(schema.PURGE_ROUND, 0)),
    )


def turn_to_item(turn: Turn) -> dict[str, Any]:
    item: dict[str, Any] = {
        "session_id": turn.session_id,
        "turn": turn.turn,
        "user_id": turn.user_id,
        "input": turn.input,
        "response": turn.response,
        "intent": turn.intent,
        "sources": [s.public() for s in turn.sources],
        "model": turn.model,
        "created_at": turn.created_at,
        "client_message_id": turn.client_message_id,
        "prompt": turn.prompt,
        "latency_ms": turn.latency_ms,
        "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens,
        "expires_at": turn.expires_at,
    }
    if turn.pending:
        item["pending"] = True
    if turn.degraded:
        item["degraded"] = True
    return item


def turn_from_item(item: dict[str, Any]) -> Turn:
    data = deserialize(item)
    return Turn(
        session_id=data["session_id"],
        turn=data["turn"],
        user_id=data.get("user_id", ""),
        input=data.get("input", ""),
        response=data.get("response"),
        intent=data.get("intent", "chat"),
        sources=[Source(**s) for s in data.get("sources", [])],
        model=data.get("model", ""),
        created_at=data.get("created_at", ""),
        client_message_id=data.get("client_message_id"),
        prompt=data.get("prompt"),
        latency_ms=data.get("latency_ms"),
        input_tokens=data.get("input_tokens"),
        output_tokens=data.get("output_tokens"),
        pending=bool(data.get("pending", False)),
        degraded=bool(data.get("degraded", False)),
        expires_at=data.get("expires_at"),
    )


def encode_token(key: dict[str, Any]) -> str:
    raw = json.dumps(key, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str, types: dict[str, str]) -> dict[str, Any]:
    """The start key in a next_token, if it has exactly the attributes `types` names
    (name -> "S" or "N"), each of its type: anything else would reach DynamoDB as an invalid
    ExclusiveStartKey (a 500), not as the client's bad request it is."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        key = json.loads(raw)
    except (ValueError, TypeError) as exc:
        raise BadRequest("next_token is not valid") from exc
    if not isinstance(key, dict) or set(key) != set(types):
        raise BadRequest("next_token is not valid")
    for name, kind in types.items():
        value = key[name]
        if not isinstance(value, dict) or list(value) != [kind] or not isinstance(value[kind], str):
            raise BadRequest("next_token is not valid")
        if not value[kind] or len(value[kind]) > 1024:  # DynamoDB refuses empty key values
            raise BadRequest("next_token is not valid")
        if kind == "N" and not re.fullmatch(r"-?\d{1,38}", value[kind]):
            raise BadRequest("next_token is not valid")
    return key


# What DynamoDB answers when it cannot serve a request now. botocore's standard retries have
# already retried these; what is left is an outage to report as such (503), not a bug (500).
_UNAVAILABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TransactionInProgressException",
        "InternalServerError",
        "ServiceUnavailable",
    }
)


@contextmanager
def _outages() -> Iterator[None]:
    """Throttling and outages that outlast botocore's retries become ShortTermMemoryUnavailable."""
    try:
        yield
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code not in _UNAVAILABLE_CODES:
            raise
        raise ShortTermMemoryUnavailable(
            f"DynamoDB is throttling or unavailable ({code}); retry the request"
        ) from error
    except (BotoConnectionError, HTTPClientError) as error:
        raise ShortTermMemoryUnavailable(
            f"DynamoDB did not answer ({type(error).__name__}); retry the request"
        ) from error


class _Guarded:
    """A DynamoDB client (or paginator) whose calls, and pages, report outages via _outages."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with _outages():
                answer = attr(*args, **kwargs)
            if name == "get_paginator":
                return _Guarded(answer)
            if name == "paginate":
                return _pages(answer)
            return answer

        return call


def _pages(pages: Any) -> Iterator[Any]:
    with _outages():
        yield from pages


def _is_conditional_failure(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class DynamoShortTermMemory:
    """SessionStore + TurnStore on the sessions, conversations and users tables (physical names
    from the deployment)."""

    def __init__(
        self,
        client: Any,
        sessions_table: str,
        conversations_table: str,
        users_table: str = schema.USERS.logical_name,
    ) -> None:
        self._db = _Guarded(client)
        self._sessions = sessions_table
        self._turns = conversations_table
        self._users = users_table

    # --- users ------------------------------------------------------------------------------

    def get_user(self, user_id: str) -> UserState:
        answer = self._db.get_item(
            TableName=self._users, Key={"user_id": {"S": user_id}}, ConsistentRead=True
        )
        return user_from_item(user_id, answer.get("Item"))

    def forget_user(self, user: UserState, at: str) -> UserState:
        entry = {"owner": user.owner, "requested_at": at, "state": PurgeState.PENDING}
        try:
            answer = self._db.update_item(
                TableName=self._users,
                Key={"user_id": {"S": user.user_id}},
                UpdateExpression=(
                    "SET #g = :next, #p = list_append(if_not_exists(#p, :none), :entry), "
                    "#ps = :pending ADD #r :one"
                ),
                ConditionExpression="attribute_not_exists(user_id) OR #g = :current",
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
                    ":entry": {"L": [_ser.serialize(entry)]},
                    ":pending": {"S": PurgeState.PENDING},
                    ":one": {"N": "1"},
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if _is_conditional_failure(error):
                raise Conflict("another request forgot this user's memory meanwhile") from None
            raise
        return user_from_item(user.user_id, answer["Attributes"])

    def save_purges(self, user: UserState, purges: Sequence[PurgeEntry], *, handover: bool) -> bool:
        pending = any(p.state == PurgeState.PENDING for p in purges)
        update = "SET #p = :purges" + (", #ps = :pending" if pending else "")
        update += " ADD #r :one" + ("" if pending else " REMOVE #ps")
        values: dict[str, Any] = {
            ":purges": _ser.serialize([vars(p) for p in purges]),
            ":round": {"N": str(user.purge_round)},
            ":one": {"N": "1"},
        }
        if pending:
            values[":pending"] = {"S": PurgeState.PENDING}
        del handover  # any write of a PENDING user item starts the next invocation
        try:
            self._db.update_item(
                TableName=self._users,
                Key={"user_id": {"S": user.user_id}},
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
            if _is_conditional_failure(error):
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
            ProjectionExpression="user_id",
        ):
            ids += [item["user_id"]["S"] for item in page.get("Items", [])]
        return ids

    # --- sessions ---------------------------------------------------------------------------

    def create_session(
        self, session: Session, *, user: UserState, end: Sequence[str] = (), ended_at: str = ""
    ) -> None:
        actions: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._sessions,
                    "Item": serialize(session_to_item(session)),
                    "ConditionExpression": "attribute_not_exists(session_id)",
                }
            },
            {
                # A forget that committed after the caller's state was read fails the put:
                # no session can be born into a namespace that is being purged.
                "ConditionCheck": {
                    "TableName": self._users,
                    "Key": {"user_id": {"S": user.user_id}},
                    "ConditionExpression": "attribute_not_exists(user_id) OR #g = :g",
                    "ExpressionAttributeNames": {"#g": schema.GENERATION},
                    "ExpressionAttributeValues": {":g": {"N": str(user.generation)}},
                }
            },
        ]
        actions += [self._end_action(session_id, ended_at) for session_id in end]
        try:
            self._db.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                raise Conflict(
                    "the caller's sessions changed while this one was created; retry"
                ) from None
            raise

    def _end_action(self, session_id: str, ended_at: str) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._sessions,
                "Key": {"session_id": {"S": session_id}},
                "UpdateExpression": (
                    "SET #s = :ended, ended_at = :t, version = version + :one "
                    "REMOVE open_shard, idle_bucket"
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
            Key={"session_id": {"S": session_id}},
            ConsistentRead=consistent,
        )
        item = answer.get("Item")
        return session_from_item(item) if item else None

    def get_owned(self, session_id: str, user_id: str) -> tuple[Session | None, UserState]:
        """One BatchGetItem for the session and its caller's state (both strongly consistent):
        a turn pays the caller's generation check without an extra round trip."""
        found = self._batch_get(
            {
                self._sessions: [{"session_id": {"S": session_id}}],
                self._users: [{"user_id": {"S": user_id}}],
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
            keys = [{"session_id": {"S": sid}} for sid in unique[start : start + 100]]
            items = self._batch_get(
                {self._sessions: keys},
                projection="session_id, user_id, #s",
                names={"#s": schema.STATUS},
            ).get(self._sessions, [])
            for item in items:
                data = deserialize(item)
                if data.get("user_id") == owner and data.get("status") in SessionStatus.VISIBLE:
                    live.add(data["session_id"])
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
        items = self._batch_get({self._sessions: [{"session_id": {"S": i}} for i in ids]}).get(
            self._sessions, []
        )
        current = {s.session_id: s for s in map(session_from_item, items)}
        visible = [
            current[i]
            for i in ids
            if i in current
            and current[i].user_id == owner
            and current[i].status in SessionStatus.VISIBLE
        ]
        return Page(items=visible, next_token=page.next_token)

    def sessions_of_owner(self, owner: str, limit: int, next_token: str | None) -> Page:
        kwargs: dict[str, Any] = {
            "TableName": self._sessions,
            "IndexName": schema.USER_SESSIONS_INDEX.name,
            "KeyConditionExpression": "user_id = :u",
            "ExpressionAttributeValues": {":u": {"S": owner}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if next_token:
            start = decode_token(next_token, {"session_id": "S", "user_id": "S", "started_at": "S"})
            if start["user_id"] != {"S": owner}:
                raise BadRequest("next_token is not valid")
            kwargs["ExclusiveStartKey"] = start
        answer = self._db.query(**kwargs)
        return Page(
            items=[session_from_item(i) for i in answer.get("Items", [])],
            next_token=_next(answer),
        )

    def open_sessions_of(self, owner: str) -> list[Session]:
        sessions: list[Session] = []
        kwargs: dict[str, Any] = {
            "TableName": self._sessions,
            "IndexName": schema.USER_SESSIONS_INDEX.name,
            "KeyConditionExpression": "user_id = :u",
            "FilterExpression": "#s = :open",
            "ExpressionAttributeNames": {"#s": "status"},
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
            action["ConditionExpression"] += " AND last_active_at < :idle"
            action["ExpressionAttributeValues"][":idle"] = {"S": idle_before}
        try:
            answer = self._db.update_item(**action, ReturnValues="ALL_NEW")
        except ClientError as error:
            if not _is_conditional_failure(error):
                raise
            found = self.get_session(session_id)
            if found is None or found.status not in SessionStatus.VISIBLE:
                raise SessionNotFound(f"session {session_id} not found") from None
            raise Conflict(f"session {session_id} is not open") from None
        return session_from_item(answer["Attributes"])

    def stale_sessions(self, state: str, shard: int, before: str, limit: int) -> list[str]:
        """Sessions in `state` of one shard of the sparse index whose activity falls in a bucket
        wholly before `before` (the caller's conditional write checks the exact time)."""
        answer = self._db.query(
            TableName=self._sessions,
            IndexName=schema.OPEN_SESSIONS_INDEX.name,
            KeyConditionExpression="open_shard = :shard AND idle_bucket < :bucket",
            ExpressionAttributeValues={
                ":shard": {"S": f"{state}#{shard}"},
                ":bucket": {"S": idle_bucket(before)},
            },
            Limit=limit,
        )
        return [item["session_id"]["S"] for item in answer.get("Items", [])]

    def record_consolidation_failure(self, session_id: str, reason: str) -> int | None:
        try:
            answer = self._db.update_item(
                TableName=self._sessions,
                Key={"session_id": {"S": session_id}},
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
            if _is_conditional_failure(error):
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
        )

    def failed_sessions(self) -> list[str]:
        """FAILED sessions, for the redrive command (an operator's scan, not a request path)."""
        ids: list[str] = []
        for page in self._db.get_paginator("scan").paginate(
            TableName=self._sessions,
            FilterExpression="#s = :failed",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":failed": {"S": SessionStatus.FAILED}},
            ProjectionExpression="session_id",
        ):
            ids += [item["session_id"]["S"] for item in page.get("Items", [])]
        return ids

    def reset_consolidation(self, session_id: str) -> None:
        with suppress_conditional():  # deleted meanwhile: nothing to redrive
            self._db.update_item(
                TableName=self._sessions,
                Key={"session_id": {"S": session_id}},
                UpdateExpression="SET consolidation_attempts = :zero",
                ConditionExpression="#s = :failed",
                ExpressionAttributeNames={"#s": schema.STATUS},
                ExpressionAttributeValues={
                    ":zero": {"N": "0"},
                    ":failed": {"S": SessionStatus.FAILED},
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
                Key={"session_id": {"S": session_id}},
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
            if _is_conditional_failure(error):
                return False
            raise
        return True

    def _set_status(
        self, session_id: str, status: str, extra: dict[str, Any], *, allowed: tuple[str, ...]
    ) -> bool:
        names = {"#s": "status", **{f"#{k}": k for k in extra}}
        values = {
            ":status": {"S": status},
            **{f":{k}": _ser.serialize(_to_dynamo(v)) for k, v in extra.items()},
            **{f":a{i}": {"S": a} for i, a in enumerate(allowed)},
        }
        allowed_expr = ", ".join(f":a{i}" for i in range(len(allowed)))
        try:
            self._db.update_item(
                TableName=self._sessions,
                Key={"session_id": {"S": session_id}},
                UpdateExpression="SET #s = :status, " + ", ".join(f"#{k} = :{k}" for k in extra),
                ConditionExpression=f"#s IN ({allowed_expr})",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if _is_conditional_failure(error):
                return False  # moved on meanwhile (already consolidated, deleted)
            raise
        return True

    # --- deletion ---------------------------------------------------------------------------

    def mark_deleting(self, session_id: str, at: str) -> bool:
        try:
            self._db.update_item(
                TableName=self._sessions,
                Key={"session_id": {"S": session_id}},
                UpdateExpression=(
                    "SET #s = :deleting, deleting_at = :t, open_shard = :shard, "
                    "idle_bucket = :bucket, version = version + :one"
                ),
                ConditionExpression="attribute_exists(session_id) AND #s <> :deleting",
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
            if _is_conditional_failure(error):
                return False
            raise
        return True

    def continue_purge(self, session_id: str, at: str) -> None:
        with suppress_conditional():  # already purged
            self._db.update_item(
                TableName=self._sessions,
                Key={"session_id": {"S": session_id}},
                UpdateExpression="SET idle_bucket = :bucket ADD purge_round :one",
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
                Key={"session_id": {"S": session_id}},
                ConditionExpression="#s = :deleting",
                ExpressionAttributeNames={"#s": schema.STATUS},
                ExpressionAttributeValues={":deleting": {"S": SessionStatus.DELETING}},
            )

    def finish_import(self, session_id: str, last_active_at: str) -> None:
        try:
            self._db.update_item(
                TableName=self._sessions,
                Key={"session_id": {"S": session_id}},
                UpdateExpression="SET #s = :open, open_shard = :shard, idle_bucket = :bucket",
                ConditionExpression="#s = :importing",
                ExpressionAttributeNames={"#s": schema.STATUS},
                ExpressionAttributeValues={
                    ":open": {"S": SessionStatus.OPEN},
                    ":importing": {"S": SessionStatus.IMPORTING},
                    ":shard": {"S": open_shard(session_id)},
                    ":bucket": {"S": idle_bucket(last_active_at)},
                },
            )
        except ClientError as error:
            if _is_conditional_failure(error):
                raise Conflict("the import was abandoned meanwhile; import again") from None
            raise

    # --- turns ------------------------------------------------------------------------------

    def recent_turns(self, session_id: str, count: int) -> list[Turn]:
        if count <= 0:
            return []
        answer = self._db.query(
            TableName=self._turns,
            KeyConditionExpression="session_id = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
            ScanIndexForward=False,
            Limit=count,
            ConsistentRead=True,
        )
        return [turn_from_item(i) for i in reversed(answer.get("Items", []))]

    def get_turn(self, session_id: str, turn: int) -> Turn | None:
        answer = self._db.get_item(
            TableName=self._turns,
            Key={"session_id": {"S": session_id}, "turn": {"N": str(turn)}},
            ConsistentRead=True,
        )
        item = answer.get("Item")
        return turn_from_item(item) if item else None

    def list_turns(
        self, session_id: str, limit: int, next_token: str | None, ascending: bool
    ) -> Page:
        kwargs: dict[str, Any] = {
            "TableName": self._turns,
            "KeyConditionExpression": "session_id = :s",
            "ExpressionAttributeValues": {":s": {"S": session_id}},
            "ScanIndexForward": ascending,
            "Limit": limit,
        }
        if next_token:
            start = decode_token(next_token, {"session_id": "S", "turn": "N"})
            if start["session_id"] != {"S": session_id}:
                raise BadRequest("next_token is not valid")
            kwargs["ExclusiveStartKey"] = start
        answer = self._db.query(**kwargs)
        return Page(
            items=[turn_from_item(i) for i in answer.get("Items", [])],
            next_token=_next(answer),
        )

    def turns_between(self, session_id: str, after: int, through: int) -> list[Turn]:
        """Turns after..through (exclusive, inclusive), oldest first."""
        turns: list[Turn] = []
        for page in self._db.get_paginator("query").paginate(
            TableName=self._turns,
            KeyConditionExpression="session_id = :s AND #t BETWEEN :a AND :b",
            ExpressionAttributeNames={"#t": "turn"},
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
        for page in self._db.get_paginator("query").paginate(
            TableName=self._turns,
            KeyConditionExpression="session_id = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
            ConsistentRead=True,
        ):
            for item in page.get("Items", []):
                yield turn_from_item(item)

    def append_turn(self, session: Session, turn: Turn, *, keep_message_ids: int) -> Session:
        """One TransactWriteItems: put the turn (new number only) and advance the session,
        conditional on nobody else having advanced it since `session` was read."""
        number = session.num_turns + 1
        turn.turn = number
        names: dict[str, str] = {"#s": schema.STATUS}
        values: dict[str, Any] = {
            ":n": {"N": str(session.num_turns)},
            ":n1": {"N": str(number)},
            ":now": {"S": turn.created_at},
            ":one": {"N": "1"},
        }
        # idle_bucket only changes (and so only rewrites the sweeper's index) in a new bucket.
        values[":bucket"] = {"S": idle_bucket(turn.created_at)}
        sets = [
            "num_turns = :n1",
            "last_active_at = :now",
            "version = version + :one",
        ]
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
        if turn.pending:
            # A failed model call keeps the message even if the session ended meanwhile, but
            # never in a session being deleted or imported.
            condition = "num_turns = :n AND #s IN (:v0, :v1, :v2, :v3)"
            values.update({f":v{i}": {"S": v} for i, v in enumerate(SessionStatus.VISIBLE)})
            if session.status == SessionStatus.OPEN:
                sets.append("idle_bucket = :bucket")
            else:
                del values[":bucket"]
        else:
            # A completed turn is only accepted into an open session.
            condition = "num_turns = :n AND #s = :open"
            values[":open"] = {"S": SessionStatus.OPEN}
            sets.append("idle_bucket = :bucket")
        update = "SET " + ", ".join(sets)
        if overflow:
            update += " REMOVE " + ", ".join(f"recent_messages.#o{i}" for i in range(len(overflow)))
        session_update: dict[str, Any] = {
            "TableName": self._sessions,
            "Key": {"session_id": {"S": session.session_id}},
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
                            "ConditionExpression": "attribute_not_exists(session_id)",
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
        session.last_active_at = turn.created_at
        session.version += 1
        session.recent_messages = recent
        return session

    def complete_turn(self, turn: Turn) -> None:
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
        ]
        present = [f for f in fields if item.get(f) is not None]
        try:
            self._db.update_item(
                TableName=self._turns,
                Key={"session_id": {"S": turn.session_id}, "turn": {"N": str(turn.turn)}},
                UpdateExpression="SET "
                + ", ".join(f"#{f} = :{f}" for f in present)
                + " REMOVE pending",
                ConditionExpression="pending = :true",
                ExpressionAttributeNames={f"#{f}": f for f in present},
                ExpressionAttributeValues={
                    ":true": {"BOOL": True},
                    **{f":{f}": _ser.serialize(_to_dynamo(item[f])) for f in present},
                },
            )
        except ClientError as error:
            if _is_conditional_failure(error):
                raise Conflict("the turn was completed by another request") from None
            raise

    def put_turns(self, turns: Sequence[Turn]) -> None:
        self._batch_write(
            self._turns, ({"PutRequest": {"Item": serialize(turn_to_item(t))}} for t in turns)
        )

    def delete_turns(self, session_id: str, limit: int) -> int:
        answer = self._db.query(
            TableName=self._turns,
            KeyConditionExpression="session_id = :s",
            ExpressionAttributeValues={":s": {"S": session_id}},
            ProjectionExpression="#t",
            ExpressionAttributeNames={"#t": "turn"},
            ConsistentRead=True,
            Limit=limit,
        )
        keys = [
            {"session_id": {"S": session_id}, "turn": item["turn"]}
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


@contextmanager
def suppress_conditional() -> Iterator[None]:
    """A conditional write whose condition no longer holds is expected here: nothing to do."""
    try:
        yield
    except ClientError as error:
        if not _is_conditional_failure(error):
            raise


def _next(answer: dict[str, Any]) -> str | None:
    key = answer.get("LastEvaluatedKey")
    return encode_token(key) if key else None
