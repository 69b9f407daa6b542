"""The models of long-term memory: /past, records, namespaces (routes/memories.py,
routes/store.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from chatmemory import limits
from chatmemory.api_models.base import (
    ANSWER_ITEMS_BYTES,
    _Envelope,
    _Model,
    _Out,
    _Strict,
    _token,
    _token_data,
    answer_bytes,
    identifier,
)
from chatmemory.clock import iso
from chatmemory.domain import (
    MemoryRecord,
)
from chatmemory.errors import BadRequest
from chatmemory.schema import (
    AGENT_LABEL,
    MAX_NAMESPACE_DEPTH,
    MAX_NAMESPACE_LABEL_CHARS,
    MAX_RECORD_CHARS,
    MAX_RECORD_FILTER_DEPTH,
    MAX_RECORD_FILTER_VALUES,
    MAX_RECORD_TTL_SECONDS,
    PROFILE_NAMESPACE,
    RUN_LABEL,
    RecordCategory,
    RecordOrigin,
    RecordStatus,
    RecordType,
    scope_of,
)

if TYPE_CHECKING:
    from chatmemory.services.longterm.recall import RankedSession


class MemoryOut(_Model):
    session_id: str
    score: float = Field(
        description=(
            "How it ranks, higher first: its best part's similarity, plus its weighted "
            "recency and closeness to a time q names (RECALL_WEIGHTS)."
        )
    )
    similarity: float = Field(
        description="How close its best matching part is to q: meaning and words fused."
    )
    recency: float = Field(
        description="1 for a session from now, 0.5 one half-life ago (RECENCY_HALF_LIFE_DAYS)."
    )
    date: str = Field(description="The time of its earliest matching part (ISO 8601).")
    title: str = Field(
        description="The title of its summary when that matches q, else of its best part."
    )
    snippets: list[str] = Field(description="The session's best matching parts, best first.")

    @classmethod
    def of(cls, ranked: RankedSession) -> MemoryOut:
        return cls(
            session_id=ranked.session_id,
            score=round(ranked.score, 4),
            similarity=round(ranked.similarity, 4),
            recency=round(ranked.recency, 4),
            date=ranked.date,
            title=ranked.title,
            snippets=ranked.texts,
        )


class MemoryList(_Model):
    memories: list[MemoryOut]

    @classmethod
    def of(cls, found: Iterable[RankedSession], room: int = ANSWER_ITEMS_BYTES) -> MemoryList:
        """The sessions, best first, with their snippets whole when they fit one answer; else
        the longer ones clipped to an equal share of what the shorter ones leave (k=50
        sessions of three long windows each are more than Lambda answers)."""
        memories = [MemoryOut.of(s) for s in found]
        sizes = [answer_bytes(s) for m in memories for s in m.snippets]
        bare = sum(answer_bytes(m.model_copy(update={"snippets": []})) for m in memories)
        share = _share(sizes, room - bare)
        if share is not None:
            for memory in memories:
                memory.snippets = [clipped(s, share) for s in memory.snippets]
        return cls(memories=memories)


def _share(sizes: list[int], room: int) -> int | None:
    """The most each of `sizes` may take for all of them to add up to at most `room`, the
    smaller ones whole; None when they fit as they are."""
    if sum(sizes) <= room:
        return None
    left, count = room, len(sizes)
    for size in sorted(sizes):
        if size * count > left:  # this one and the larger ones get an equal share
            break
        left, count = left - size, count - 1
    return max(left // count, 0)


def clipped(text: str, room: int) -> str:
    """`text` if it takes at most `room` bytes of an answer (answer_bytes), else its longest
    head that does with "…" after it."""
    if answer_bytes(text) <= room:
        return text
    low, high = 0, min(len(text), room)  # a character takes at least a byte
    while low < high:
        middle = (low + high + 1) // 2
        if answer_bytes(text[:middle] + "…") <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low] + "…"


class ProvenanceOut(_Out):
    session_id: str
    turn: int
    date: str


class RecordOut(_Out):
    record_id: str
    type: RecordType
    text: str
    subject: str = Field(
        default="", description="What it is about; a newer record on it supersedes this one."
    )
    category: RecordCategory | None = Field(
        default=None,
        description=(
            "A fact's or a preference's place in the profile block every chat prompt holds "
            "(health first, then identity and people, preferences, other; an event is not in "
            "it); none for summaries, open questions and a client's namespaced items."
        ),
    )
    status: Literal[RecordStatus.ACTIVE, RecordStatus.SUPERSEDED]
    origin: RecordOrigin
    created_at: str = Field(description="When it was said (or stated).")
    updated_at: str
    provenance: list[ProvenanceOut] = Field(
        default=[], description="The turns of past sessions it was drawn from."
    )
    superseded_by: str | None = Field(default=None, description="The record that replaced it.")
    valid_until: str | None = Field(default=None, description="When it was superseded.")
    namespace: list[str] = Field(
        default=list(PROFILE_NAMESPACE),
        description=(
            "The namespace it is in: a client's own (an agent's store), or the profile's "
            f"{list(PROFILE_NAMESPACE)}, where what is drawn from conversations goes."
        ),
    )
    score: float | None = Field(
        default=None,
        description="With a search query: how close it is (meaning and words), higher is closer.",
    )
    agent_id: str | None = Field(
        default=None, description="The agent its namespace is of (agent_id when stated)."
    )
    run_id: str | None = Field(
        default=None, description="The run its namespace is of (run_id when stated)."
    )
    expires_at: str | None = Field(
        default=None,
        description=(
            "When it expires (stated with ttl_seconds): from then on it is never returned, "
            "searched or recalled, and its key is free; none: it does not expire."
        ),
    )

    indexed: bool = Field(
        default=True, description="false: stated with index false, search by meaning skips it."
    )

    @field_validator("expires_at", mode="before")
    @classmethod
    def _iso_expiry(cls, value: Any) -> Any:
        return iso(datetime.fromtimestamp(value, UTC)) if isinstance(value, int) else value

    @field_validator("namespace", mode="before")
    @classmethod
    def _profile_when_none(cls, value: Any) -> Any:
        return list(value) if value else list(PROFILE_NAMESPACE)

    @field_validator("category", mode="before")
    @classmethod
    def _none_when_empty(cls, value: Any) -> Any:
        return value or None

    @model_validator(mode="after")
    def _scope(self) -> RecordOut:
        self.agent_id, self.run_id = scope_of(self.namespace)
        return self


class RecordEnvelope(_Envelope):
    record: RecordOut


def record_bytes(record: MemoryRecord) -> int:
    """A record's size in a page of records as Lambda sends it (answer_bytes)."""
    return answer_bytes(RecordOut.model_validate(record))


