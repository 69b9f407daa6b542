"""A LangGraph store (`BaseStore`) over the chat memory records API: an agent's long-term memory
kept as records of the caller's profile, where the chat itself recalls them too.

    store = ChatMemoryStore(base_url="http://127.0.0.1:8000", user_id="alice")
    graph = builder.compile(store=store)

One store is one caller. The server keeps one profile per caller (the local user id, the Cognito
token's user or the IAM identity), so a store reads and writes only that caller's records; an
agent serving several users builds one store per user, or one per application and keeps users
apart in namespaces (("memories", user_id)).

Namespaces are the server's: each record carries its namespace, and listing, search, filters,
`list_namespaces` (prefix, suffix, max_depth, limit, offset) and paging are done there, so a
query in a small namespace finds its items whatever the other namespaces hold. An item is a
record whose id is its namespace's labels and its key joined by ":" (each part escaped to the id
alphabet `[A-Za-z0-9_.:-]`: a character outside `[A-Za-z0-9_-]` becomes `.HH` per UTF-8 byte),
because a record id is unique per caller; ids are at most 128 characters, so `put` refuses a
longer namespace and key.

One namespace, `("profile",)`, is the profile itself: its items are records whose id is just the
key, and what the server draws from chats (facts, preferences, session summaries) and what is
stated through the API or the MCP server is there, with its record id as key. So
`search(("profile",), query=...)` finds what the user said in past conversations. There, records
follow the profile's rules: a newer one about the same thing ("I live in Porto" after "I live in
Lisbon") supersedes the older, which is history (`search` leaves it out unless
`include_history=True`; `get` still returns it). In every other namespace an item is its key, as
in LangGraph's own stores: nothing merges or supersedes.

Values: a record is text, so a value that is only `{text_key: "a sentence"}` (default key
`"text"`) is stored as that sentence, which the chat's recall can quote as it is; any other value
is stored as its compact JSON, and `get` returns the same dict either way. A value's text is at
most 65,536 characters (the first 8,000 are what search embeds). `filter` (LangGraph's operators:
`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`) is applied by the server to that value (a sentence
is `{"text": sentence}`).

Search with a query ranks by meaning and words; each `SearchItem.score` is the server's fused
score (higher is closer). Without a query, items come by record id, descending: within a
namespace by key, descending, and records the server made (whose ids begin with their time)
newest first. Not by when they were last updated: LangGraph's stores do not agree there
(InMemoryStore answers in its dictionaries' order, namespaces as first created and keys as first
put; the Postgres and SQLite stores most recently updated first), and an order by update time
would read every record under the prefix, or an index that is only eventually consistent (a
just-put item could be missing), where this order is DynamoDB's own and a page stops at what it
answers. Sort the page by `updated_at` for that order. A deleted key
can be put again at once.

Indexing: the server embeds an item's whole value (its text, or its JSON), so a list of fields
given as `index` (or the store's `index` config) is taken as "index it". `put(..., index=False)`
stores the item without an embedding, as LangGraph's stores do: `get`, listing and a search
without a query find it; a search with a query never ranks it by meaning, and finds it only by
its words, after every item the index ranked, when the index ranked fewer than asked
(InMemoryStore puts such items last, with no score; here they carry a words-only score). A
later put without `index=False` embeds it again. The profile's own namespace, `("profile",)`,
is always indexed (chats recall it): `index=False` there is refused (400).

TTL: `put(..., ttl=minutes)` (or `TTLConfig(default_ttl=...)` given as `ttl_config`) stores the
record with an expiry of that many minutes from the put (the API's `ttl_seconds`, rounded up to
a whole second). From then on the server never returns, searches, recalls or lists it, and the
key is free (a put creates a new item); DynamoDB's TTL deletes it later. A put without a TTL
(and no default) makes the item lasting again. The expiry is counted from the last put only:
reads do not refresh it (`refresh_on_read` and `get(..., refresh_ttl=...)` are accepted and
have no effect), because a refresh would be a write per read; an agent that wants it puts the
item again. Expired items are always omitted, whatever `omit_expired` says.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Iterable, Mapping
from contextlib import suppress
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from chatmemory_client.checkpoint import ChatMemorySaver
from chatmemory_client.client import ChatMemoryClient
from chatmemory_client.errors import NotFound
from chatmemory_client.models import Record

__all__ = ["ChatMemorySaver", "ChatMemoryStore"]

MAX_RECORD_ID = 128
# The profile's own namespace on the server: what chats taught lives there.
PROFILE_NAMESPACE: tuple[str, ...] = ("profile",)
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ESCAPED = re.compile(r"(?:\.[0-9A-F]{2})+")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class ChatMemoryStore(BaseStore):
    """LangGraph's long-term memory store on one caller's chat memory profile."""

    # Items expire (put's ttl, in minutes) on the server: see the module's docstring.
    supports_ttl: bool = True

    def __init__(
        self,
        *,
        base_url: str | None = None,
        user_id: str | None = None,
        token: str | None = None,
        client: ChatMemoryClient | None = None,
        text_key: str = "text",
        include_history: bool = False,
        ttl_config: TTLConfig | None = None,
    ) -> None:
        if client is None:
            if not base_url:
                raise ValueError("ChatMemoryStore needs base_url (or a ChatMemoryClient)")
            client = ChatMemoryClient(base_url, user_id=user_id, token=token)
        self.client = client
        self.profile_namespace = PROFILE_NAMESPACE
        self.text_key = text_key
        self.include_history = include_history
        self.ttl_config = ttl_config

    # --- BaseStore ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order, one API call each."""
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
        if record.namespace != tuple(op.namespace):
            return None  # another namespace's record (stated before namespaces existed)
        return self._item(record)

    def _put(self, op: PutOp) -> None:
        if op.value is None:
            # Deleting what is not there (or could not be) is done.
            with suppress(ValueError, NotFound):
                self.client.delete_record(self.record_id(op.namespace, op.key))
            return
        record_id = self.record_id(op.namespace, op.key)
        self.client.remember(
            self.encode_value(op.value),
            record_id=record_id,
            namespace=list(op.namespace),
            ttl_seconds=None if op.ttl is None else max(1, math.ceil(op.ttl * 60)),
            index=op.index is not False,
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit <= 0:
            return []
        found: list[SearchItem] = []
        offset, wanted = max(op.offset, 0), op.limit
        while len(found) < op.limit:
            records = self.client.find_records(
                query=op.query or None,
                namespace_prefix=op.namespace_prefix,
                filter=op.filter or None,
                limit=min(wanted, 100),
                offset=offset,
                include_history=self.include_history,
            )
            for record in records:
                created, updated = _times(record)
                found.append(
                    SearchItem(
                        namespace=record.namespace,
                        key=self.key_of(record),
                        value=self.decode_value(record.text),
                        created_at=created,
                        updated_at=updated,
                        score=record.score,
                    )
                )
            if len(records) < min(wanted, 100):
                break
            offset, wanted = offset + len(records), wanted - len(records)
        return found

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        suffix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                prefix = tuple(condition.path)
            elif condition.match_type == "suffix":
                suffix = tuple(condition.path)
            else:
                raise ValueError(f"unknown namespace match type: {condition.match_type}")
        return self.client.list_namespaces(
            prefix=prefix,
            suffix=suffix,
            max_depth=op.max_depth,
            limit=op.limit,
            offset=op.offset,
        )

    # --- namespaces, keys and values as records ----------------------------------------------

    def record_id(self, namespace: tuple[str, ...], key: str) -> str:
        """The record id of an item: its key alone in the profile namespace, else its
        namespace's labels and its key joined by ":" (each escaped, so never ambiguous)."""
        parts = [key] if tuple(namespace) == self.profile_namespace else [*namespace, key]
        record_id = ":".join(_escape(part) for part in parts)
        if not key:
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

    def key_of(self, record: Record) -> str:
        """An item's key: the last part of its record id, or in the profile namespace the
        whole id (a record the server named may hold ":" too)."""
        if record.namespace != self.profile_namespace:
            return self.split_record_id(record.record_id)[1]
        key = _unescape(record.record_id)
        return key if _escape(key) == record.record_id else record.record_id

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
        created, updated = _times(record)
        return Item(
            value=self.decode_value(record.text),
            key=self.key_of(record),
            namespace=record.namespace,
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
