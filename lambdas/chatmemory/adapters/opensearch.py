"""Long-term memory on OpenSearch (a managed domain or a Serverless vector collection): k-NN on
faiss HNSW plus BM25, behind the LongTermIndex port."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, fields
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from opensearchpy import OpenSearch, Urllib3AWSV4SignerAuth, Urllib3HttpConnection
from opensearchpy.exceptions import ConnectionError as TransportConnectionError
from opensearchpy.exceptions import NotFoundError, RequestError, TransportError

from chatmemory import limits, schema
from chatmemory.errors import LongTermMemoryError, LongTermMemoryUnavailable
from chatmemory.ports import Candidate, MemoryDoc, Search

_DOC_FIELDS = frozenset(f.name for f in fields(MemoryDoc))
# Hits never carry the vector back: it is large and the ranking code only needs the score.
_NO_VECTOR = {"excludes": list(schema.SOURCE_EXCLUDES)}


def opensearch_client(
    endpoint: str, region: str, *, serverless: bool, timeout: float = 10.0
) -> OpenSearch:
    """A SigV4-signed HTTPS client for a domain ("es") or a Serverless collection ("aoss")."""
    import boto3  # lazily: importing this module must not need AWS (tests, local mode)

    # Refreshable credentials: the signer freezes them per request, so Lambda role rotation works.
    credentials = boto3.Session().get_credentials()
    url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    if not url.hostname:
        # Without a host the client would quietly talk to localhost.
        raise ValueError(f"not an OpenSearch endpoint: {endpoint!r}")
    return OpenSearch(
        hosts=[{"host": url.hostname, "port": url.port or 443}],
        http_auth=Urllib3AWSV4SignerAuth(credentials, region, "aoss" if serverless else "es"),
        use_ssl=True,
        verify_certs=True,
        connection_class=Urllib3HttpConnection,
        timeout=timeout,
        retry_on_timeout=True,
        max_retries=2,
    )


def inner_product_from_score(score: float) -> float:
    """Undo the k-NN plugin's score for faiss `innerproduct`: score = 1 + ip when ip > 0, else
    1 / (1 - ip). The result is the raw inner product, the cosine for unit vectors."""
    # k-NN plugin: Faiss.SCORE_TRANSLATIONS applies SpaceType.INNER_PRODUCT.scoreTranslation to
    # -ip. The exact search that a filtered query may fall back to scores with Lucene's
    # scaleMaxInnerProductScore, which is the same function, so one inverse covers both.
    return score - 1.0 if score >= 1.0 else 1.0 - 1.0 / score


def document_id(doc_key: str) -> str:
    """The _id of an entry: its doc_key, or a digest of it beyond OpenSearch's 512 bytes (a
    passage of a 512-character doc_id can pass them). Only overwrites use the _id: searches
    read the doc_key from the source, and deletions match the doc_key field."""
    return limits.fitted_key(doc_key, limits.OPENSEARCH_ID_BYTES, size=limits.utf8_bytes)


class OpenSearchLongTermIndex:
    """LongTermIndex on OpenSearch. Index names are `index_prefix` + the names in schema.py.

    On a managed domain every memory is routed by its owner key (`routing`): an owner's entries
    are on one shard, and a search, a deletion or an erasure of one owner reads and writes that
    shard only, whatever the shard count (`shards`, set when the index is created). Owners may
    be spread over `memory_indexes` memory indexes (schema.memory_index_of: an index holds at
    most 1,024 shards), each owner's memories in one of them. Verified passages are nobody's
    and are not routed. A Serverless collection places documents itself (it takes no shard
    count) and gets no routing.

    `memory_generation` names the memory indexes (schema.memory_index_base): a new generation
    is a new set of indexes, made with the current body. `previous_memory_indexes`, those of an
    earlier generation while they are migrated into it (services/background/migrate.py): the
    migration reads them, and every deletion removes the owner's entries there too (without
    routing: an index made before routing spread owners over its shards by _id)."""

    def __init__(
        self,
        client: OpenSearch,
        *,
        dimension: int,
        serverless: bool = False,
        index_prefix: str = "",
        shards: int = 1,
        on_disk: bool = False,
        memory_indexes: int = 1,
        memory_generation: int = 0,
        previous_memory_indexes: Sequence[str] = (),
    ) -> None:
        self._client = client
        self._memory_indexes = memory_indexes
        self._generation = memory_generation
        self._previous = tuple(previous_memory_indexes)
        self._dimension = dimension
        self._serverless = serverless
        self._prefix = index_prefix
        self._shards = shards
        self._on_disk = on_disk

    def _routing(self, index: str, user_id: str | None) -> str | None:
        """The routing of one owner's memories (None: passages, or a Serverless collection)."""
        if self._serverless or index != schema.MEMORY_INDEX or not user_id:
            return None
        return user_id

    def ensure_indexes(self) -> None:
        """Create both indexes from schema.py when missing (a concurrent creator is fine), and
        add to an existing index the fields a newer schema.py defines (its shard count and its
        vectors' mode stay as they were created: a change of either needs a new index)."""
        body = schema.long_term_index_body(
            self._dimension,
            shards=self._shards,
            on_disk=self._on_disk and not self._serverless,
            serverless=self._serverless,
        )
        if self._serverless:
            # Serverless manages shards itself and rejects the setting.
            body["settings"]["index"].pop("number_of_shards", None)
        for logical in schema.long_term_index_names(self._memory_indexes, self._generation):
            name = self._prefix + logical
            with _translated(f"create index {name}"):
                if self._client.indices.exists(index=name):
                    self._add_missing_fields(name, body["mappings"]["properties"])
                    continue
                try:
                    self._client.indices.create(index=name, body=body)
                except RequestError as error:
                    if error.error != "resource_already_exists_exception":
                        raise

    def _add_missing_fields(self, name: str, properties: dict[str, Any]) -> None:
        """Put the schema's fields that the index's mapping lacks (an index created before
        they were added). The mapping is `dynamic: strict`, so a document with such a field
        would be refused. Only absent fields are sent: adding a field is always allowed, while
        restating an existing one could be refused (a knn_vector's method, say), and a field
        whose definition changed needs a new index, which this does not attempt."""
        with _translated(f"read the mapping of {name}"):
            answer = self._client.indices.get_mapping(index=name)
        # Keyed by concrete index name (`name` may be an alias); put_mapping reaches them all.
        present = [set(e.get("mappings", {}).get("properties", {})) for e in answer.values()]
        missing = {
            field: spec
            for field, spec in properties.items()
            if not all(field in fields for fields in present)
        }
        if not missing:
            return
        with _translated(f"add fields {', '.join(sorted(missing))} to {name}"):
            self._client.indices.put_mapping(index=name, body={"properties": missing})

    def upsert(self, index: str, docs: Sequence[MemoryDoc]) -> None:
        """Index `docs` under their deterministic `doc_key`s, in as few bulk requests as the
        domain's request size allows (limits.OPENSEARCH_BULK: a long session's windows at
        4,096 dimensions are tens of MB, and a domain of the smallest instance types refuses
        more than 10 MiB a request with a 413)."""
        if not docs:
            return
        serializer = self._client.transport.serializer
        by_name: dict[str, list[tuple[MemoryDoc, bytes]]] = {}
        for doc in docs:  # each owner's memories in their own memory index
            lines = self._bulk_lines(serializer, index, doc)
            by_name.setdefault(self._name(index, doc.user_id), []).append((doc, lines))
        for name, entries in by_name.items():
            for batch in limits.batches(entries, lambda e: len(e[1]), limits.OPENSEARCH_BULK):
                self._bulk(name, [doc for doc, _ in batch], b"".join(lines for _, lines in batch))

    def _bulk_lines(self, serializer: Any, index: str, doc: MemoryDoc) -> bytes:
        """A document's action and source lines of a bulk body (NDJSON), as sent."""
        action: dict[str, Any] = {} if self._serverless else {"_id": document_id(doc.doc_key)}
        routing = self._routing(index, doc.user_id)
        if routing is not None:
            action["routing"] = routing
        return (
            serializer.dumps({"index": action}) + "\n" + serializer.dumps(_source(doc)) + "\n"
        ).encode()

    def _bulk(self, name: str, docs: Sequence[MemoryDoc], body: bytes) -> None:
        """One bulk request of `docs` (`body` is their NDJSON lines)."""
        with _translated(f"index into {name}"):
            if self._serverless:
                # Vector collections reject a custom _id, so an overwrite is "delete the doc_keys,
                # then index". Trade-offs: not atomic (a search in between misses these docs, a
                # crash in between leaves them deleted until the redelivery indexes them again),
                # and Serverless makes writes searchable only after a delay, so a redelivery
                # within seconds of the first write may not see it and can leave a duplicate.
                self._delete_where(name, {"terms": {"doc_key": [d.doc_key for d in docs]}})
            # refresh=wait_for: the call returns once the documents are searchable, so a
            # delete-by-query that follows sees them. Every writer that may race a deletion
            # checks liveness after its write and deletes again (consolidation's compensation,
            # write_record_entries); with refresh=false a just-written document was invisible
            # to that delete (it only sees refreshed documents) and outlived the deletion. The
            # cost is up to one refresh interval (1 s) per write, never a forced refresh.
            params = {} if self._serverless else {"refresh": "wait_for"}
            # The index is in the path (POST /<index>/_bulk), never in the body: IAM can then
            # allow each function the bulk path of its own index only, and the domain refuses
            # an index named in a body (rest.action.multi.allow_explicit_index=false).
            reply = self._client.bulk(body=body, index=name, params=params)
        if reply.get("errors"):
            # Items come back in the order of the actions, so each one names its document.
            failed = [
                (doc.doc_key, outcome)
                for doc, item in zip(docs, reply["items"], strict=True)
                for outcome in item.values()
                if "error" in outcome
            ]
            key, outcome = failed[0]
            message = (
                f"{len(failed)} of {len(docs)} documents not indexed into {name}; "
                f"{key}: {_reason(outcome['error'])}"
            )
            # A shard rejecting under load (429) or failing (5xx) is an outage worth a retry.
            if outcome.get("status") == 429 or outcome.get("status", 0) >= 500:
                raise LongTermMemoryUnavailable(message)
            raise LongTermMemoryError(message)

    def vector_search(self, search: Search) -> list[Candidate]:
        """The k nearest documents of `user_id` (filtered inside HNSW by faiss), cosine-scored."""
        body = _knn_body(search.vector, search.k, search.user_id, search.sessions_only)
        return _vector_hits(self._search(search.index, search.user_id, body))

    def lexical_search(self, search: Search) -> list[Candidate]:
        """The k best BM25 matches of `text` among the documents of `user_id`."""
        body = _match_body(search.text, search.k, search.user_id, search.sessions_only)
        return _lexical_hits(self._search(search.index, search.user_id, body))

    def hybrid_search(self, search: Search) -> tuple[list[Candidate], list[Candidate]]:
        """Both searches in one _msearch request (the index in the path, as for _bulk)."""
        name = self._name(search.index, search.user_id)
        routing = self._routing(search.index, search.user_id)
        header = {} if routing is None else {"routing": routing}
        k, user_id, only = search.k, search.user_id, search.sessions_only
        bodies = [
            header,
            _knn_body(search.vector, k, user_id, only),
            header,
            _match_body(search.text, k, user_id, only),
        ]
        with _translated(f"search {name}"):
            try:
                reply = self._client.msearch(body=bodies, index=name)
            except NotFoundError as error:
                if _missing_index(error):
                    return [], []
                raise
        answers = reply.get("responses", [])
        hits: list[list[dict[str, Any]]] = []
        for answer in answers:
            failure = answer.get("error")
            if failure is None:
                hits.append(list(answer["hits"]["hits"]))
            elif isinstance(failure, dict) and failure.get("type") == "index_not_found_exception":
                hits.append([])  # nothing consolidated yet: no memories, not an outage
            else:
                status = answer.get("status", 500)
                outage = status >= 500 or status == 429
                kind = LongTermMemoryUnavailable if outage else LongTermMemoryError
                raise kind(f"OpenSearch answered {status} (search {name}): {_reason(failure)}")
        if len(hits) != 2:
            raise LongTermMemoryUnavailable(f"search {name}: {len(hits)} answers to 2 searches")
        return _vector_hits(hits[0]), _lexical_hits(hits[1])

    def delete_session(
        self, user_id: str, session_id: str, *, num_turns: int | None = None
    ) -> None:
        """Forget every memory of one session (summary and chunks), by query: `num_turns` is
        not needed."""
        query = _terms(user_id=user_id, session_id=session_id)
        with _translated("delete a session's memories"):
            self._delete_where(
                self._name(schema.MEMORY_INDEX, user_id),
                query,
                self._routing(schema.MEMORY_INDEX, user_id),
            )
            self._delete_previous(schema.MEMORY_INDEX, query)

    def delete_user(self, user_id: str, *, doc_keys: Sequence[str] = ()) -> None:
        """Forget every memory of one user (by query: `doc_keys` are among them); shared
        passages are nobody's and stay."""
        with _translated("delete a user's memories"):
            self._delete_where(
                self._name(schema.MEMORY_INDEX, user_id),
                _terms(user_id=user_id),
                self._routing(schema.MEMORY_INDEX, user_id),
            )
            self._delete_previous(schema.MEMORY_INDEX, _terms(user_id=user_id))

    def delete_documents(self, index: str, user_id: str, doc_keys: Sequence[str]) -> None:
        """Forget entries by key, only among the owner's (a record's entry)."""
        if not doc_keys:
            return
        query = {
            "bool": {
                "filter": [{"term": {"user_id": user_id}}, {"terms": {"doc_key": list(doc_keys)}}]
            }
        }
        with _translated("delete entries"):
            self._delete_where(self._name(index, user_id), query, self._routing(index, user_id))
            self._delete_previous(index, query)

    def _delete_previous(self, index: str, query: dict[str, Any]) -> None:
        """The same deletion in the previous generation's memory indexes (all of them: their
        owners may have been spread by another count), while they are migrated."""
        if index == schema.MEMORY_INDEX:
            for name in self._previous:
                self._delete_where(name, query)

    def delete_document(self, doc_id: str, *, keep: Sequence[str] = ()) -> None:
        """Remove a verified document's passages, except the doc_keys in `keep` (a re-ingested
        document that became shorter loses its old tail)."""
        query: dict[str, Any] = {"bool": {"filter": [{"term": {"doc_id": doc_id}}]}}
        if keep:
            query["bool"]["must_not"] = [{"terms": {"doc_key": list(keep)}}]
        with _translated("delete a document's passages"):
            self._delete_where(self._name(schema.PASSAGE_INDEX), query)

    # --- the previous generation's memory indexes, while they are migrated ------------------

    def shared_page(
        self, token: str | None, limit: int = 500
    ) -> tuple[list[PreviousEntry], str | None]:
        """One page of the previous generation's memory indexes, read one after the other in
        doc_key order (search_after: doc_key is each entry's _id there, so the order is total
        and a page read again is the same), and the token of the next page (None after the
        last). An entry has its vector where the index kept it in `_source` (an index made
        before SOURCE_EXCLUDES), else none. A missing index has nothing."""
        position, after = _position(token)
        if position >= len(self._previous):
            return [], None
        name = self._previous[position]
        body: dict[str, Any] = {
            "size": limit,
            "query": {"match_all": {}},
            "sort": [{"doc_key": "asc"}],
        }
        if after is not None:
            body["search_after"] = [after]
        hits: list[dict[str, Any]] = []
        with _translated(f"read {name}"):
            try:
                hits = self._client.search(index=name, body=body)["hits"]["hits"]
            except NotFoundError as error:
                if not _missing_index(error):
                    raise
        entries = [PreviousEntry(_doc(hit["_source"])) for hit in hits]
        if len(hits) == limit:
            return entries, _token(position, entries[-1].doc.doc_key)
        if position + 1 < len(self._previous):
            return entries, _token(position + 1, None)
        return entries, None

    def put_vectors(self, index: str, owner: str, vectors: Sequence[MemoryDoc]) -> None:
        """Write entries read by shared_page (their vectors filled in) as the runtime writes
        them: into the owner's memory index of the current generation, routed by the owner."""
        self.upsert(index, vectors)

    def _name(self, index: str, user_id: str | None = None) -> str:
        """The physical index: for memories, the owner's memory index (which needs the owner
        once they are spread over several)."""
        if index == schema.MEMORY_INDEX and self._memory_indexes > 1:
            if not user_id:
                raise LongTermMemoryError("a memory index is chosen by its owner: none given")
            index = schema.memory_index_of(user_id, self._memory_indexes, self._generation)
        elif index == schema.MEMORY_INDEX:
            index = schema.memory_index_base(self._generation)
        return self._prefix + index

    def _search(
        self, index: str, user_id: str | None, body: dict[str, Any]
    ) -> list[dict[str, Any]]:
        name = self._name(index, user_id)
        routing = self._routing(index, user_id)
        params = {} if routing is None else {"routing": routing}
        with _translated(f"search {name}"):
            try:
                reply = self._client.search(index=name, body=body, params=params)
            except NotFoundError as error:
                # Nothing consolidated yet (or setup not run): no memories, not an outage.
                if _missing_index(error):
                    return []
                raise
        return list(reply["hits"]["hits"])

    def _delete_where(self, name: str, query: dict[str, Any], routing: str | None = None) -> None:
        # conflicts=proceed: a concurrent write to a doomed doc must not abort the rest.
        params = {"conflicts": "proceed"}
        if routing is not None:
            params["routing"] = routing  # the owner's shard only
        if not self._serverless:
            # Searches stop seeing the deleted documents when this returns, not a refresh
            # interval later (Serverless has no refresh; recall checks sessions anyway).
            params["refresh"] = "true"
        try:
            reply = self._client.delete_by_query(index=name, body={"query": query}, params=params)
        except NotFoundError as error:
            if _missing_index(error):
                return
            raise
        if reply.get("failures"):
            raise LongTermMemoryError(
                f"deleting from {name} failed: {_reason(reply['failures'][0].get('cause', {}))}"
            )


