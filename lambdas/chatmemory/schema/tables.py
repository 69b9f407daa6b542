"""The tables, their keys and indexes, and the rules of identifiers and namespaces."""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

AttrType = Literal["S", "N", "B"]


class KeyAttr(NamedTuple):
    name: str
    type: AttrType


class IndexSpec(NamedTuple):
    """A global secondary index. `include` lists projected non-key attributes (INCLUDE);
    None projects ALL."""

    name: str
    partition_key: KeyAttr
    sort_key: KeyAttr | None = None
    include: tuple[str, ...] | None = None

    @property
    def projection_type(self) -> str:
        return "ALL" if self.include is None else ("INCLUDE" if self.include else "KEYS_ONLY")

    def definition(self) -> dict[str, Any]:
        """The index as boto3's create_table and update_table take it."""
        return {
            "IndexName": self.name,
            "KeySchema": _key_schema(self.partition_key, self.sort_key),
            "Projection": _projection(self),
        }


@dataclass(frozen=True)
class TableSpec:
    """Logical table: keys, GSIs and stream view type. Physical names come from the deployment."""

    logical_name: str
    partition_key: KeyAttr
    sort_key: KeyAttr | None = None
    indexes: tuple[IndexSpec, ...] = ()
    stream_view_type: str = "NEW_AND_OLD_IMAGES"
    ttl_attribute: str | None = None
    env_var: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def key_attrs(self) -> list[KeyAttr]:
        keys = [self.partition_key, self.sort_key]
        for index in self.indexes:
            keys += [index.partition_key, index.sort_key]
        unique: dict[str, KeyAttr] = {}
        for key in keys:
            if key is not None:
                unique.setdefault(key.name, key)
        return list(unique.values())

    def create_table_kwargs(self, table_name: str) -> dict[str, Any]:
        """Arguments for boto3 `create_table` (local mode, moto, DynamoDB Local)."""
        kwargs: dict[str, Any] = {
            "TableName": table_name,
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [
                {"AttributeName": k.name, "AttributeType": k.type} for k in self.key_attrs()
            ],
            "KeySchema": _key_schema(self.partition_key, self.sort_key),
            "StreamSpecification": {
                "StreamEnabled": True,
                "StreamViewType": self.stream_view_type,
            },
        }
        if self.indexes:
            kwargs["GlobalSecondaryIndexes"] = [index.definition() for index in self.indexes]
        return kwargs


def _key_schema(pk: KeyAttr, sk: KeyAttr | None) -> list[dict[str, str]]:
    schema = [{"AttributeName": pk.name, "KeyType": "HASH"}]
    if sk is not None:
        schema.append({"AttributeName": sk.name, "KeyType": "RANGE"})
    return schema


def _projection(index: IndexSpec) -> dict[str, Any]:
    projection: dict[str, Any] = {"ProjectionType": index.projection_type}
    if index.include:
        projection["NonKeyAttributes"] = list(index.include)
    return projection


