"""The one definition of tables, keys, indexes, stream settings and env-var names.

Plain data only (no boto3, no aws_cdk): CDK builds the tables from these specs, local mode and
the tests create tables from them, and the adapters read key names from them.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
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


class SessionStatus(StrEnum):
    OPEN = "OPEN"
    ENDED = "ENDED"
    CONSOLIDATED = "CONSOLIDATED"
    FAILED = "FAILED"
    # Written but not yet readable: an import whose turns are still being written.
    IMPORTING = "IMPORTING"
    # Deleted for every reader; a purge removes its turns, memories and finally the item.
    DELETING = "DELETING"


# What a caller can see, list, continue or recall (the API's statuses).
VISIBLE_STATUSES: tuple[SessionStatus, ...] = (
    SessionStatus.OPEN,
    SessionStatus.ENDED,
    SessionStatus.CONSOLIDATED,
    SessionStatus.FAILED,
)


class PurgeState(StrEnum):
    PENDING = "PENDING"
    MARKED = "MARKED"  # every session of the namespace is marked DELETING


class Intent(StrEnum):
    """How a message is answered: chat, `/past` recall, `/verified` documents, or `/remember`
    (the caller states a record of their profile)."""

    CHAT = "chat"
    PAST = "past"
    VERIFIED = "verified"
    REMEMBER = "remember"
    # `/human [note]`: the caller asks for a person (services/conversation/handoff.py); no model
    # answers.
    HUMAN = "human"


class TurnOrigin(StrEnum):
    """Who wrote a turn's response: this service's model (POST /messages), or the client that
    stored the turn as it was (POST /turns: the caller's own agent answered, or will)."""

    CHAT = "chat"
    CLIENT = "client"
    # A human agent's reply while the session is handed to a person (its text is the turn's
    # response; the turn has no input).
    AGENT = "agent"


class HandoffState(StrEnum):
    """A session handed to a person: waiting for an agent, or answered by one."""

    WAITING = "WAITING"
    ACTIVE = "ACTIVE"


# The EventBridge events of a hand-off (source, and detail-type per change), so that a contact
# centre's rule can match them: {"source": ["chatmemory"], "detail-type": [HANDOFF_EVENT]}.
EVENT_SOURCE = "chatmemory"
HANDOFF_EVENT = "Session handed off"
HANDBACK_EVENT = "Session handed back"


class HandoffReason(StrEnum):
    USER_REQUEST = "user_request"  # POST /sessions/{id}/handoff or the chat command /human
    NOTHING_VERIFIED = "nothing_verified"  # /verified found nothing relevant
    NEGATIVE_SENTIMENT = "negative_sentiment"  # repeated negative user turns


class Rating(StrEnum):
    UP = "up"
    DOWN = "down"


class SentimentLabel(StrEnum):
    """The sentiment of a user's message, by VADER's convention: positive for a score of at
    least 0.05, negative for at most -0.05, neutral between."""

    POSITIVE = "positive"
    NEGATIVE = "negative"
    NEUTRAL = "neutral"


class SourceKind(StrEnum):
    SESSION = "session"
    PASSAGE = "passage"
    # A record auto-recall found close to the message (or /remember stored).
    RECORD = "record"
    # A record of the profile block, which every chat prompt holds (services/profile/block.py):
    # its id is the record's, and it has no score (it was not chosen by similarity).
    PROFILE = "profile"


class RecordType(StrEnum):
    """What the caller's profile holds."""

    FACT = "fact"  # who they are, people, places, plans, decisions
    PREFERENCE = "preference"  # likes and dislikes
    SUMMARY = "summary"  # what one past session was about
    # what one past session left unsettled (a plan not decided, a question left unanswered)
    OPEN_QUESTION = "open_question"


class RecordCategory(StrEnum):
    """What a fact or preference is about (services/profile/traits.category): the profile block
    keeps them in this order of importance when they do not all fit its budget."""

    HEALTH = "health"  # health and safety: allergies, diets, conditions, medicines, abilities
    IDENTITY = "identity"  # who they are: name, age, home, work, studies, beliefs
    PEOPLE = "people"  # family, friends, the people and pets of their life
    PREFERENCE = "preference"  # standing likes, dislikes, habits
    OTHER = "other"  # any other lasting fact
    EVENT = "event"  # something that happened at a time: recalled by meaning, not in the block


# The profile block's order: a lower tier survives its budget first; EVENT is never in it.
PROFILE_TIERS: dict[str, int] = {
    RecordCategory.HEALTH: 0,
    RecordCategory.IDENTITY: 1,
    RecordCategory.PEOPLE: 1,
    RecordCategory.PREFERENCE: 2,
    RecordCategory.OTHER: 3,
}


class RecordStatus(StrEnum):
    ACTIVE = "ACTIVE"
    SUPERSEDED = "SUPERSEDED"  # a newer record about the same thing replaced it (history)
    DELETING = "DELETING"  # deleted for every reader; the purge removes it


class RecordOrigin(StrEnum):
    EXTRACTED = "extracted"  # drawn from a session at consolidation
    STATED = "stated"  # the caller said it (POST /memories/records, /remember)
    CORRECTED = "corrected"  # the caller corrected its text


class MemoryKind(StrEnum):
    """What one long-term index entry is."""

    SUMMARY = "summary"
    OPENING = "opening"
    CHUNK = "chunk"
    PASSAGE = "passage"
    FACT = "fact"
    PREFERENCE = "preference"
    OPEN_QUESTION = "open_question"  # a record's entry, of its session (as a summary's)


# How long a streamed answer may take (POST /sessions/{id}/messages/stream): the stream
# function's timeout (API Gateway streams for up to 15 minutes; the buffered route has 29 s).
STREAM_TIMEOUT_SECONDS = 300
# The streamed message route's path ends so: POST /sessions/{session_id}/messages/stream.
STREAM_PATH_SUFFIX = "/messages/stream"
# The OpenAI-compatible chat route (handlers/openai_routes.py), answered by the stream function:
# with stream true it streams, without it answers one JSON body.
OPENAI_CHAT_PATH = "/v1/chat/completions"
# The stream function's web server answers here when it is ready (the Lambda Web Adapter's
# readiness check: AWS_LWA_READINESS_CHECK_PATH).
STREAM_HEALTH_PATH = "/healthz"

# Auto-recall's block in a chat prompt sits between these lines (services/longterm/auto_recall.py
# writes it; the offline responder reads it back).
PROMPT_MEMORY_HEADER = (
    "From earlier conversations with the user (dated; use only what helps with the message):"
)
PROMPT_MEMORY_FOOTER = "(End of earlier conversations.)"
# The profile block of a chat prompt (services/profile/block.py): what the user told us about
# themselves that lasts, in their words, on every turn.
PROMPT_PROFILE_HEADER = "About the user, in their words:"
PROMPT_PROFILE_FOOTER = "(End of profile.)"

# The owner key of verified passages: they belong to no user, and every caller may read them.
SHARED_OWNER = ""
# The format name of an exported session (GET /sessions/{id}/export, POST /sessions/import).
EXPORT_FORMAT = "chatmemory.session.v1"


# --- model and index backends (runtime settings and the stacks' config share these) ---------


class TextBackend(StrEnum):
    OFFLINE = "offline"
    SAGEMAKER = "sagemaker"
    BEDROCK = "bedrock"
    OPENAI = "openai"


# The prefixes of cross-region (system-defined) Bedrock inference profile ids:
# "<prefix>.<model id>" ("eu.cohere.embed-v4:0"). The stacks grant by them and the runtime tells
# a model's request format by the model id inside.
INFERENCE_PROFILE_PREFIXES = ("us", "eu", "apac", "global", "us-gov", "jp", "au", "ca")


def inference_profile(model_id: str) -> tuple[str, str] | None:
    """(prefix, foundation model id) of a cross-region inference profile id, else None."""
    prefix, _, rest = model_id.partition(".")
    return (prefix, rest) if prefix in INFERENCE_PROFILE_PREFIXES and rest else None


def foundation_model(model_id: str) -> str:
    """The foundation model id a Bedrock model id or inference profile id names."""
    profile = inference_profile(model_id)
    return profile[1] if profile else model_id


class EmbedBackend(StrEnum):
    OFFLINE = "offline"
    SAGEMAKER = "sagemaker"
    BEDROCK = "bedrock"
    OPENAI = "openai"


class TextFormat(StrEnum):
    """Payload formats of SageMaker text endpoints."""

    JUMPSTART_FLAN_T5 = "jumpstart-flan-t5"
    TGI = "tgi"  # Hugging Face Text Generation Inference


class EmbedFormat(StrEnum):
    """Payload formats of SageMaker embedding endpoints."""

    JUMPSTART_GPT_J = "jumpstart-gpt-j"
    TEI = "tei"  # Hugging Face Text Embeddings Inference


class SentimentMode(StrEnum):
    """How a user turn's sentiment is found (SENTIMENT)."""

    # VADER (the text model was asked before: a second model call on every turn).
    AUTO = "auto"
    VADER = "vader"  # VADER's lexicon and rules, in process
    MODEL = "model"  # one short call to the text model per chat turn, VADER when it fails
    OFF = "off"  # no sentiment on turns


class LongTermBackend(StrEnum):
    NONE = "none"
    EMBEDDED = "embedded"
    OPENSEARCH = "opensearch"
    S3VECTORS = "s3vectors"  # Amazon S3 Vectors: pay per stored GB and per query, no idle cost


# --- stream filter patterns (Lambda event source mappings and the local poller) -----------------

# A session whose status changed from OPEN to ENDED: the only record consolidation acts on.
SESSION_ENDED_FILTER: dict[str, Any] = {
    "eventName": ["MODIFY"],
    "dynamodb": {
        "OldImage": {STATUS: {"S": [SessionStatus.OPEN]}},
        "NewImage": {STATUS: {"S": [SessionStatus.ENDED]}},
    },
}
# A consolidation that handed over to a next invocation (its checkpoint's write): every change
# of the session while the checkpoint stands lets a run resume, and runs are idempotent.
CONSOLIDATION_STATE = "consolidation_state"
CONSOLIDATION_CONTINUE = "CONTINUE"
# When the sweeper last started an ENDED session's consolidation again (its stream record lost:
# expired, dead-lettered, or its run died): the same write as a checkpoint's hand-over.
CONSOLIDATION_RETRIED_AT = "consolidation_retried_at"
# The sweeper's metric (namespace ChatMemory, dimension service=sweep-idle) of how long the
# oldest session ENDED and not yet consolidated has waited, in seconds: the alarm's.
OLDEST_UNCONSOLIDATED_METRIC = "OldestUnconsolidatedSeconds"
SWEEPER_SERVICE = "sweep-idle"
METRICS_NAMESPACE = "ChatMemory"
CONSOLIDATION_CONTINUE_FILTER: dict[str, Any] = {
    "eventName": ["MODIFY"],
    "dynamodb": {
        "NewImage": {
            STATUS: {"S": [SessionStatus.ENDED, SessionStatus.FAILED]},
            CONSOLIDATION_STATE: {"S": [CONSOLIDATION_CONTINUE]},
        }
    },
}
# A new turn: what the rolling-summary compaction looks at.
TURN_INSERTED_FILTER: dict[str, Any] = {"eventName": ["INSERT"]}
# A session marked DELETING (and every later change of it, which is how a purge that ran out of
# time hands over to the next invocation).
SESSION_DELETING_FILTER: dict[str, Any] = {
    "eventName": ["MODIFY"],
    "dynamodb": {"NewImage": {STATUS: {"S": [SessionStatus.DELETING]}}},
}
# A record marked DELETING (by DELETE /memories/records/{id}).
RECORD_DELETING_FILTER: dict[str, Any] = {
    "eventName": ["MODIFY"],
    "dynamodb": {"NewImage": {STATUS: {"S": [RecordStatus.DELETING]}}},
}
# A record DynamoDB's TTL deleted (its expiry passed): the purge removes its index entries,
# named by the old image. Only the service's own deletes: the API's are purged in the request.
# Only records (every one has a type): a statement's claim expiring has nothing to purge.
RECORD_EXPIRED_FILTER: dict[str, Any] = {
    "eventName": ["REMOVE"],
    "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
    "dynamodb": {"OldImage": {"type": {"S": [t.value for t in RecordType]}}},
}
# A user whose forget request still has namespaces to purge.
USER_PURGE_FILTER: dict[str, Any] = {
    "eventName": ["INSERT", "MODIFY"],
    "dynamodb": {"NewImage": {PURGE_STATE: {"S": [PurgeState.PENDING]}}},
}


class StreamTrigger(NamedTuple):
    """One event source mapping: which table's stream runs which handler, with which filters (a
    record matching any of them goes through), batch size and retries. CDK deploys these and
    local mode's poller runs them."""

    name: str
    table: TableSpec
    handler: str
    filters: tuple[dict[str, Any], ...]
    batch_size: int
    # The function's timeout: what a run has before it must hand over to a next invocation.
    timeout_seconds: int
    # Retries after the first attempt. Consolidation marks a session FAILED on its third
    # failed attempt, so its records stop failing before these run out.
    retry_attempts: int = 3


CONSOLIDATION_TRIGGER = StreamTrigger(
    name="consolidate",
    table=SESSIONS,
    handler="handlers.consolidate.handler",
    filters=(SESSION_ENDED_FILTER, CONSOLIDATION_CONTINUE_FILTER),
    batch_size=5,  # each session is a few model calls
    timeout_seconds=300,
)
COMPACTION_TRIGGER = StreamTrigger(
    name="compact",
    table=CONVERSATIONS,
    handler="handlers.compact.handler",
    filters=(TURN_INSERTED_FILTER,),
    timeout_seconds=120,  # an extension of the rolling summary: at most 2 rounds of calls
    batch_size=20,  # most records only find the session below the threshold
)
SESSION_PURGE_TRIGGER = StreamTrigger(
    name="purge-session",
    table=SESSIONS,
    handler="handlers.purge.handler",
    filters=(SESSION_DELETING_FILTER,),
    timeout_seconds=300,
    batch_size=10,
)
USER_PURGE_TRIGGER = StreamTrigger(
    name="purge-user",
    table=USERS,
    handler="handlers.purge.handler",
    filters=(USER_PURGE_FILTER,),
    timeout_seconds=300,
    batch_size=1,  # one forget request can mean thousands of sessions to mark
)
RECORD_PURGE_TRIGGER = StreamTrigger(
    name="purge-record",
    table=RECORDS,
    handler="handlers.purge.handler",
    filters=(RECORD_DELETING_FILTER, RECORD_EXPIRED_FILTER),
    batch_size=10,
    timeout_seconds=300,
)
STREAM_TRIGGERS: tuple[StreamTrigger, ...] = (
    CONSOLIDATION_TRIGGER,
    COMPACTION_TRIGGER,
    SESSION_PURGE_TRIGGER,
    USER_PURGE_TRIGGER,
    RECORD_PURGE_TRIGGER,
)

# --- environment variables ---------------------------------------------------------------

# Set by the stack in every function's environment (stacks/functions.py), beside each one's
# own settings. Pydantic looks for plugins (packages that observe validation, such as logfire)
# the first time it builds a model, by reading the metadata of every installed distribution
# (the asset's, the Powertools layer's, the runtime's); the functions use none, so the search
# is off. A deployment that adds a plugin to the asset removes this.
FUNCTION_ENVIRONMENT = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}