# A session's documents (not profile records, which have no session_id).
_OF_SESSION = {"exists": {"field": "session_id"}}


def _knn_body(
    vector: Sequence[float], k: int, user_id: str | None, sessions_only: bool = False
) -> dict[str, Any]:
    knn: dict[str, Any] = {"vector": list(vector), "k": k}
    if user_id is not None:
        knn["filter"] = {"term": {"user_id": user_id}}
    if sessions_only:
        terms = [knn["filter"]] if "filter" in knn else []
        knn["filter"] = {"bool": {"filter": [*terms, _OF_SESSION]}}
    return {"size": k, "_source": _NO_VECTOR, "query": {"knn": {"embedding": knn}}}


def _match_body(
    text: str, k: int, user_id: str | None, sessions_only: bool = False
) -> dict[str, Any]:
    # A user's profile records have their words in a field of their own
    # (schema.RECORD_TEXT_FIELD), which scores with its own statistics: /past (sessions only)
    # never reads it, and a search of all memories matches both fields; an entry has one of
    # them, so its score is that field's BM25. (Passages, user_id None, are in `text`.)
    match: dict[str, Any] = (
        {"match": {"text": {"query": text}}}
        if sessions_only or user_id is None
        else {"multi_match": {"query": text, "fields": ["text", schema.RECORD_TEXT_FIELD]}}
    )
    query: dict[str, Any] = {"must": [match]}
    filters = [{"term": {"user_id": user_id}}] if user_id is not None else []
    if sessions_only:
        filters.append(_OF_SESSION)
    if filters:
        query["filter"] = filters
    return {"size": k, "_source": _NO_VECTOR, "query": {"bool": query}}