# --- identifiers ------------------------------------------------------------------------------
# One rule for every identifier a client sends or gets back to send again: a session id (in a
# path, or continue_from), a turn number, a record id (in a path, or a client's own in POST
# /memories/records), a client_message_id (and the labels of a client's namespaces, which the
# LangGraph store keeps in record ids). 1-128 letters, digits and `_ . : -`, at least one of
# them not a dot: no "." or ".." that a URL library would collapse into the parent path
# (DELETE /memories/records/.. is DELETE /memories), no "/", "?", "#" or "%" of URL syntax, no
# "#" that separates the parts of our own keys (owner keys, long-term entry keys), no space or
# control character. Refused with 400 before anything is read. A turn number is a whole number
# written in plain digits, from 1 to MAX_TURN_NUMBER.
ID_MAX_LENGTH = 128
ID_PATTERN = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"
# Far beyond any session (an import holds 2,000 turns); DynamoDB numbers stop at 38 digits.
MAX_TURN_NUMBER = 999_999_999
# The longest message a turn takes, in characters (MAX_INPUT_CHARS): what chat models take in
# one message (tens of KB), and the bound a setting may raise it to. One turn's item must stay
# under DynamoDB's 400 KB whatever its characters (4 bytes each at most in UTF-8): the input
# (40,000 characters: 160 KB), the response (20,000: 80 KB), the framework's messages
# (MAX_TURN_MESSAGES_BYTES: 128 KB) and the metadata (2 KB) are 370 KB at most.
MAX_INPUT_CHARS_DEFAULT = 32_000
MAX_INPUT_CHARS_LIMIT = 40_000
# A turn's `messages` (POST /turns, PATCH): the framework's own messages the turn stands for (a
# LangChain message list: tool calls, names, ids, content parts), kept verbatim as JSON.
MAX_TURN_MESSAGES_BYTES = 128 * 1024
# What a caller may state or correct as one record (POST and PATCH /memories/records, and the
# chat command /remember): a fact or a preference, or an agent's memory (a LangGraph store's
# value, as JSON). 64 KiB of text: at most 256 KiB of UTF-8 in an item of at most 400 KiB.
MAX_RECORD_CHARS = 65_536
# The longest expiry a record may be stated with (ttl_seconds): ten years.
MAX_RECORD_TTL_SECONDS = 10 * 365 * 24 * 3600
# What of a record its index entry holds and is embedded from (embedding models take a few
# thousand tokens; S3 Vectors' metadata is at most 40 KB): the record keeps all of its text.
MAX_RECORD_ENTRY_CHARS = 8_000
# A filter of POST /memories/records/search: objects and lists nested at most this deep (the
# filter itself is level 1), and at most this many keys and values in all. LangGraph's filters
# are a few fields; these bound what one search costs to check and match per record.
MAX_RECORD_FILTER_DEPTH = 8
MAX_RECORD_FILTER_VALUES = 256
# A namespace of a client's records: at most this many labels, each 1-MAX_NAMESPACE_LABEL_CHARS
# characters without control characters (the separator of their stored path is one).
MAX_NAMESPACE_DEPTH = 16
MAX_NAMESPACE_LABEL_CHARS = 128
NAMESPACE_SEPARATOR = "\x1f"
# The profile's own namespace, where extraction, summaries and what is stated without one go.
# Its records are stored without a namespace (as before namespaces existed).
PROFILE_NAMESPACE: tuple[str, ...] = ("profile",)
# Scoping like Mem0's agent_id/run_id: a record stated for an agent (and a run of it) is in the
# namespace ("agent", <agent_id>, "run", <run_id>, ...the client's own labels); search by them is
# search under that prefix. Any namespace that begins so is that agent's (and run's).
AGENT_LABEL = "agent"
RUN_LABEL = "run"


def scope_of(namespace: Sequence[str]) -> tuple[str | None, str | None]:
    """The agent_id and run_id a record's namespace names (services/profile.scoped_namespace)."""
    labels = list(namespace)
    agent_id = run_id = None
    if len(labels) >= 2 and labels[0] == AGENT_LABEL:
        agent_id, labels = labels[1], labels[2:]
    if len(labels) >= 2 and labels[0] == RUN_LABEL:
        run_id = labels[1]
    return agent_id, run_id


def namespace_path(labels: tuple[str, ...] | list[str]) -> str:
    """A namespace as one string whose prefixes are its prefixes, label by label: each label
    followed by the separator (("a", "b") -> "a\x1fb\x1f"; () -> ""), so ("a",) is a prefix of
    ("a", "b") and not of ("ab",). DynamoDB filters on it with begins_with."""
    return "".join(f"{label}{NAMESPACE_SEPARATOR}" for label in labels)


def namespace_of_path(path: str) -> tuple[str, ...]:
    return tuple(path.split(NAMESPACE_SEPARATOR)[:-1]) if path else ()


# --- sessions -------------------------------------------------------------------------------

SESSION_ID = "session_id"
USER_ID = "user_id"
STARTED_AT = "started_at"
LAST_ACTIVE_AT = "last_active_at"
STATUS = "status"
NUM_TURNS = "num_turns"
# Present only while a session needs background attention: a write-sharded key "<STATE>#<n>" for
# the sparse index the sweeper reads (OPEN: ended when idle; ENDED: a consolidation to start
# again if it is lost, sorted by when the session ended; IMPORTING: an import that never
# finished; DELETING: a purge to re-kick if it stalled), so no partition of that index becomes
# hot and settled sessions (CONSOLIDATED, FAILED) drop out of it.
OPEN_SHARD = "open_shard"
OPEN_SHARDS = 16
# The sparse index is sorted by last activity rounded down to IDLE_BUCKET_MINUTES: a turn
# changes that key (a delete and a put in the index, paid on every write) only when it starts a
# new bucket, not on every turn. The sweeper ends a session a bucket later at the most.
IDLE_BUCKET = "idle_bucket"
IDLE_BUCKET_MINUTES = 10