# Read by Settings.from_env:

ENV_SESSIONS_TABLE = SESSIONS.env_var
ENV_CONVERSATIONS_TABLE = CONVERSATIONS.env_var
ENV_USERS_TABLE = USERS.env_var
ENV_RECORDS_TABLE = RECORDS.env_var
ENV_CHECKPOINTS_TABLE = CHECKPOINTS.env_var
ENV_AUTO_RECALL = "AUTO_RECALL"
ENV_MEMORY_TOKEN_BUDGET = "MEMORY_TOKEN_BUDGET"
ENV_PROFILE_TOKEN_BUDGET = "PROFILE_TOKEN_BUDGET"
ENV_DYNAMODB_ENDPOINT = "DYNAMODB_ENDPOINT_URL"
ENV_TEXT_BACKEND = "TEXT_BACKEND"
ENV_EMBED_BACKEND = "EMBED_BACKEND"
ENV_TEXT_ENDPOINT = "TEXT_ENDPOINT"
ENV_TEXT_FORMAT = "TEXT_FORMAT"
ENV_EMBED_ENDPOINT = "EMBED_ENDPOINT"
ENV_EMBED_FORMAT = "EMBED_FORMAT"
ENV_EMBED_DIMENSION = "EMBED_DIMENSION"
ENV_TEXT_MODEL_ID = "TEXT_MODEL_ID"
ENV_EMBED_MODEL_ID = "EMBED_MODEL_ID"
ENV_OPENAI_BASE_URL = "OPENAI_BASE_URL"
ENV_OPENAI_API_KEY = "OPENAI_API_KEY"
ENV_MODEL_TIMEOUT = "MODEL_TIMEOUT_SECONDS"
ENV_MODEL_MAX_ATTEMPTS = "MODEL_MAX_ATTEMPTS"
ENV_WINDOW_TURNS = "WINDOW_TURNS"
ENV_MAX_WINDOW_TURNS = "MAX_WINDOW_TURNS"
ENV_PROMPT_TOKEN_BUDGET = "PROMPT_TOKEN_BUDGET"
ENV_MAX_NEW_TOKENS = "MAX_NEW_TOKENS"
ENV_MAX_INPUT_CHARS = "MAX_INPUT_CHARS"
ENV_USER_ROLE = "USER_ROLE_NAME"
ENV_ASSISTANT_ROLE = "ASSISTANT_ROLE_NAME"
ENV_SYSTEM_PROMPT = "SYSTEM_PROMPT"
ENV_INPUT_TRANSFORMS = "INPUT_TRANSFORMS"
ENV_OUTPUT_TRANSFORMS = "OUTPUT_TRANSFORMS"
ENV_INTENT_CLASSIFIER = "INTENT_CLASSIFIER"
ENV_STORE_PROMPT = "STORE_PROMPT"
ENV_TURN_TTL_DAYS = "TURN_TTL_DAYS"
ENV_KEEP_MESSAGE_IDS = "KEEP_MESSAGE_IDS"
ENV_LONG_TERM_BACKEND = "LONG_TERM_BACKEND"
ENV_SENTIMENT = "SENTIMENT"
# Hand-off to a person: the EventBridge bus its events go to (unset: no events), the Cognito
# group whose members may use the agent routes, the IAM role ARN whose sessions may (auth=iam),
# and the automatic rules (off unless set).
ENV_EVENT_BUS = "EVENT_BUS_NAME"
ENV_AGENT_GROUP = "AGENT_GROUP"
ENV_AGENT_ROLE_ARN = "AGENT_ROLE_ARN"
# With IAM auth, a backend calls as one role for all of its own users: a session of a role named
# in END_USER_ROLE_ARNS may name the end user it calls for in this header, and each end user is a
# caller of their own ("<role ARN>/end-user/<id>"), with their own sessions, records and
# forget; the id follows ID_PATTERN. From anyone else the header is refused (403).
END_USER_HEADER = "X-ChatMemory-End-User"
ENV_END_USER_ROLE_ARNS = "END_USER_ROLE_ARNS"
ENV_HANDOFF_ON_NOTHING_VERIFIED = "HANDOFF_ON_NOTHING_VERIFIED"
ENV_HANDOFF_NEGATIVE_TURNS = "HANDOFF_NEGATIVE_TURNS"
ENV_HANDOFF_NEGATIVE_SCORE = "HANDOFF_NEGATIVE_SCORE"
# Local mode: the JSON-lines file hand-off events are appended to when there is no bus.
ENV_EVENTS_FILE = "EVENTS_FILE"
# Stacked messages: how long a chat message waits for more from the same user before it is
# answered (0: answer at once, messages still stack when they arrive during a model call).
ENV_STACK_WAIT_MS = "STACK_WAIT_MS"
ENV_STACK_MESSAGES = "STACK_MESSAGES"
# Comma-separated origins allowed to call the API from a browser ("*" for any); unset: none.
ENV_CORS_ORIGINS = "CORS_ALLOW_ORIGINS"

