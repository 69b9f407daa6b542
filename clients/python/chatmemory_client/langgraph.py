"""A LangGraph store (`BaseStore`) over the chat memory records API: an agent's long-term memory
kept as records of the caller's profile, where the chat itself recalls them too.

    store = ChatMemoryStore(base_url="http://127.0.0.1:8000", user_id="alice")
    graph = builder.compile(store=store)

One store is one caller. The server keeps one profile per caller (the local user id, the Cognito
token's user or the IAM identity), so a store reads and writes only that caller's records; an
agent serving several users builds one store per user.

Namespaces are kept inside that profile, in the record id. An item `(namespace, key)` is the
record `label:label:...:key` (each part escaped to the id alphabet `[A-Za-z0-9_.:-]`: a character
outside `[A-Za-z0-9_-]` becomes `.HH` per UTF-8 byte), so the same key in two namespaces is two
records and `get`, `search` and `list_namespaces` see namespaces as LangGraph's own stores do.
Record ids are at most 128 characters: `put` refuses a longer namespace and key.

One namespace, `profile_namespace` (default `("profile",)`), is the profile itself: its items are
records whose id is just the key, and records the server made (facts and preferences drawn from
chats, session summaries, what was stated through the API or the MCP server) appear there, with
their record id as key. So `search(("profile",), query=...)` finds what the user said in past
conversations, and `search((), query=...)` searches everything the caller has.

Values: a record is text, so a value that is only `{text_key: "a sentence"}` (default key
`"text"`) is stored as that sentence, which the chat's recall can quote as it is; any other value
is stored as its compact JSON, and `get` returns the same dict either way. The server's records
are read as `{text_key: text}`. Record text is limited to 1,000 characters by the API.

Search: with a query, the API's record search (by meaning and words) in its rank order (records
carry no score, so `SearchItem.score` is None); without one, the API's listing (by record id,
descending: the server's own ids begin with their time). The namespace prefix, `filter`
(LangGraph's operators: `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`), `offset` and `limit` are
applied here: to a few times as many ranked records as asked for, then, if that was not enough,
to the most the API ranks (100).

A record that a newer one about the same thing superseded (status SUPERSEDED: "I live in Porto"
after "I live in Lisbon") is history: `get` still returns it, `search` leaves it out unless
`include_history=True`. A key just deleted cannot be put again until the server's purge of it
has run (the API answers 409, raised as `Conflict`). TTLs are not supported, and `index`
settings are ignored: the server embeds every record's text.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import suppress
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from chatmemory_client.checkpoint import ChatMemorySaver
from chatmemory_client.client import ChatMemoryClient
from chatmemory_client.errors import NotFound
from chatmemory_client.models import Record

__all__ = ["ChatMemorySaver", "ChatMemoryStore"]

MAX_RECORD_ID = 128
# The API's record search answers at most this many records.
MAX_SEARCH = 100
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ESCAPED = re.compile(r"(?:\.[0-9A-F]{2})+")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class ChatMemoryStore(BaseStore):
    """LangGraph's long-term memory store on one caller's chat memory profile."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        user_id: str | None = None,
        token: str | None = None,
        client: ChatMemoryClient | None = None,
        profile_namespace: tuple[str, ...] = ("profile",),
        text_key: str = "text",
        include_history: bool = False,
    ) -> None:
        if client is None:
            if not base_url:
                raise ValueError("ChatMemoryStore needs base_url (or a ChatMemoryClient)")
            client = ChatMemoryClient(base_url, user_id=user_id, token=token)
        if not profile_namespace:
            raise ValueError("profile_namespace must have at least one label")
        self.client = client
        self.profile_namespace = tuple(profile_namespace)
        self.text_key = text_key
        self.include_history = include_history

    # --- BaseStore ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order, one API call or listing each."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown store operation: {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The same, off the event loop (the client is synchronous)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # --- operations --------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        try:
            record_id = self.record_id(op.namespace, op.key)
        except ValueError:
            return None  # no record can have this id
        try:
            record = self.client.get_record(record_id)
        except NotFound:
            return None
        return self._item(record)

    def _put(self, op: PutOp) -> None:
        if op.value is None:
            # Deleting what is not there (or could not be) is done.
            with suppress(ValueError, NotFound):
                self.client.delete_record(self.record_id(op.namespace, op.key))
            return
        record_id = self.record_id(op.namespace, op.key)
        self.client.remember(self.encode_value(op.value), record_id=record_id)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = max(op.offset, 0) + max(op.limit, 0)
        if not op.query:
            found = self._select(self.client.list_records(page_size=MAX_SEARCH), op, wanted)
            return found[op.offset : op.offset + op.limit]
        # The namespace, the filter and history are applied to the API's ranked records: ask
        # for a few times what is wanted, and for all it gives if that was not enough.
        narrowed = bool(op.namespace_prefix or op.filter or not self.include_history)
        size = min(MAX_SEARCH, max(4 * wanted, 20) if narrowed else max(wanted, 1))
        while True:
            ranked = self.client.search_records(op.query, limit=size)
            found = self._select(ranked, op, wanted)
            if len(found) >= wanted or len(ranked) < size or size == MAX_SEARCH:
                return found[op.offset : op.offset + op.limit]
            size = MAX_SEARCH

    def _select(self, records: Iterable[Record], op: SearchOp, wanted: int) -> list[SearchItem]:
        """The first `wanted` records in the namespace prefix that pass the filter."""
        prefix = tuple(op.namespace_prefix)
        found: list[SearchItem] = []
        for record in records:
            if len(found) >= wanted:
                break
            if record.status == "SUPERSEDED" and not self.include_history:
                continue
            namespace, key = self.split_record_id(record.record_id)
            if namespace[: len(prefix)] != prefix:
                continue
            value = self.decode_value(record.text)
            if op.filter and not _matches(value, op.filter):
                continue
            created, updated = _times(record)
            found.append(
                SearchItem(
                    namespace=namespace,
                    key=key,
                    value=value,
                    created_at=created,
                    updated_at=updated,
                    score=getattr(record, "score", None),
                )
            )
        return found

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = {
            self.split_record_id(r.record_id)[0]
            for r in self.client.list_records(page_size=MAX_SEARCH)
        }
        conditions = op.match_conditions or ()
        kept = [ns for ns in namespaces if all(_namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            kept = list({ns[: op.max_depth] for ns in kept})
        return sorted(kept)[op.offset : op.offset + op.limit]

    # --- namespaces, keys and values as records ----------------------------------------------

    def record_id(self, namespace: tuple[str, ...], key: str) -> str:
        """The record id of an item: its key alone in the profile namespace, else its
        namespace's labels and its key joined by ":" (each escaped, so never ambiguous)."""
        parts = [key] if tuple(namespace) == self.profile_namespace else [*namespace, key]
        record_id = ":".join(_escape(part) for part in parts)
        if not record_id:
            raise ValueError("an item's key cannot be empty")
        if len(record_id) > MAX_RECORD_ID:
            raise ValueError(
                f"namespace {tuple(namespace)!r} and key {key!r} make a record id of "
                f"{len(record_id)} characters; the API allows {MAX_RECORD_ID}"
            )
        return record_id

    def split_record_id(self, record_id: str) -> tuple[tuple[str, ...], str]:
        """The namespace and key of a record: the inverse of record_id. A record the server
        named (no ":") is in the profile namespace, its id the key."""
        if ":" not in record_id:
            key = _unescape(record_id)
            return self.profile_namespace, key if _escape(key) == record_id else record_id
        *labels, key = record_id.split(":")
        return tuple(_unescape(label) for label in labels), _unescape(key)

    def encode_value(self, value: Mapping[str, Any]) -> str:
        """A value as record text: the sentence itself for `{text_key: sentence}`, else the
        value's compact JSON (also for a sentence that JSON or the API's trimming would
        misread: one starting with "{", or with spaces around it)."""
        text = value.get(self.text_key) if len(value) == 1 else None
        if isinstance(text, str) and text.strip() == text and text and not text.startswith("{"):
            return text
        return json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"))

    def decode_value(self, text: str) -> dict[str, Any]:
        """The value a record's text holds (the inverse of encode_value)."""
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except ValueError:
                value = None
            if isinstance(value, dict):
                return value
        return {self.text_key: text}

    def _item(self, record: Record) -> Item:
        namespace, key = self.split_record_id(record.record_id)
        created, updated = _times(record)
        return Item(
            value=self.decode_value(record.text),
            key=key,
            namespace=namespace,
            created_at=created,
            updated_at=updated,
        )


def _escape(part: str) -> str:
    return "".join(
        c if c in _PLAIN else "".join(f".{b:02X}" for b in c.encode("utf-8")) for c in part
    )


def _unescape(part: str) -> str:
    def decode(match: re.Match[str]) -> str:
        try:
            return bytes.fromhex(match.group(0).replace(".", "")).decode("utf-8")
        except UnicodeDecodeError:
            return match.group(0)  # not ours: leave it as the server wrote it

    return _ESCAPED.sub(decode, part)


def _times(record: Record) -> tuple[datetime, datetime]:
    created = _when(record.created_at)
    return created, _when(record.updated_at) if record.updated_at else created


def _when(stamp: str) -> datetime:
    if not stamp:
        return _EPOCH
    # Python 3.10's fromisoformat does not read a trailing "Z".
    when = datetime.fromisoformat(stamp[:-1] + "+00:00" if stamp.endswith("Z") else stamp)
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels: Iterator[tuple[str, str]]
    if condition.match_type == "prefix":
        labels = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        labels = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"unknown namespace match type: {condition.match_type}")
    return all(want in ("*", have) for have, want in labels)


def _matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    return all(_compare(value.get(field), wanted) for field, wanted in conditions.items())


def _compare(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: nested objects match field by field, `$` operators compare."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and _matches(actual, wanted)
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return actual == wanted


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return actual == operand
    if op == "$ne":
        return actual != operand
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            left, right = float(actual), float(operand)
        except (TypeError, ValueError):
            return False  # a missing or non-numeric field is outside any range
        return {
            "$gt": left > right,
            "$gte": left >= right,
            "$lt": left < right,
            "$lte": left <= right,
        }[op]
    raise ValueError(f"unsupported filter operator: {op}")