def sweep_shard(state: str, shard: int) -> str:
    """The sparse index's partition key for sessions in `state` of one shard: "<STATE>#<n>"."""
    return f"{state}#{shard}"


def sweep_shard_of(session_id: str, state: str) -> str:
    """A session's partition of the sparse index: its id spread over OPEN_SHARDS shards."""
    return sweep_shard(state, zlib.crc32(session_id.encode()) % OPEN_SHARDS)


def idle_bucket(timestamp: str) -> str:
    """A stored time (ISO 8601, UTC) rounded down to IDLE_BUCKET_MINUTES: "2026-11-23T07:10"."""
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(UTC)
    minute = moment.minute - moment.minute % IDLE_BUCKET_MINUTES
    return moment.strftime("%Y-%m-%dT%H:") + f"{minute:02d}"


# A session id a client chose ("user42-conv", a LangGraph thread id): PUT /sessions/{id}. It lives
# in the caller's own id space, so it is not the session's key: an alias item of the sessions
# table maps (caller, client id) to the server's session id. Its key starts with "alias#" and
# holds "#", which no session id can (ID_PATTERN), so it never meets a session. It is written in
# one transaction with the session it names, and it moves to a continuation when a message
# reaches an ended session through it; a DELETE leaves it naming a DELETING session, which a
# PUT replaces (conditional on what it named), so a client id is reusable at once. The key
# holds the caller id, not the owner key: after a forget, the alias names a session of a
# forgotten generation (invisible), which a PUT replaces the same way.
CLIENT_ID = "client_id"
ALIAS_TARGET = "alias_target"


def alias_key(caller: str, client_id: str) -> str:
    """The sessions table key of a caller's client id: "alias#<client id>#<caller id>" (the
    client id has no "#", so the two parts never run into each other)."""
    return f"alias#{client_id}#{caller}"


# Vectors the chat keeps across cold starts (ports.VectorCache: auto-recall's small-talk
# phrasings, per embedding model and phrase set): one item of the sessions table, whose key
# holds "#" like an alias's, so it never meets a session. It has no status and no index key, so
# no stream filter and no index sees it. VECTORS holds float32 values, little-endian, row after
# row; VECTOR_ROWS and VECTOR_DIMENSION say how to cut them.
VECTORS = "vectors"
VECTOR_ROWS = "rows"
VECTOR_DIMENSION = "dimension"


def vector_cache_key(name: str) -> str:
    """The sessions table key of the cached vectors named `name`: "cache#<name>"."""
    return f"cache#{name}"


USER_SESSIONS_INDEX = IndexSpec(
    name="user-sessions",
    partition_key=KeyAttr(USER_ID, "S"),
    sort_key=KeyAttr(STARTED_AT, "S"),
    # What a listing shows, and nothing more: every turn rewrites the projected copy, so the
    # idempotency keys and the summaries of the session item stay out of it.
    include=("name", STATUS, LAST_ACTIVE_AT, "ended_at", "num_turns"),
)
OPEN_SESSIONS_INDEX = IndexSpec(
    name="open-sessions",
    partition_key=KeyAttr(OPEN_SHARD, "S"),
    sort_key=KeyAttr(IDLE_BUCKET, "S"),
    include=(),  # keys only: the sweeper needs the session id
)

# Present only while a session is handed to a person: "WAITING" (no agent has answered yet) or
# "ACTIVE" (an agent answers); the sparse index agents list their queue from, oldest first.
HANDOFF_QUEUE = "handoff_queue"
HANDOFF_AT = "handoff_at"
HANDOFF_SESSIONS_INDEX = IndexSpec(
    name="handoff-sessions",
    partition_key=KeyAttr(HANDOFF_QUEUE, "S"),
    sort_key=KeyAttr(HANDOFF_AT, "S"),
    include=("name", STATUS, LAST_ACTIVE_AT, "num_turns", "handoff_reason", "handoff_agent"),
)

SESSIONS = TableSpec(
    logical_name="sessions",
    partition_key=KeyAttr(SESSION_ID, "S"),
    indexes=(USER_SESSIONS_INDEX, OPEN_SESSIONS_INDEX, HANDOFF_SESSIONS_INDEX),
    env_var="SESSIONS_TABLE",
)

# --- conversations (one item per turn) -------------------------------------------------------

TURN = "turn"
EXPIRES_AT = "expires_at"

CONVERSATIONS = TableSpec(
    logical_name="conversations",
    partition_key=KeyAttr(SESSION_ID, "S"),
    sort_key=KeyAttr(TURN, "N"),
    ttl_attribute=EXPIRES_AT,
    env_var="CONVERSATIONS_TABLE",
)

