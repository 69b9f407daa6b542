"""What a client asks of the profile's records through the API, decided here: a record it
states or keys (its id, its namespace and its expiry), and a search of its records with a
filter on their values (services/profile/record_filter.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from chatmemory.domain import MemoryRecord
from chatmemory.errors import BadRequest
from chatmemory.ports import Embedder, LongTermIndex, ShortTermMemory
from chatmemory.schema import RecordType
from chatmemory.services.access import owner_of
from chatmemory.services.profile import profile, record_filter


class NewRecord(NamedTuple):
    """A record a client asks to be kept: its text and type, optionally the client's own id
    for it, an agent's or a run's scope, the client's namespace, and a lifetime."""

    text: str
    record_type: RecordType | None = None
    record_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    namespace: Sequence[str] | None = None
    ttl_seconds: int | None = None
    # False: kept, read and listed, never embedded (LangGraph's put(..., index=False)).
    indexed: bool = True


def create_record(user_id: str, new: NewRecord, edit: profile.Editing) -> tuple[MemoryRecord, bool]:
    """The record kept, and whether it is new (else a keyed record's text was replaced).

    An agent's or a run's record without an id of its own gets one (its store keys every
    memory); a keyed record is created or replaced under its key in its namespace; a record in
    a namespace needs its key there; any other is stated into the caller's profile, placed like
    an extracted one. With ttl_seconds, it expires that many seconds from the edit's time.
    Only a keyed record of a client's namespace may be kept out of the index: the profile's
    records are what every chat recalls."""
    now = edit.now
    namespace = profile.stored_namespace(
        profile.scoped_namespace(new.agent_id, new.run_id, new.namespace)
    )
    expires_at = int(now.timestamp()) + new.ttl_seconds if new.ttl_seconds else None
    record_id = new.record_id
    if record_id is None and (new.agent_id or new.run_id):
        record_id = profile.new_record_id(now)  # an agent's memory without a key of its own
    if not new.indexed and not (record_id and namespace):
        raise BadRequest(
            "index=false is for a keyed record of a client's namespace (record_id and "
            "namespace): the profile's records are always indexed"
        )
    if record_id:
        return profile.put_keyed_record(
            user_id,
            record_id,
            new.text,
            edit,
            record_type=new.record_type,
            namespace=namespace,
            expires_at=expires_at,
            indexed=new.indexed,
        )
    if namespace:
        raise BadRequest("a record in a namespace needs its record_id (its key there)")
    owner = owner_of(edit.memory, user_id)
    record = profile.state_record(
        owner, new.text, edit, record_type=new.record_type, expires_at=expires_at
    )
    return record, True


class RecordSearch(NamedTuple):
    """A search of a client's records: `query` (or none: newest first) in the namespaces under
    `namespace_prefix` within an agent's or a run's scope, of one type, whose values pass
    `conditions` (record_filter's language), a page of `limit` after `offset`."""

    query: str | None = None
    namespace_prefix: Sequence[str] = ()
    agent_id: str | None = None
    run_id: str | None = None
    record_type: RecordType | None = None
    conditions: Mapping[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    include_history: bool = False


def search_records(
    user_id: str,
    search: RecordSearch,
    *,
    memory: ShortTermMemory,
    embedder: Embedder,
    index: LongTermIndex,
) -> list[tuple[MemoryRecord, float | None]]:
    """The records the search finds, each with its score (profile.find_records); a filter that
    record_filter cannot run is a 400 before anything is read."""
    conditions = search.conditions or {}
    record_filter.check(conditions)
    ask = profile.RecordQuery(
        query=search.query,
        namespace_prefix=profile.scoped_namespace(
            search.agent_id, search.run_id, search.namespace_prefix
        )
        or (),
        record_type=search.record_type,
        limit=search.limit,
        offset=search.offset,
        include_history=search.include_history,
        matches=lambda r: record_filter.matches(record_filter.value_of(r.text), conditions),
    )
    return profile.find_records(memory, user_id, ask, embedder=embedder, index=index)
