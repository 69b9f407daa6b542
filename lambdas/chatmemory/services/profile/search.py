"""Reading the caller's profile: namespaces, pages of records, and search by meaning and words
(the one scorer, services/longterm/scoring.py) (services/profile/profile.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from chatmemory.domain import MemoryRecord, RecordFilter
from chatmemory.errors import BadRequest
from chatmemory.ports import (
    Embedder,
    LongTermIndex,
    RecordStore,
    Search,
    UserRecords,
    embed_queries,
)
from chatmemory.schema import (
    AGENT_LABEL,
    MAX_NAMESPACE_DEPTH,
    MAX_RECORD_ENTRY_CHARS,
    MEMORY_INDEX,
    PROFILE_NAMESPACE,
    RUN_LABEL,
    RecordStatus,
    RecordType,
)
from chatmemory.services.access import owner_of
from chatmemory.services.pages import fitted_page
from chatmemory.services.profile.entries import visible_records


def stored_namespace(namespace: Sequence[str] | None) -> tuple[str, ...]:
    """A namespace as records keep it: the profile's (schema.PROFILE_NAMESPACE) is none."""
    labels = tuple(namespace or ())
    return () if labels in ((), PROFILE_NAMESPACE) else labels


def scoped_namespace(
    agent_id: str | None, run_id: str | None, namespace: Sequence[str] | None
) -> tuple[str, ...] | None:
    """The namespace of an agent's (and a run's) record: ("agent", agent_id, "run", run_id)
    before the client's own labels. None when none of them is given (the profile's)."""
    scope = ((AGENT_LABEL, agent_id) if agent_id else ()) + ((RUN_LABEL, run_id) if run_id else ())
    if not scope:
        return tuple(namespace) if namespace is not None else None
    labels = scope + tuple(namespace or ())
    if len(labels) > MAX_NAMESPACE_DEPTH:
        raise BadRequest(
            f"agent_id and run_id take {len(scope)} of a namespace's {MAX_NAMESPACE_DEPTH} labels"
        )
    return labels


def shown_namespace(record: MemoryRecord) -> tuple[str, ...]:
    """The namespace a record is in, as the API shows it."""
    return record.namespace or PROFILE_NAMESPACE


def list_records(
    memory: UserRecords,
    user_id: str,
    *,
    record_type: RecordType | None,
    limit: int,
    next_token: str | None,
    namespace_prefix: tuple[str, ...] | None = None,
    size_of: Callable[[MemoryRecord], int] | None = None,
    page_bytes: int = 0,
) -> tuple[list[MemoryRecord], str | None]:
    """A page of the caller's visible records, newest first: at most `limit`, and as many as
    fit `page_bytes` by `size_of` when given (at least one, unless none of them is visible)."""
    owner = owner_of(memory, user_id)
    page = fitted_page(
        lambda count: memory.list_records(
            owner, RecordFilter(record_type, namespace_prefix or None), count, next_token
        ),
        limit,
        size_of,
        page_bytes,
    )
    return visible_records(memory, owner, page.items), page.next_token


class RecordQuery(NamedTuple):
    """What POST /memories/records/search asks: the records of the namespaces under
    `namespace_prefix` (every namespace when empty), closest to `query` (by meaning and words)
    or, without one, newest first; `offset` skips that many of them."""

    query: str | None = None
    namespace_prefix: tuple[str, ...] = ()
    record_type: RecordType | None = None
    limit: int = 10
    offset: int = 0
    include_history: bool = True
    matches: Callable[[MemoryRecord], bool] = lambda _: True


# Without a query, the most records of a namespace prefix read for one search (pages of 100);
# with one, the most read beyond what the index ranked, so a small namespace that other
# namespaces outrank is still found (ranked by words only: the index has the meaning).
MAX_SEARCH_SCAN = 2_000


def find_records(
    memory: UserRecords,
    user_id: str,
    ask: RecordQuery,
    *,
    embedder: Embedder,
    index: LongTermIndex,
) -> list[tuple[MemoryRecord, float | None]]:
    """Records of the caller for a search, with their score (with a query: the fused score of
    meaning and words, higher is closer; without one: None). The index ranks a record only by
    an entry of its current text (_ranked); when it ranked fewer than asked, those it did not
    rank follow by their words (an `index=False` record, one whose updated entry is not
    searchable yet), as InMemoryStore puts its unembedded items after those it scored."""
    owner = owner_of(memory, user_id)
    wanted = ask.offset + ask.limit

    def keep(record: MemoryRecord) -> bool:
        return (
            (ask.record_type is None or record.type == ask.record_type)
            and shown_namespace(record)[: len(ask.namespace_prefix)] == ask.namespace_prefix
            and (ask.include_history or record.status != RecordStatus.SUPERSEDED)
            and ask.matches(record)
        )

    found: list[tuple[MemoryRecord, float | None]] = []
    if ask.query:
        found += _ranked(memory, owner, ask.query, wanted, keep, embedder, index)
    if ask.query and len(found) >= wanted:
        return found[ask.offset : wanted]
    # Without a query, or when the index ranked too few (its best were of other namespaces, or
    # failed the filter, or the records are not in it): the prefix's records from the table
    # (newest first), ranked by words when there is a query.
    seen = {record.record_id for record, _ in found}
    rest: list[MemoryRecord] = []
    token: str | None = None
    scanned = 0
    which = RecordFilter(namespace_prefix=ask.namespace_prefix or None)
    while scanned < MAX_SEARCH_SCAN:
        page = memory.list_records(owner, which, 100, token)
        scanned += 100
        rest += [
            r
            for r in visible_records(memory, owner, page.items)
            if r.record_id not in seen and keep(r)
        ]
        token = page.next_token
        if token is None or (not ask.query and len(rest) >= wanted):
            break
    if not ask.query:
        return [(r, None) for r in rest[ask.offset : wanted]]
    from chatmemory.services.longterm.lexical import bm25
    from chatmemory.services.longterm.scoring import RecallWeights, lexical_only

    scores = bm25(ask.query, [r.text[:MAX_RECORD_ENTRY_CHARS] for r in rest]) if rest else []
    ranked = sorted(zip(rest, scores, strict=True), key=lambda pair: -pair[1])
    weighted = lexical_only([score for _, score in ranked], RecallWeights())
    found += zip([r for r, _ in ranked], weighted, strict=True)
    return found[ask.offset : wanted]