# --- long-term memory (OpenSearch k-NN; the embedded index mirrors the same fields) ------------

MEMORY_INDEX = "conversation-memories"
PASSAGE_INDEX = "verified-passages"
LONG_TERM_INDEXES = (MEMORY_INDEX, PASSAGE_INDEX)


def memory_index_names(count: int = 1) -> tuple[str, ...]:
    """The memory indexes of a domain whose owners are spread over `count` of them (an index
    holds at most 1,024 primary shards): MEMORY_INDEX, then MEMORY_INDEX-1 ... -<count-1>."""
    return (MEMORY_INDEX, *(f"{MEMORY_INDEX}-{n}" for n in range(1, count)))


def memory_index_of(owner: str, count: int = 1) -> str:
    """The memory index of an owner key among `count` (a digest of the key: stable, even)."""
    if count <= 1:
        return MEMORY_INDEX
    digest = hashlib.sha256(owner.encode()).digest()
    return memory_index_names(count)[int.from_bytes(digest[:8], "big") % count]


def long_term_index_names(memory_indexes: int = 1) -> tuple[str, ...]:
    """Every index of a domain's long-term memory: the memory indexes, then the passages'."""
    return (*memory_index_names(memory_indexes), PASSAGE_INDEX)


# On a managed domain with fine-grained access control, the Lambdas' IAM roles are mapped to this
# OpenSearch security role (read/write on the indexes above only) by the index-setup resource.
OPENSEARCH_RUNTIME_ROLE = "chatmemory_runtime"


