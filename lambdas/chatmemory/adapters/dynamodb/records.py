"""The records table: the caller's profile records, their liveness and their purge."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from botocore.exceptions import ClientError

from chatmemory import schema
from chatmemory.adapters.dynamodb.client import applied, is_conditional_failure
from chatmemory.adapters.dynamodb.codec import (
    deserialize,
    record_from_item,
    record_to_item,
    serialize,
)
from chatmemory.adapters.dynamodb.tables import DynamoTables, _record_key, _session_key
from chatmemory.domain import MemoryRecord, Page, RecordFilter, visible_to
from chatmemory.schema import RECORD_ID, SESSION_ID, STATUS, USER_ID, RecordStatus


class DynamoRecordStore(DynamoTables):
    """ports.RecordStore on the records table."""

    def put_record(self, record: MemoryRecord) -> bool:
        return applied(
            self._db.put_item,
            TableName=self._records,
            Item=serialize(record_to_item(record)),
            ConditionExpression=f"attribute_not_exists({RECORD_ID})",
        )

    def statement_holder(self, owner: str, statement: str) -> str | None:
        answer = self._db.get_item(
            TableName=self._records,
            Key=_record_key(schema.statement_partition(owner), statement),
            ConsistentRead=True,
        )
        holder = answer.get("Item", {}).get(schema.STATEMENT_HOLDER)
        return holder["S"] if holder else None

    def put_stated_record(
        self,
        record: MemoryRecord,
        *,
        statement: str,
        holder: str | None,
    ) -> bool:
        claim: dict[str, Any] = {
            "TableName": self._records,
            "Item": {
                **_record_key(schema.statement_partition(record.user_id), statement),
                schema.STATEMENT_HOLDER: {"S": record.record_id},
                schema.EXPIRES_AT: {
                    "N": str(int(self.clock().timestamp()) + schema.STATEMENT_CLAIM_SECONDS)
                },
            },
            "ExpressionAttributeNames": {"#h": schema.STATEMENT_HOLDER},
        }
        if holder is None:
            claim["ConditionExpression"] = "attribute_not_exists(#h)"
        else:
            claim["ConditionExpression"] = "#h = :holder"
            claim["ExpressionAttributeValues"] = {":holder": {"S": holder}}
        actions: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._records,
                    "Item": serialize(record_to_item(record)),
                    "ConditionExpression": f"attribute_not_exists({RECORD_ID})",
                }
            },
            {"Put": claim},
        ]
        try:
            self._db.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "TransactionCanceledException":
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
        return applied(
            self._db.delete_item,
            TableName=self._records,
            Key=_record_key(owner, record_id),
            ConditionExpression="version = :v AND #e <= :now",
            ExpressionAttributeNames={"#e": schema.EXPIRES_AT},
            ExpressionAttributeValues={
                ":v": {"N": str(version)},
                ":now": {"N": str(int(self.clock().timestamp()))},
            },
        )

    def list_records(
        self, owner: str, which: RecordFilter, limit: int, next_token: str | None
    ) -> Page[MemoryRecord]:
        """A Query of the owner's partition whose filter expression is `which` (and not
        deleting, not expired): `limit` counts the items read, not the ones kept."""
        record_type, namespace_prefix = which
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

    def records_of_owner(
        self, owner: str, *, include_expired: bool = False
    ) -> Iterator[MemoryRecord]:
        now = self.clock()
        for record in self._partition(self._records, USER_ID, owner, record_from_item):
            if include_expired or not record.expired(now):
                yield record

    def profile_records(self, owner: str, limit: int) -> list[MemoryRecord]:
        answer = self._db.query(
            TableName=self._records,
            IndexName=schema.PROFILE_RECORDS_INDEX.name,
            KeyConditionExpression=f"{USER_ID} = :u",
            ExpressionAttributeValues={":u": {"S": owner}},
            Limit=limit,
        )
        return [record_from_item(item) for item in answer.get("Items", [])]

    def record_keys(self, owner: str) -> list[tuple[str, tuple[str, ...]]]:
        now = int(self.clock().timestamp())
        found = []
        for page in self._db.get_paginator("query").paginate(
            TableName=self._records,
            IndexName=schema.RECORD_KEYS_INDEX.name,
            KeyConditionExpression=f"{USER_ID} = :u",
            ExpressionAttributeValues={":u": {"S": owner}},
        ):
            for item in page.get("Items", []):
                expires_at = item.get(schema.EXPIRES_AT, {}).get("N")
                if item.get(STATUS, {}).get("S") == RecordStatus.DELETING or (
                    expires_at is not None and int(expires_at) <= now
                ):
                    continue
                namespace = schema.namespace_of_path(
                    item.get(schema.RECORD_NAMESPACE, {}).get("S", "")
                )
                found.append((item[RECORD_ID]["S"], namespace))
        return found

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
        return applied(
            self._db.update_item,
            TableName=self._records,
            Key=_record_key(owner, record_id),
            # Out of the profile index at once (schema.PROFILE_RECORDS_INDEX).
            UpdateExpression=(f"SET #s = :deleting REMOVE {schema.PROFILE_RANK} ADD version :one"),
            ConditionExpression=f"attribute_exists({RECORD_ID}) AND #s <> :deleting",
            ExpressionAttributeNames={"#s": STATUS},
            ExpressionAttributeValues={
                ":deleting": {"S": RecordStatus.DELETING},
                ":one": {"N": "1"},
            },
        )

    def remove_records(self, owner: str, record_ids: Sequence[str]) -> None:
        self._batch_write(
            self._records,
            ({"DeleteRequest": {"Key": _record_key(owner, rid)}} for rid in record_ids),
        )

    def remove_deleted_record(self, owner: str, record_id: str) -> bool:
        return applied(
            self._db.delete_item,
            TableName=self._records,
            Key=_record_key(owner, record_id),
            ConditionExpression="#s = :deleting",
            ExpressionAttributeNames={"#s": STATUS},
            ExpressionAttributeValues={":deleting": {"S": RecordStatus.DELETING}},
        )

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
