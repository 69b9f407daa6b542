"""The conversations table: reading, appending, answering, stacking and deleting turns."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from botocore.exceptions import ClientError

from chatmemory import schema
from chatmemory.adapters.dynamodb.client import (
    applied,
    first_keys,
    is_conditional_failure,
    transact,
)
from chatmemory.adapters.dynamodb.codec import (
    idle_bucket,
    serialize,
    serialize_value,
    turn_from_item,
    turn_to_item,
)
from chatmemory.adapters.dynamodb.tables import (
    DynamoTables,
    _handoff_change,
    _handoff_condition,
    _session_key,
    _turn_key,
)
from chatmemory.domain import (
    CoveredTurns,
    Page,
    Session,
    Turn,
    TurnWrite,
    message_key,
    needs_handoff,
)
from chatmemory.errors import Conflict, TurnNotFound
from chatmemory.schema import (
    IDLE_BUCKET,
    SESSION_ID,
    TURN,
    VISIBLE_STATUSES,
    SessionStatus,
    TurnOrigin,
)


def _recent_messages(
    session: Session,
    turn: Turn,
    number: int,
    keep_message_ids: int,
    names: dict[str, str],
    sets: list[str],
) -> tuple[dict[str, int], list[str]]:
    """The session's recent client message ids with the turn's (set by the update), and the
    oldest beyond `keep_message_ids` (removed by it, their names #o0, #o1, ...)."""
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
    return recent, overflow


def _admission(
    session: Session, turn: Turn, stack: bool, values: dict[str, Any], sets: list[str]
) -> str:
    """The condition a turn's session update holds to (which sessions accept the turn)."""
    if turn.pending and turn.origin == TurnOrigin.CHAT and not stack:
        # A failed model call keeps the message even if the session ended meanwhile, but
        # never in a session being deleted or imported.
        values.update({f":v{i}": {"S": v} for i, v in enumerate(VISIBLE_STATUSES)})
        if session.status == SessionStatus.OPEN:
            sets.append(f"{IDLE_BUCKET} = :bucket")
        else:
            del values[":bucket"]
        return "num_turns = :n AND #s IN (:v0, :v1, :v2, :v3)"
    # A completed turn is only accepted into an open session.
    values[":open"] = {"S": SessionStatus.OPEN}
    sets.append(f"{IDLE_BUCKET} = :bucket")
    return "num_turns = :n AND #s = :open"


class DynamoTurnStore(DynamoTables):
    """ports.TurnStore on the conversations table, with the session counters it updates."""

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

    def append_turn(self, session: Session, turn: Turn, write: TurnWrite) -> Session:
        """One TransactWriteItems: put the turn (new number only) and advance the session,
        conditional on nobody else having advanced it since `session` was read."""
        at = write.at or turn.created_at
        number = session.num_turns + 1
        turn.turn = number
        names: dict[str, str] = {"#s": schema.STATUS}
        values: dict[str, Any] = {
            ":n": {"N": str(session.num_turns)},
            ":n1": {"N": str(number)},
            # The session's activity is the server's time: a client's created_at may be old.
            ":now": {"S": at},
            ":one": {"N": "1"},
        }
        # idle_bucket only changes (and so only rewrites the sweeper's index) in a new bucket.
        values[":bucket"] = {"S": idle_bucket(at)}
        sets = ["num_turns = :n1", "last_active_at = :now", "version = version + :one"]
        if write.rename:
            names["#name"] = "name"
            values.update(
                {":name": {"S": write.rename}, ":false": {"BOOL": False}, ":titled": {"BOOL": True}}
            )
            sets += ["#name = :name", "auto_named = :false", "titled = :titled"]
        recent, overflow = _recent_messages(
            session, turn, number, write.keep_message_ids, names, sets
        )
        if write.stack:
            # A message waiting for its answer: the newest one is the stack's head.
            sets.append("stack_head = :n1")
        condition = _admission(session, turn, write.stack, values, sets)
        # Hand-off to a person: who may write this turn now, and what it changes.
        condition += _handoff_condition(needs_handoff(turn))
        removes = _handoff_change(write.handoff, sets, values) if write.handoff is not None else []
        update = "SET " + ", ".join(sets)
        removes = [f"recent_messages.#o{i}" for i in range(len(overflow))] + removes
        if removes:
            update += " REMOVE " + ", ".join(removes)
        self._put_with_session(turn, session.session_id, update, condition, names, values)
        session.num_turns = number
        session.last_active_at = at
        session.version += 1
        session.recent_messages = recent
        if write.rename:
            session.name, session.auto_named, session.titled = write.rename, False, True
        if write.stack:
            session.stack_head = number
        if write.handoff is not None:
            write.handoff.apply(session, number)
        return session

    def _put_with_session(
        self,
        turn: Turn,
        session_id: str,
        update: str,
        condition: str,
        names: dict[str, str],
        values: dict[str, Any],
    ) -> None:
        """The new turn put and its session updated in one transaction (Conflict when the
        session's condition or the turn's number fails)."""
        session_update: dict[str, Any] = {
            "TableName": self._sessions,
            "Key": _session_key(session_id),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        put = {
            "TableName": self._turns,
            "Item": serialize(turn_to_item(turn)),
            "ConditionExpression": f"attribute_not_exists({SESSION_ID})",
        }
        transact(
            self._db,
            [{"Put": put}, {"Update": session_update}],
            "the session changed while the turn was written",
        )

    def complete_turn(self, turn: Turn) -> None:
        try:
            self._db.update_item(**self._completion(turn))
        except ClientError as error:
            if is_conditional_failure(error):
                raise Conflict("the turn was completed by another request") from None
            raise

    def claim_answer(self, session_id: str, turn: int, *, until: str, now: str) -> bool:
        return applied(
            self._db.update_item,
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
        # sources, and a degraded or stopped answer says so, as a turn answered at the first
        # try does.
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
            # A streamed answer its reader stopped (written only when it was).
            "stopped",
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
        self, answer: Turn, covered: CoveredTurns, rename: str | None = None
    ) -> None:
        """One TransactWriteItems: the answer, `answered_by` on the earlier messages, and the
        session's check (OPEN, still this head) or its new name."""
        items: list[dict[str, Any]] = [{"Update": self._completion(answer)}]
        for number in covered.turns:
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
        if covered.head is not None:
            condition += " AND stack_head = :head"
            values[":head"] = {"N": str(covered.head)}
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
        transact(self._db, items, "the stacked messages changed while they were answered")

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
        keys = first_keys(self._db, self._turns, (SESSION_ID, session_id), TURN, limit)
        self._batch_write(self._turns, ({"DeleteRequest": {"Key": k}} for k in keys))
        return len(keys)