# Document reads and writes (search, bulk, delete-by-query) on the two indexes, and the
# cluster-level half of bulk and multi-search; no index creation, mapping or admin rights but
# one: a delete-by-query with refresh=true (the adapter's, so searches stop seeing what was
# deleted when the request returns) ends with a refresh of its own, indices:admin/refresh,
# which `crud` does not include (the security plugin refuses it with 403).
def opensearch_runtime_role_body(memory_indexes: int = 1) -> dict[str, Any]:
    """The runtime's security role on a domain whose owners are spread over `memory_indexes`."""
    return {
        "description": "Chat memory Lambdas: read and write long-term memory documents",
        "cluster_permissions": ["cluster_composite_ops"],
        "index_permissions": [
            {
                "index_patterns": list(long_term_index_names(memory_indexes)),
                "allowed_actions": ["crud", "indices:admin/refresh*"],
            }
        ],
    }


OPENSEARCH_RUNTIME_ROLE_BODY = opensearch_runtime_role_body()
ENV_OPENSEARCH_ENDPOINT = "OPENSEARCH_ENDPOINT"
ENV_OPENSEARCH_SERVERLESS = "OPENSEARCH_SERVERLESS"
# How the index setup creates the indexes on a domain: primary shards, and vectors on disk.
ENV_OPENSEARCH_SHARDS = "OPENSEARCH_SHARDS"
# How many memory indexes a domain's owners are spread over (memory_index_of).
ENV_OPENSEARCH_MEMORY_INDEXES = "OPENSEARCH_MEMORY_INDEXES"
ENV_OPENSEARCH_ON_DISK = "OPENSEARCH_ON_DISK"
# Amazon S3 Vectors: the stack's vector bucket (the verified passages' index, and the shared
# memory index of deployments made before memories were indexed per user), and how many buckets
# the per-user memory indexes are spread over (user_vector_bucket).
ENV_VECTOR_BUCKET = "VECTOR_BUCKET_NAME"
ENV_VECTOR_BUCKETS = "VECTOR_BUCKETS"
# Whether the shared memory index of such a deployment still exists (until its migration is done,
# a deletion removes the entries there too).
ENV_VECTOR_SHARED_INDEX = "VECTOR_SHARED_INDEX"
ENV_MEMORY_PATH = "MEMORY_PATH"
ENV_RECALL_WEIGHTS = "RECALL_WEIGHTS"
ENV_RECENCY_HALF_LIFE_DAYS = "RECENCY_HALF_LIFE_DAYS"
ENV_COMPACT_AFTER_TURNS = "COMPACT_AFTER_TURNS"
ENV_IDLE_MINUTES = "IDLE_MINUTES"
ENV_CONSOLIDATION_RETRY_MINUTES = "CONSOLIDATION_RETRY_MINUTES"
ENV_CONSOLIDATION_RETRIES_PER_SWEEP = "CONSOLIDATION_RETRIES_PER_SWEEP"
ENV_PURGE_SETTLE_SECONDS = "PURGE_SETTLE_SECONDS"