def _scored(found: Iterable[tuple[MemoryRecord, float | None]]) -> list[RecordOut]:
    return [RecordOut.model_validate(r).model_copy(update={"score": s}) for r, s in found]


class RecordList(_Model):
    records: list[RecordOut]
    next_token: str | None = None

    @classmethod
    def of(cls, records: Iterable[MemoryRecord], next_token: str | None) -> RecordList:
        return cls(records=[RecordOut.model_validate(r) for r in records], next_token=next_token)

    @classmethod
    def found(cls, found: Iterable[MemoryRecord], at: SearchPosition) -> RecordList:
        """A search's records from `at`, as many as fit one answer; next_token holds the
        position of the rest of what was asked, if they did not all fit."""
        records = [RecordOut.model_validate(r) for r in found]
        kept = limits.fitting(records, answer_bytes, ANSWER_ITEMS_BYTES)
        rest = at.after(kept) if kept < len(records) else None
        return cls(records=records[:kept], next_token=rest.token() if rest else None)


class RecordPage(_Model):
    """The answer of POST /memories/records/search."""

    records: list[RecordOut]
    next_offset: int | None = Field(
        default=None,
        description=(
            "Set when the records asked for did not all fit one answer (at most 6 MB): the "
            "rest begin at this offset (ask again with it, and limit less the records received)."
        ),
    )

    @classmethod
    def found(cls, found: Iterable[tuple[MemoryRecord, float | None]], offset: int) -> RecordPage:
        records = _scored(found)
        kept = limits.fitting(records, answer_bytes, ANSWER_ITEMS_BYTES)
        return cls(
            records=records[:kept], next_offset=offset + kept if kept < len(records) else None
        )