# --- users (one small item per caller: the generation of their memory, pending purges) ------

# A caller's data is stored under an owner key: the caller's id while `generation` is 0, else
# "<id>#<generation>". Forgetting everything is one conditional write that bumps the generation:
# every read resolves the current owner, so the old data is unreachable at once, and a purge
# deletes it in the background (see services/background/forget.py).
GENERATION = "generation"
PURGES = "purges"  # list of {"owner", "requested_at", "state"}: namespaces still being purged
PURGE_STATE = "purge_state"  # "PENDING" while a purge entry is PENDING (the stream filter's key)
PURGE_ROUND = "purge_round"  # bumped to hand the purge to a next invocation

USERS = TableSpec(
    logical_name="users",
    partition_key=KeyAttr(USER_ID, "S"),
    env_var="USERS_TABLE",
)

# --- records (the caller's profile: facts, preferences, session summaries) ------------------

# One item per record under the owner key, so a caller's records are one partition (listed,
# searched and purged together) and a forgotten owner key takes them along.
RECORD_ID = "record_id"
# A record's namespace, as its path (namespace_path); absent for the profile's own records.
RECORD_NAMESPACE = "ns"

# Who holds a statement the caller made (POST /memories/records without record_id, /remember):
# a claim item per (owner, type and normalised words), beside the records in a partition of its
# own ("<owner>#stated", never an owner key: those are "<id>" or "<id>#<n>"), so no read of
# the owner's records ever meets one. It names the record that holds the statement
# (STATEMENT_HOLDER) and is written in the record's transaction, conditional on naming what the
# writer read: of concurrent identical statements one writes its record and the others read
# it as their duplicate. It only arbitrates such races, so it expires an hour after its write
# (DynamoDB's TTL deletes it within days; the purge ignores its removal); one that names a
# record gone or changed is taken over by the next statement of those words.
STATEMENT_HOLDER = "holder"
STATEMENT_CLAIM_SECONDS = 3600


def statement_partition(owner: str) -> str:
    """The partition of an owner's statement claims: "<owner>#stated"."""
    return f"{owner}#stated"


# The profile's lasting records (ACTIVE facts and preferences of the profile's own namespace that
# never expire and are no dated event) carry their place in the profile block (profile_rank,
# services/profile/block.py): the sparse index a chat turn reads the block from, one Query
# bounded by the block, whatever else the caller's partition holds.
PROFILE_RANK = "profile_rank"
PROFILE_RECORDS_INDEX = IndexSpec(
    name="profile-records",
    partition_key=KeyAttr(USER_ID, "S"),
    sort_key=KeyAttr(PROFILE_RANK, "S"),
    include=("text", "type", "category", "origin", "created_at", "updated_at", "provenance"),
)
# Every record's keys, namespace and liveness, and nothing more: what the namespaces of a
# caller's records are read from (POST /memories/namespaces), a few dozen bytes a record where
# the table's items are up to 64 KiB of text each.
RECORD_KEYS_INDEX = IndexSpec(
    name="record-keys",
    partition_key=KeyAttr(USER_ID, "S"),
    sort_key=KeyAttr(RECORD_ID, "S"),
    include=(RECORD_NAMESPACE, STATUS, EXPIRES_AT),
)

RECORDS = TableSpec(
    logical_name="records",
    partition_key=KeyAttr(USER_ID, "S"),
    sort_key=KeyAttr(RECORD_ID, "S"),
    indexes=(PROFILE_RECORDS_INDEX, RECORD_KEYS_INDEX),
    # A record stated with an expiry (ttl_seconds) carries it as epoch seconds: reads hide it
    # from that second on, and DynamoDB's TTL deletes the item (within days) afterwards.
    ttl_attribute=EXPIRES_AT,
    env_var="RECORDS_TABLE",
)

# --- checkpoints (a LangGraph thread's checkpoints, channel values and pending writes) ---------

# Items of one session's partition, told apart by the prefix of their sort key
# (checkpoint_key, checkpoint_body_key, blob_key, write_key): a checkpoint is two items (what a
# listing reads, and its body), each channel value and each pending write one item or, past
# CHECKPOINT_CHUNK_BYTES, several (a DynamoDB item holds at most 400 KB). A session's purge
# deletes the partition with its turns.
CHECKPOINT_KEY = "item"