# Words that carry no meaning for lexical search (English function words and pronouns): both
# long-term indexes leave them out of BM25, so the embedded index scores like OpenSearch and a
# question's "what did you..." does not match every memory.
TEXT_STOPWORDS: tuple[str, ...] = tuple(
    sorted(
        """a about above after again against all am an and any are as at be because been before
        being below between both but by can could did do does doing down during each few for
        from further had has have having he her here hers herself him himself his how i if in
        into is it its itself just me more most my myself no nor not now of off on once only or
        other our ours ourselves out over own same she should so some such than that the their
        theirs them themselves then there these they this those through to too under until up
        very was we were what when where which while who whom why will with would you your
        yours yourself yourselves""".split()
    )
)
# The analyzer of `text`: lowercase, drop TEXT_STOPWORDS, Porter stemming (as the embedded
# index's FTS5 `porter unicode61` tokenizer does).
TEXT_ANALYZER = "memory_text"
# Where a profile record's text is searched by words (a fact or a preference: an entry of no
# session). Its own field has its own BM25 statistics (document frequencies, average length),
# so a user's records never change how sessions' entries score: /past ranks sessions the same
# with or without them. The embedded index keeps them in a full-text table of their own.
RECORD_TEXT_FIELD = "record_text"


def searched_apart(session_id: str | None, record_id: str | None) -> bool:
    """A profile record's entry (a record of no session): its words are searched apart from
    the sessions' entries (RECORD_TEXT_FIELD). A summary or an open question is its session's."""
    return record_id is not None and session_id is None