def _ranked(
    memory: RecordStore,
    owner: str,
    query: str,
    wanted: int,
    keep: Callable[[MemoryRecord], bool],
    embedder: Embedder,
    index: LongTermIndex,
) -> list[tuple[MemoryRecord, float | None]]:
    """The first `wanted` of the caller's visible records that the index ranks for `query` and
    `keep` accepts, best first, with their scores (read a few at a time). A record is ranked
    only by an entry of its current text (`_of_text`): while an update's entry is being
    written (the text is saved before it is embedded; OpenSearch Serverless shows a write only
    after its next refresh), the old entry, its words and its vector, ranks nothing, and the
    record is found as any record the index did not rank (find_records)."""
    from chatmemory.services.longterm.scoring import RecallWeights, fuse

    vector = embed_queries(embedder, [query])[0]
    depth = max(wanted * 8, 40)
    fused = fuse(
        *index.hybrid_search(Search(MEMORY_INDEX, vector, query, depth, owner)), RecallWeights()
    )
    found_ids = sorted({doc.record_id for doc, _ in fused.values() if doc.record_id})
    _, live = memory.live(owner, [], found_ids)
    # Each record's entries (score, text), best first; the best bounds the record's score.
    scored: dict[str, list[tuple[float, str]]] = {}
    for doc, score in fused.values():
        # An entry of an earlier record under the same id scores nothing for the current one.
        if doc.record_id and doc.of_live_record(live):
            scored.setdefault(doc.record_id, []).append((score, doc.text))
    for pairs in scored.values():
        pairs.sort(key=lambda pair: -pair[0])
    pending = sorted(scored, key=lambda record_id: -scored[record_id][0][0])
    found: list[tuple[MemoryRecord, float]] = []
    # Until `wanted` are found that no record still unread can outscore (its best entry bounds
    # its score): one batch, unless an old entry made a record look better than it is.
    while pending and (len(found) < wanted or found[wanted - 1][1] < scored[pending[0]][0][0]):
        batch, pending = pending[: max(wanted, 10)], pending[max(wanted, 10) :]
        records = [memory.get_record(owner, record_id) for record_id in batch]
        for record in visible_records(memory, owner, [r for r in records if r is not None]):
            current = [s for s, text in scored[record.record_id] if _of_text(text, record)]
            if current and keep(record):
                found.append((record, current[0]))
        found.sort(key=lambda pair: -pair[1])
    return [(record, score) for record, score in found[:wanted]]


def _of_text(entry_text: str, record: MemoryRecord) -> bool:
    """Whether an index entry was written from the record's current text (record_document: its
    first MAX_RECORD_ENTRY_CHARS). A store may keep only the beginning of it (S3 Vectors clips
    a long text to fit its metadata), and one that keeps none says nothing either way."""
    return record.text.startswith(entry_text[:MAX_RECORD_ENTRY_CHARS])


def search_records(
    memory: UserRecords,
    user_id: str,
    query: str,
    *,
    record_type: RecordType | None,
    limit: int,
    embedder: Embedder,
    index: LongTermIndex,
    offset: int = 0,
) -> list[MemoryRecord]:
    """The caller's records closest to `query` by meaning and words, checked live (`offset`
    skips that many of the best)."""
    ask = RecordQuery(query=query, record_type=record_type, limit=limit, offset=offset)
    return [r for r, _ in find_records(memory, user_id, ask, embedder=embedder, index=index)]


# Profile records read at once to find one the caller can see (list_namespaces).
_PROFILE_PROBE = 4


def list_namespaces(
    memory: UserRecords,
    user_id: str,
    *,
    prefix: Sequence[str] = (),
    suffix: Sequence[str] = (),
    max_depth: int | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[tuple[str, ...]]:
    """The namespaces the caller's records are in (LangGraph's list_namespaces): those that
    begin with `prefix` and end with `suffix` ("*" matches any one label), cut to `max_depth`
    labels, each once, sorted; `offset` and `limit` page through them."""
    owner = owner_of(memory, user_id)
    # Keys and namespaces, not the records' text (up to 64 KiB each); the profile's own
    # records, which may be hidden with the sessions they were drawn from, are read until one
    # is visible (the first, nearly always).
    keys = memory.record_keys(owner)
    namespaces = {namespace for _, namespace in keys if namespace}
    profile = [record_id for record_id, namespace in keys if not namespace]
    for start in range(0, len(profile), _PROFILE_PROBE):
        found = [memory.get_record(owner, rid) for rid in profile[start : start + _PROFILE_PROBE]]
        if visible_records(memory, owner, [r for r in found if r is not None]):
            namespaces.add(PROFILE_NAMESPACE)
            break

    def fits(namespace: tuple[str, ...], path: Sequence[str]) -> bool:
        return len(namespace) >= len(path) and all(
            want in ("*", have) for have, want in zip(namespace, path, strict=False)
        )

    kept = {
        ns[:max_depth] if max_depth is not None else ns
        for ns in namespaces
        if fits(ns, prefix) and fits(ns[::-1], tuple(suffix)[::-1])
    }
    return sorted(kept)[offset : offset + limit]