CHECKPOINTS = TableSpec(
    logical_name="checkpoints",
    partition_key=KeyAttr(SESSION_ID, "S"),
    sort_key=KeyAttr(CHECKPOINT_KEY, "S"),
    env_var="CHECKPOINTS_TABLE",
)
# The bytes of a value one item carries: 400 KB less room for the keys and attribute names.
CHECKPOINT_CHUNK_BYTES = 350_000
# What one checkpoint may hold, as serialized by the client: its channel values (every channel
# of the checkpoint, carried-over ones included), and its pending writes together. Both at their
# limit, a GET of the checkpoint answers 4 MiB of data, 5.6 MB as base64 in JSON: within the
# 6 MB a Lambda answer may carry (API Gateway's own limit is 10 MB).
MAX_CHECKPOINT_BYTES = 2 * 1024 * 1024
MAX_CHECKPOINT_WRITES_BYTES = 2 * 1024 * 1024
# The checkpoint item's own part (the checkpoint without its values, its metadata and its
# channel versions), within DynamoDB's 400 KB of an item with room for names and keys.
MAX_CHECKPOINT_ITEM_BYTES = 300_000
# How deep a checkpoint's metadata (as JSON) and a listing's filter may nest: LangGraph's are
# two or three levels; a comparison of deeper values would run into Python's recursion limit.
MAX_CHECKPOINT_JSON_DEPTH = 64


# A sort key holds at most 1,024 bytes (DynamoDB): a namespace, channel, version or task id
# longer than this in a key is replaced there by a digest (its item keeps the value itself).
_KEY_PART_BYTES = 200


def _key_part(value: str) -> str:
    """A namespace, channel, version or task id inside a sort key: "#" (the separator), "%" and
    "~" escaped; past _KEY_PART_BYTES, "~" and its SHA-256 (no escaped value starts with "~")."""
    escaped = value.replace("%", "%25").replace("#", "%23").replace("~", "%7E")
    if len(escaped.encode("utf-8")) <= _KEY_PART_BYTES:
        return escaped
    return "~" + hashlib.sha256(value.encode("utf-8")).hexdigest()


def checkpoint_prefix(checkpoint_ns: str) -> str:
    return f"c#{_key_part(checkpoint_ns)}#"


def checkpoint_key(checkpoint_ns: str, checkpoint_id: str) -> str:
    """A checkpoint's item: sorted by id within its namespace (LangGraph's ids sort by time)."""
    return checkpoint_prefix(checkpoint_ns) + checkpoint_id


def _chunk_part(chunk: int, digest: str) -> str:
    """A chunk's place in a key: the first chunk (the value's head) is "0"; a further one is
    named by the digest of the value it belongs to and its number ("<digest>.<n>"), so a write
    of other bytes under the same name never overwrites a stored value's chunks. (Values
    written before digests were used have further chunks "<n>", read as their head says.)"""
    return f"{digest}.{chunk}" if chunk and digest else str(chunk)


def checkpoint_body_key(checkpoint_ns: str, checkpoint_id: str) -> str:
    """A checkpoint's body: the checkpoint itself, its serde metadata and channel versions,
    read only for the checkpoints a request answers (a listing filters and pages on the
    checkpoint_key items, which hold its metadata as JSON)."""
    return f"d#{_key_part(checkpoint_ns)}#{checkpoint_id}"


def blob_key(
    checkpoint_ns: str, channel: str, version: str, chunk: int = 0, digest: str = ""
) -> str:
    """One chunk of a channel's value at a version (shared by every checkpoint that has it).
    Every key of these functions stays within DynamoDB's 1,024 bytes of a sort key."""
    return f"b#{_key_part(checkpoint_ns)}#{_key_part(channel)}#{_key_part(version)}#" + _chunk_part(
        chunk, digest
    )


def writes_prefix(checkpoint_ns: str, checkpoint_id: str) -> str:
    return f"w#{_key_part(checkpoint_ns)}#{checkpoint_id}#"


def write_key(
    checkpoint_ns: str,
    checkpoint_id: str,
    task_id: str,
    idx: int,
    chunk: int = 0,
    digest: str = "",
) -> str:
    """One chunk of a pending write: (task_id, idx) is its identity (put_writes' idempotency)."""
    return (
        f"{writes_prefix(checkpoint_ns, checkpoint_id)}{_key_part(task_id)}#{idx}#"
        + _chunk_part(chunk, digest)
    )


TABLES: tuple[TableSpec, ...] = (SESSIONS, CONVERSATIONS, USERS, RECORDS, CHECKPOINTS)