# --- the keys of long-term entries (consolidation, profile and ingestion write them; a store
# that deletes by key, S3 Vectors, derives a session's keys from its turn count) -------------


def summary_doc_key(session_id: str) -> str:
    return f"{session_id}#summary"


def opening_doc_key(session_id: str) -> str:
    return f"{session_id}#opening"


def chunk_doc_key(session_id: str, first_turn: int) -> str:
    """A transcript window's key: the session and the window's first turn."""
    return f"{session_id}#chunk-{first_turn}"


def session_doc_keys(session_id: str, num_turns: int) -> list[str]:
    """Every key a session of `num_turns` turns can have in the index, whatever the windowing
    policy (a window starts at one of its turns)."""
    return [
        summary_doc_key(session_id),
        opening_doc_key(session_id),
        *(chunk_doc_key(session_id, turn) for turn in range(1, num_turns + 1)),
    ]


def record_doc_key(owner: str, record_id: str) -> str:
    """A record's entry: its owner key and id. Record ids are unique per owner only (a client may
    choose one), and an index keys entries across owners."""
    return f"record#{owner}#{record_id}"


def legacy_record_doc_key(record_id: str) -> str:
    """The key record entries had before ids could be chosen by clients: deletions remove it too,
    so an entry written then is not left behind."""
    return f"record#{record_id}"


