"""The users table: a caller's generation (their owner key), a forget, the purges it queues."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from chatmemory import schema
from chatmemory.adapters.dynamodb.client import applied, is_conditional_failure
from chatmemory.adapters.dynamodb.codec import serialize_value, user_from_item
from chatmemory.adapters.dynamodb.tables import DynamoTables, _user_key
from chatmemory.domain import PurgeEntry, UserState
from chatmemory.errors import Conflict
from chatmemory.schema import USER_ID, PurgeState


class DynamoUserStore(DynamoTables):
    """The users part of ports.SessionStore: owner keys, forgets and their queued purges."""

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
        return applied(
            self._db.update_item,
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