@dataclass(frozen=True)
class SearchPosition:
    """Where a page of GET /memories/records?q= starts in the ranking and where what the first
    request asked for ends (its limit): the next_token of a search cut by the answer's size."""

    offset: int
    until: int

    @property
    def limit(self) -> int:
        return self.until - self.offset

    def after(self, count: int) -> SearchPosition | None:
        moved = SearchPosition(self.offset + count, self.until)
        return moved if moved.limit > 0 else None

    def token(self) -> str:
        return _token({"offset": self.offset, "until": self.until})

    @classmethod
    def of(cls, token: str | None, limit: int) -> SearchPosition:
        """The position a search's next_token holds (the first `limit` without one)."""
        if not token:
            return cls(0, limit)
        try:
            data = _token_data(token)
            offset, until = data["offset"], data["until"]
            valid = set(data) == {"offset", "until"} and all(
                type(v) is int for v in (offset, until)
            )
            # A search's page holds at most 100 records (the limit's bound).
            valid = valid and 0 < offset < until <= 100
        except (ValueError, TypeError, KeyError, AttributeError):
            valid = False
        if not valid:
            raise BadRequest("next_token is not valid")
        return cls(offset, until)


# What a caller can state or correct: a fact or a preference, or an agent's memory (JSON).
RecordText = Annotated[str, Field(min_length=1, max_length=MAX_RECORD_CHARS, pattern=r"\S")]
NamespaceLabel = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAMESPACE_LABEL_CHARS,
        pattern=r"^[^\x1f]+$",
        description="A label (any characters but U+001F).",
    ),
]
Namespace = Annotated[
    list[NamespaceLabel],
    Field(
        max_length=MAX_NAMESPACE_DEPTH,
        description=(
            f"Labels, outermost first, at most {MAX_NAMESPACE_DEPTH}; {list(PROFILE_NAMESPACE)} "
            "(or none) is the profile's own."
        ),
    ),
]
# A namespace pattern of list_namespaces: "*" matches any one label.
NamespacePattern = Annotated[list[NamespaceLabel], Field(max_length=MAX_NAMESPACE_DEPTH)]


# Scoping like Mem0's agent_id and run_id (schema.AGENT_LABEL): sugar for a namespace prefix.
AgentScope = Annotated[
    str | None,
    identifier(
        "The agent (or application) the record is for, beside the caller: its namespace begins "
        f"with [{AGENT_LABEL!r}, agent_id]; a search with it stays inside that agent's records"
    ),
]
RunScope = Annotated[
    str | None,
    identifier(
        f"A run (a conversation) of the agent: the namespace goes on with [{RUN_LABEL!r}, "
        "run_id]; a search with agent_id and without run_id covers every run"
    ),
]