def _vector_hits(hits: list[dict[str, Any]]) -> list[Candidate]:
    return [
        Candidate(_doc(hit["_source"]), vector_score=inner_product_from_score(hit["_score"]))
        for hit in hits
    ]


def _lexical_hits(hits: list[dict[str, Any]]) -> list[Candidate]:
    return [Candidate(_doc(hit["_source"]), lexical_score=hit["_score"]) for hit in hits]


def _source(doc: MemoryDoc) -> dict[str, Any]:
    source = asdict(doc)
    if not source["embedding"]:
        # An empty list fails the knn_vector dimension check; a missing vector is allowed.
        del source["embedding"]
    if schema.searched_apart(doc.session_id, doc.record_id):
        source[schema.RECORD_TEXT_FIELD] = source.pop("text")
    return source


def _doc(source: dict[str, Any]) -> MemoryDoc:
    fields = {k: v for k, v in source.items() if k in _DOC_FIELDS}
    if schema.RECORD_TEXT_FIELD in source:
        fields["text"] = source[schema.RECORD_TEXT_FIELD]
    return MemoryDoc(**fields)


class PreviousEntry(NamedTuple):
    """An entry of a previous generation's memory index; it is written as the doc itself."""

    doc: MemoryDoc

    @property
    def vector(self) -> MemoryDoc:
        return self.doc