def passage_doc_key(doc_id: str, number: int) -> str:
    """The n-th passage (from 1) of a verified document."""
    return f"{doc_id}#p{number}"


# --- Amazon S3 Vectors: one vector index per LONG_TERM_INDEXES name in the vector bucket ---------
# What CloudFormation (AWS::S3Vectors::Index), local set-up and the adapter's ensure_indexes use.
# Metadata an entry carries: the filterable keys below (every query filters on user_id; /past on
# session_id existing; each value is short, within the 2 KB of filterable metadata a vector may
# carry), and the non-filterable keys the index must declare when it is created (they cannot be
# changed later): "text" (what ranking and snippets read) and "doc" (the rest of the entry as one
# JSON string, so a new MemoryDoc field never needs a new index).
S3VECTORS_DATA_TYPE = "float32"
# Cosine distance is 1 - cosine similarity: the adapter turns it back into the similarity the
# other stores return, so RECALL_WEIGHTS mean the same everywhere.
S3VECTORS_DISTANCE_METRIC = "cosine"
S3VECTORS_FILTERABLE_KEYS = ("user_id", "kind", "session_id")
S3VECTORS_NON_FILTERABLE_KEYS = ("text", "doc")
# Filter before the vector search (not in tandem with it), so a filter matching one user among
# many never starves topK; buckets created before 30 September 2026 default to CLASSIC.
S3VECTORS_INDEX_MODE = "ENHANCED"


def s3vectors_index_spec(dimension: int) -> dict[str, Any]:
    """CreateIndex's arguments besides the bucket and index names (AWS::S3Vectors::Index takes
    the same values: DataType, Dimension, DistanceMetric, MetadataConfiguration)."""
    return {
        "dataType": S3VECTORS_DATA_TYPE,
        "dimension": dimension,
        "distanceMetric": S3VECTORS_DISTANCE_METRIC,
        "metadataConfiguration": {"nonFilterableMetadataKeys": list(S3VECTORS_NON_FILTERABLE_KEYS)},
    }


# An owner's memories are an index of their own (S3 Vectors best practices: "if you have a
# multi-tenant workload and your application queries each tenant independently, consider
# storing each tenant's vectors in a separate vector index"): a query is billed for the data of
# the index it searches, so a shared index made every query's price grow with every user's
# memories. An index name is 3 to 63 lowercase letters, digits, hyphens and dots; an owner key
# may hold anything (an IAM ARN, "#<generation>"), so the name is a digest of it. A bucket
# holds at most 10,000 indexes, so owners are spread over `buckets` buckets by another part of
# the digest; the buckets are created on their first index (adapters/s3vectors.py).
USER_INDEX_PREFIX = "m-"
USER_BUCKET_SUFFIX = "-u"