class CreateRecordRequest(_Strict):
    text: RecordText = Field(description="What to remember, e.g. 'I moved to Porto'.")
    type: Literal["fact", "preference"] | None = Field(
        default=None, description="fact or preference; inferred when absent."
    )
    record_id: (
        Annotated[
            str,
            identifier(
                "The client's own id for the record (a key of an agent's store): the request then "
                "creates the record with that id or replaces the text of the one that has it"
            ),
        ]
        | None
    ) = None
    agent_id: AgentScope = None
    run_id: RunScope = None
    namespace: Namespace | None = Field(
        default=None,
        description=(
            "The client's namespace of the record (with record_id: the key is unique per "
            "caller, not per namespace). Merging, supersession and search stay inside one "
            "namespace; outside the profile's, a record is an item of its own: it never "
            "merges with, supersedes or is superseded by another."
        ),
    )
    ttl_seconds: int | None = Field(
        default=None,
        ge=1,
        le=MAX_RECORD_TTL_SECONDS,
        description=(
            "The record expires this many seconds from now: from then on it is never returned, "
            "searched, recalled or listed, and its record_id is free (a later request creates a "
            "new record); DynamoDB's TTL deletes it later. Such a record is an item of its own: "
            "it never merges with, supersedes or is superseded by another. With record_id, a "
            "request without ttl_seconds makes the record lasting again."
        ),
    )
    index: bool = Field(
        default=True,
        description=(
            "false: the record is kept, read and listed, but not embedded or indexed (its "
            "entry removed when it had one): a search with a query finds it only by its words, "
            "after what the index ranks, when the search names a namespace prefix; chat never "
            "recalls it (LangGraph's put with index=False). Only with record_id, outside the "
            "profile's namespace (400 otherwise). A later request without it indexes the record "
            "again."
        ),
    )


class SearchRecordsRequest(_Strict):
    query: str | None = Field(
        default=None,
        min_length=1,
        max_length=4000,
        description="Ranks by meaning and words (each record gets a score); none: newest first.",
    )
    agent_id: AgentScope = None
    run_id: RunScope = None
    namespace_prefix: Namespace = Field(
        default=[],
        description=(
            "Only records of namespaces beginning with these labels (after agent_id's and "
            "run_id's, when given)."
        ),
    )
    filter: dict[str, Any] | None = Field(
        default=None,
        description=(
            "Conditions on the record's value: a record whose text is a JSON object is that "
            'object, any other is {"text": text} (so is JSON Python cannot parse: nested '
            "deeper than about 1,000 levels, or an integer of over 4,300 digits). A field "
            "equals a value, or meets operators $eq, $ne, $gt, $gte, $lt, $lte (numbers compare "
            "exactly whatever their size); nested objects match field by field, lists element "
            "by element (LangGraph's store filters). 400 for an unknown operator (a top-level "
            "$or among them), an object mixing operators and fields, an operator inside an "
            f"operand, nesting deeper than {MAX_RECORD_FILTER_DEPTH} levels (the filter is the "
            f"first) or more than {MAX_RECORD_FILTER_VALUES} keys and values in all."
        ),
    )
    type: RecordType | None = Field(default=None, description="Only records of this type.")
    include_history: bool = Field(default=False, description="Also records a newer one superseded.")
    limit: int = Field(default=10, ge=1, le=100)
    offset: int = Field(default=0, ge=0, le=10_000)


class ListNamespacesRequest(_Strict):
    prefix: NamespacePattern = Field(default=[], description="Namespaces beginning with these.")
    suffix: NamespacePattern = Field(default=[], description="Namespaces ending with these.")
    max_depth: int | None = Field(
        default=None, ge=1, description="Namespaces cut to this many labels (each once)."
    )
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class NamespaceList(_Model):
    namespaces: list[list[str]]
    next_offset: int | None = Field(
        default=None,
        description=(
            "Set when the namespaces asked for did not all fit one answer (at most 6 MB): the "
            "rest begin at this offset."
        ),
    )

    @classmethod
    def found(cls, found: Iterable[Sequence[str]], offset: int) -> NamespaceList:
        namespaces = [list(ns) for ns in found]
        kept = limits.fitting(namespaces, answer_bytes, ANSWER_ITEMS_BYTES)
        return cls(
            namespaces=namespaces[:kept],
            next_offset=offset + kept if kept < len(namespaces) else None,
        )


class UpdateRecordRequest(_Strict):
    text: RecordText = Field(description="The corrected text; it is embedded again.")