def _token(position: int, after: str | None) -> str:
    """Where a migration continues: the previous index's position and the last doc_key read."""
    return json.dumps({"index": position, "after": after}, separators=(",", ":"))


def _position(token: str | None) -> tuple[int, str | None]:
    if token is None:
        return 0, None
    try:
        where = json.loads(token)
        position, after = where["index"], where["after"]
    except (ValueError, TypeError, KeyError) as error:
        raise ValueError(f"not a token of this migration: {token!r}") from error
    if not isinstance(position, int) or position < 0 or not isinstance(after, str | None):
        raise ValueError(f"not a token of this migration: {token!r}")
    return position, after


def _terms(**values: str) -> dict[str, Any]:
    return {"bool": {"filter": [{"term": {k: v}} for k, v in values.items()]}}


def _missing_index(error: TransportError) -> bool:
    return error.error == "index_not_found_exception"


def _reason(error: Any) -> str:
    """`type: reason` of an OpenSearch error object, else whatever the server sent."""
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]  # a whole error answer: {"error": {...}, "status": 400}
    if isinstance(error, dict) and "type" in error:
        return f"{error['type']}: {error.get('reason', '')}"
    return str(error)


@contextmanager
def _translated(action: str) -> Iterator[None]:
    """OpenSearch exceptions become the project's: outages 503, refusals 502."""
    try:
        yield
    except TransportConnectionError as error:  # also ConnectionTimeout and SSLError
        raise LongTermMemoryUnavailable(f"OpenSearch unreachable ({action}): {error}") from error
    except TransportError as error:
        status = error.status_code
        if isinstance(status, int) and (status == 429 or status >= 500):
            raise LongTermMemoryUnavailable(
                f"OpenSearch answered {status} ({action}): {_reason(error.info or error.error)}"
            ) from error
        raise LongTermMemoryError(
            f"OpenSearch refused to {action} ({status}): {_reason(error.info or error.error)}"
        ) from error