def user_vector_index(owner: str) -> str:
    """The S3 Vectors index of one owner key's memories: "m-" and 40 hex digits of its SHA-256
    (160 bits: no two owners of a deployment share one)."""
    return USER_INDEX_PREFIX + hashlib.sha256(owner.encode()).hexdigest()[:40]


def user_vector_bucket(base: str, owner: str, buckets: int) -> str:
    """The vector bucket of one owner key's index: "<base>-u<n>", n in 0..buckets-1 from the
    last 16 hex digits of the owner's SHA-256 (independent of the index name's)."""
    slot = int(hashlib.sha256(owner.encode()).hexdigest()[-16:], 16) % max(buckets, 1)
    return f"{base}{USER_BUCKET_SUFFIX}{slot}"


def _text_analysis() -> dict[str, Any]:
    """The analyzer of the indexes' text fields (TEXT_ANALYZER): lowercase, stop words, Porter
    stems, as services/longterm/lexical.py tokenizes for the stores without full-text search."""
    return {
        "filter": {
            "memory_stop": {"type": "stop", "stopwords": list(TEXT_STOPWORDS)},
        },
        "analyzer": {
            TEXT_ANALYZER: {
                "type": "custom",
                "tokenizer": "standard",
                "filter": ["lowercase", "memory_stop", "porter_stem"],
            }
        },
    }


# Fields a domain's long-term indexes keep out of each document's stored _source: the vector
# (4,096 floats are about 90 KB of JSON, most of an entry's bytes) is indexed for k-NN and kept
# in the k-NN plugin's own files, and nothing reads it back (every search excludes it from its
# hits; documents are written whole, never updated or reindexed from _source).
SOURCE_EXCLUDES: tuple[str, ...] = ("embedding",)
# The HNSW graph's links a vector (faiss `m`): what its memory is sized by (stacks/sizing.py).
HNSW_M = 16


def long_term_index_body(
    dimension: int, *, shards: int = 1, on_disk: bool = False, serverless: bool = False
) -> dict[str, Any]:
    """Settings and mapping of both long-term indexes: HNSW on faiss (efficient filtered k-NN
    on `user_id`), BM25 on `text` for hybrid scoring, `shards` primary shards (memories are
    routed by owner: adapters/opensearch.py). `on_disk`: the vectors' graph quantized 32x in
    memory (binary quantization) and rescored from the full vectors on disk (OpenSearch 2.17+
    "disk-based vector search"): an HNSW graph of 4,096 float dimensions takes about 18 KB of
    memory a vector, quantized about 0.7 KB. A domain keeps the vector out of the stored
    _source (SOURCE_EXCLUDES); Serverless manages its documents' storage itself."""
    vectors: dict[str, Any] = {
        "type": "knn_vector",
        "dimension": dimension,
        "method": {
            "name": "hnsw",
            "engine": "faiss",
            "space_type": "innerproduct",
            "parameters": {"m": HNSW_M, "ef_construction": 128},
        },
    }
    if on_disk:
        vectors |= {"data_type": "float", "mode": "on_disk", "compression_level": "32x"}
    mappings: dict[str, Any] = {"dynamic": "strict"}
    if not serverless:
        mappings["_source"] = {"excludes": list(SOURCE_EXCLUDES)}
    return {
        "settings": {
            "index": {"knn": True, "number_of_shards": shards},
            "analysis": _text_analysis(),
        },
        "mappings": mappings
        | {
            "properties": {
                "doc_key": {"type": "keyword"},
                "user_id": {"type": "keyword"},
                "session_id": {"type": "keyword"},
                "kind": {"type": "keyword"},
                "text": {"type": "text", "analyzer": TEXT_ANALYZER},
                RECORD_TEXT_FIELD: {"type": "text", "analyzer": TEXT_ANALYZER},
                "created_at": {"type": "date"},
                "title": {"type": "text", "index": False},
                "doc_id": {"type": "keyword"},
                "passage_id": {"type": "keyword"},
                "source": {"type": "keyword"},
                "turn_from": {"type": "integer"},
                "turn_to": {"type": "integer"},
                # A profile record's id, and when a newer record superseded it (history).
                "record_id": {"type": "keyword"},
                "valid_until": {"type": "date"},
                "sessions": {"type": "keyword"},
                "embedding": vectors,
            },
        },
    }
