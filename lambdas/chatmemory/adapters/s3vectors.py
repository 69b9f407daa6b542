"""Long-term memory on Amazon S3 Vectors, behind the LongTermIndex port: an index of its own per
owner key for memories, one index of verified passages in the stack's vector bucket; cosine
distance, float32.

What the service allows, and what this adapter does with it:

* Memories are indexed per owner (schema.user_vector_index), in one of `buckets` vector buckets
  named after the stack's (schema.user_vector_bucket): a query is billed for the data of the
  whole index it searches, so a query of one owner's index costs what that owner stored, not
  what every user did. An owner's index (and its bucket) is created by the first write that
  finds it missing; a search or deletion of a missing one finds nothing. Erasing an owner key
  (delete_user) deletes its index. A deployment made before this kept every memory in one
  shared index of the stack's bucket: while it exists (`shared_index`), deletions remove the
  entries there too, and migrate_shared copies its live entries to their owners' indexes.
* Every query still carries a filter on the filterable `user_id` (and, for /past, on
  `session_id` existing) and asks for ENHANCED mode, which filters before the vector search.
  Verified passages are nobody's: they carry no `user_id`, and their queries no filter. A
  query of the memory index without a user is refused here, before any request.
* Words: the service's own full-text search (`queryTexts`, on ENHANCED indexes configured with
  textSearchConfigurations) is not used: the stack's CloudFormation resource cannot configure
  it, and the Lambda runtime's botocore may not know it. hybrid_search is one QueryVectors for
  the nearest candidates (up to `candidates`, the service's topK limit of 100), then BM25 over
  the candidates' stored text (services/longterm/lexical.py) as the lexical half of the shared
  ranking; lexical_search alone has no vector to search with and returns nothing (services search
  through hybrid_search). bench/locomo.py --ranking s3vectors measures this restriction.
* No delete-by-query: keys are deterministic (`<owner digest>/<doc_key>`, the doc_key of the
  entry: schema.summary_doc_key and the rest), so a session's entries are derived from its turn
  count (schema.session_doc_keys), a record's from its id, a document's passages by probing
  `<doc_id>#p<n>` with GetVectors. The owner's digest in the key keeps two owners' equal
  doc_keys (a client-chosen record id) apart.
* Limits (S3 User Guide, "Limitations and restrictions"): keys up to 1,024 characters; 500
  vectors per PutVectors and DeleteVectors, 100 keys per GetVectors, 1,000 per ListVectors
  page, topK up to 100; metadata up to 40 KB per vector, of which filterable up to 2 KB;
  10,000 indexes per vector bucket. An entry's text longer than its share of the 40 KB is cut
  at a character boundary (its embedding was computed from the whole text); `doc.text_bytes`
  then records the full length.
* Errors: throttling and outages (429, 5xx, timeouts, connection failures) are
  LongTermMemoryUnavailable after the client's own retries (wiring: standard mode); any other
  refusal is LongTermMemoryError.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields, replace
from typing import Any, NamedTuple

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as SDKConnectionError

from chatmemory import limits, schema
from chatmemory.errors import ConfigurationError, LongTermMemoryError, LongTermMemoryUnavailable
from chatmemory.ports import Candidate, MemoryDoc, Search
from chatmemory.schema import MEMORY_INDEX, PASSAGE_INDEX
from chatmemory.services.longterm.lexical import rescore

MAX_KEY_CHARS = limits.S3VECTORS_KEY_CHARS
MAX_DELETE = limits.S3VECTORS_DELETE.count
MAX_GET = limits.S3VECTORS_GET_KEYS
MAX_LIST = limits.S3VECTORS_LIST_PAGE
MAX_TOP_K = limits.S3VECTORS_TOP_K
METADATA_BYTES = limits.S3VECTORS_METADATA_BYTES
FILTERABLE_BYTES = limits.S3VECTORS_FILTERABLE_METADATA_BYTES
# Kept free of the 40 KB: how the service counts a vector's metadata is not published to the
# byte, so the adapter counts high (keys, and values as JSON with every non-ASCII character
# escaped, as botocore sends them: "é" counts 6 bytes) and stays this far below the limit.
METADATA_MARGIN = 1024
# The "doc" key's share (the entry's ids, dates, title, source and the sessions a record was
# drawn from); beyond it the oldest of those sessions are dropped.
DOC_BYTES = 8 * 1024
# A document's passages are probed for this many consecutive missing numbers before the probe
# stops (every ingestion writes passages 1..n; a removal cuts a tail).
PASSAGE_PROBE = MAX_GET

_DOC_FIELDS = frozenset(f.name for f in fields(MemoryDoc))
# What goes into the "doc" JSON (the rest has keys of its own, or is the vector).
_DOC_JSON_FIELDS = [
    f.name
    for f in fields(MemoryDoc)
    if f.name not in ("user_id", "kind", "text", "session_id", "embedding")
]
# A /past query: documents of a session, not profile records.
_OF_SESSION = {"session_id": {"$exists": True}}
_OUTAGES = frozenset(
    {
        "TooManyRequestsException",
        "ServiceUnavailableException",
        "InternalServerException",
        "RequestTimeoutException",
    }
)
# A write that finds its owner's index missing creates it and writes again at once (the service
# is strongly consistent); these waits, before a third and a fourth try, only cover an index
# that another writer's create has not finished a moment before.
CREATE_WAITS = (0.2, 1.0)


def vector_key(user_id: str, doc_key: str) -> str:
    """The S3 Vectors key of an owner's entry: a fixed-length digest of the owner, then the
    entry's doc_key (itself hashed if the key would pass 1,024 characters)."""
    owner = hashlib.sha256(user_id.encode()).hexdigest()[:32]
    return f"{owner}/{limits.fitted_key(doc_key, MAX_KEY_CHARS - len(owner) - 1)}"


def similarity_from_distance(distance: float) -> float:
    """Cosine similarity from S3 Vectors' cosine distance (1 - similarity): the scale of the
    other stores' vector scores, so recall's weights mean the same."""
    return 1.0 - distance


class S3VectorsLongTermIndex:
    """LongTermIndex on S3 Vectors: verified passages in the vector bucket `bucket`, each owner's
    memories in an index of its own spread over `buckets` buckets named after it."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        *,
        dimension: int,
        candidates: int = MAX_TOP_K,
        buckets: int = 1,
        shared_index: bool = False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._bucket = bucket
        self._dimension = dimension
        self._candidates = max(1, min(candidates, MAX_TOP_K))
        self._buckets = max(1, buckets)
        self._shared = shared_index
        self._sleep = sleep
        # ENHANCED is asked for on every query when the SDK knows the parameter (an older
        # botocore in the Lambda runtime does not: then the index's own mode applies, which is
        # ENHANCED for buckets created from 30 September 2026).
        members = client.meta.service_model.operation_model("QueryVectors").input_shape.members
        self._query_mode = "queryMode" in members

    def location(self, index: str, user_id: str) -> tuple[str, str]:
        """(vector bucket, index name) of `index`'s entries of one owner: the passages' index
        of the stack's bucket, or the owner's own memory index."""
        if index == PASSAGE_INDEX:
            return self._bucket, PASSAGE_INDEX
        if index != MEMORY_INDEX:
            raise ValueError(f"no long-term index {index!r}")
        return (
            schema.user_vector_bucket(self._bucket, user_id, self._buckets),
            schema.user_vector_index(user_id),
        )

    # --- set-up --------------------------------------------------------------------------------

    def ensure_indexes(self) -> None:
        """Check that the passages' index (and a shared memory index, when one is kept) exists
        as schema.s3vectors_index_spec describes it, and create a missing one (local set-up; in
        AWS, CloudFormation creates them). Owners' indexes are made by their first write. An
        index that exists with another dimension, metric or non-filterable keys cannot be
        changed: that is a ConfigurationError naming the difference."""
        spec = schema.s3vectors_index_spec(self._dimension)
        names = [PASSAGE_INDEX, *([MEMORY_INDEX] if self._shared else [])]
        for name in names:
            try:
                with _translated(f"read index {name}"):
                    answer = self._client.get_index(vectorBucketName=self._bucket, indexName=name)
            except LongTermMemoryError as error:
                if not _is(error, "NotFoundException"):
                    raise
                self._create_index(self._bucket, name)
                continue
            _check_index(name, answer["index"], spec)

    def _create_index(self, bucket: str, name: str) -> None:
        """Create an index as schema.py describes it (and its bucket, when that is missing too);
        one created concurrently is fine."""
        spec = schema.s3vectors_index_spec(self._dimension)
        try:
            with _translated(f"create index {name}"):
                self._client.create_index(vectorBucketName=bucket, indexName=name, **spec)
        except LongTermMemoryError as error:
            if _is(error, "ConflictException"):
                return
            if not _is(error, "NotFoundException"):
                raise
            self._create_bucket(bucket)
            try:
                with _translated(f"create index {name}"):
                    self._client.create_index(vectorBucketName=bucket, indexName=name, **spec)
            except LongTermMemoryError as again:
                if not _is(again, "ConflictException"):
                    raise

    def _create_bucket(self, bucket: str) -> None:
        """A vector bucket of owners' indexes, encrypted as the stack's is (SSE-S3)."""
        try:
            with _translated(f"create vector bucket {bucket}"):
                self._client.create_vector_bucket(
                    vectorBucketName=bucket, encryptionConfiguration={"sseType": "AES256"}
                )
        except LongTermMemoryError as error:
            if not _is(error, "ConflictException"):  # created concurrently: fine
                raise

    # --- writes --------------------------------------------------------------------------------

    def upsert(self, index: str, docs: Sequence[MemoryDoc]) -> None:
        """PutVectors in batches within the request limits (500 vectors and 20 MiB: 500 vectors
        of 4,096 dimensions are about 40 MB as JSON), each owner's entries into its own index
        (created when missing); an entry's key is derived from its owner and doc_key, so a
        retried write overwrites (of one key twice in `docs`, the last is written)."""
        by_owner: dict[str, dict[str, dict[str, Any]]] = {}
        for doc in docs:
            if index == PASSAGE_INDEX and doc.user_id != schema.SHARED_OWNER:
                raise ValueError(f"a user's entry ({doc.doc_key}) has no place among passages")
            entries = by_owner.setdefault(doc.user_id, {})
            entries[vector_key(doc.user_id, doc.doc_key)] = self._vector(doc)
        for owner, vectors in by_owner.items():
            self.put_vectors(index, owner, list(vectors.values()))

    def put_vectors(self, index: str, owner: str, vectors: Sequence[dict[str, Any]]) -> None:
        """Vectors as PutVectors takes them into `index`'s entries of `owner`, batched; the
        owner's index is created by the first write that finds it missing."""
        bucket, name = self.location(index, owner)
        for batch in limits.batches(list(vectors), _json_bytes, limits.S3VECTORS_PUT):
            self._put(bucket, name, batch)

    def _put(self, bucket: str, name: str, batch: list[dict[str, Any]]) -> None:
        waits = (None, 0.0, *CREATE_WAITS)  # first: the index may be missing; then made
        for attempt, wait in enumerate(waits):
            if wait:
                self._sleep(wait)
            try:
                with _translated(f"write to {name}"):
                    self._client.put_vectors(vectorBucketName=bucket, indexName=name, vectors=batch)
                return
            except LongTermMemoryError as error:
                last = attempt == len(waits) - 1
                if not _is(error, "NotFoundException") or name == PASSAGE_INDEX or last:
                    raise
                if wait is None:
                    self._create_index(bucket, name)  # the owner's first entry

    def _vector(self, doc: MemoryDoc) -> dict[str, Any]:
        if len(doc.embedding) != self._dimension:
            raise LongTermMemoryError(
                f"{doc.doc_key}: a vector of {len(doc.embedding)} values, the index takes "
                f"{self._dimension} (S3 Vectors stores no entry without its vector)"
            )
        return {
            "key": vector_key(doc.user_id, doc.doc_key),
            "data": {"float32": [float(x) for x in doc.embedding]},
            "metadata": metadata_of(doc),
        }

    # --- searches ------------------------------------------------------------------------------

    def vector_search(self, search: Search) -> list[Candidate]:
        """The k nearest entries of `user_id` (k up to 100), cosine-scored."""
        return self._query(search)

    def lexical_search(self, search: Search) -> list[Candidate]:
        """Nothing: S3 Vectors searches by vector, and there is no vector here. Words are
        scored over vector candidates in hybrid_search."""
        return []

    def hybrid_search(self, search: Search) -> tuple[list[Candidate], list[Candidate]]:
        """One QueryVectors for the nearest `candidates` (at least k), then BM25 of `text` over
        their stored text: the k nearest, and the k best word matches among the candidates."""
        depth = max(search.k, self._candidates)
        found = self._query(replace(search, k=depth))
        return rescore(found, search.text, search.k)

    def _query(self, search: Search) -> list[Candidate]:
        index, vector, k, user_id = search.index, search.vector, search.k, search.user_id
        sessions_only = search.sessions_only
        if k <= 0:
            return []
        query_filter = _filter(index, user_id, sessions_only)
        bucket, name = self.location(index, user_id or schema.SHARED_OWNER)
        request: dict[str, Any] = {
            "vectorBucketName": bucket,
            "indexName": name,
            "topK": min(k, MAX_TOP_K),
            "queryVector": {"float32": [float(x) for x in vector]},
            "returnMetadata": True,
            "returnDistance": True,
        }
        if query_filter is not None:
            request["filter"] = query_filter
        if self._query_mode:
            request["queryMode"] = schema.S3VECTORS_INDEX_MODE
        hits: list[dict[str, Any]] = []
        while True:
            try:
                with _translated(f"search {index}"):
                    answer = self._client.query_vectors(**request)
            except LongTermMemoryError as error:
                if _is(error, "NotFoundException") and index == MEMORY_INDEX:
                    return []  # nothing consolidated or remembered yet: no index, no memories
                raise
            metric = answer.get("distanceMetric")
            if metric != schema.S3VECTORS_DISTANCE_METRIC:
                raise LongTermMemoryError(
                    f"index {index} measures {metric} distance; the ranking needs "
                    f"{schema.S3VECTORS_DISTANCE_METRIC} (recreate it from schema.py)"
                )
            hits += answer.get("vectors", [])
            # A topK above the service's page size comes in pages (same request + token).
            token = answer.get("nextToken")
            if not token or len(hits) >= request["topK"]:
                break
            request["nextToken"] = token
        return [
            Candidate(
                doc_of(hit.get("metadata") or {}),
                vector_score=similarity_from_distance(float(hit["distance"])),
            )
            for hit in hits[: request["topK"]]
        ]

    # --- deletion (by key: S3 Vectors has no delete-by-query) ----------------------------------

    def delete_session(
        self, user_id: str, session_id: str, *, num_turns: int | None = None
    ) -> None:
        """Every key the session can have: its summary, opening and a window starting at each
        of its turns (schema.session_doc_keys). DeleteVectors of an absent key is no error."""
        if num_turns is None:
            raise LongTermMemoryError(
                f"deleting session {session_id} from S3 Vectors needs its turn count "
                "(its keys are derived from it; there is no delete-by-query)"
            )
        self._delete(MEMORY_INDEX, user_id, schema.session_doc_keys(session_id, num_turns))

    def delete_user(self, user_id: str, *, doc_keys: Sequence[str] = ()) -> None:
        """The owner key's index, whole (every session's entries and every record's); in a
        shared index still kept, the keys of its records (`doc_keys`), each session's entries
        going with that session's purge (see the port)."""
        bucket, name = self.location(MEMORY_INDEX, user_id)
        try:
            with _translated(f"delete index {name}"):
                self._client.delete_index(vectorBucketName=bucket, indexName=name)
        except LongTermMemoryError as error:
            if not _is(error, "NotFoundException"):
                raise
        if self._shared:
            self._delete_keys(self._bucket, MEMORY_INDEX, user_id, doc_keys)

    def delete_documents(self, index: str, user_id: str, doc_keys: Sequence[str]) -> None:
        """These entries of the owner: the keys carry the owner, so no other owner's entry with
        an equal doc_key is touched."""
        self._delete(index, user_id, doc_keys)

    def delete_document(self, doc_id: str, *, keep: Sequence[str] = ()) -> None:
        """A verified document's passages but `keep`: passages 1, 2, ... are probed with
        GetVectors (100 keys a request, no data, no metadata) until 100 numbers in a row are
        missing, and the ones found and not kept are deleted."""
        kept = set(keep)
        first = 1
        while True:
            doc_keys = [schema.passage_doc_key(doc_id, n) for n in range(first, first + MAX_GET)]
            by_key = {vector_key(schema.SHARED_OWNER, k): k for k in doc_keys}
            with _translated(f"read passages of {doc_id}"):
                answer = self._client.get_vectors(
                    vectorBucketName=self._bucket,
                    indexName=PASSAGE_INDEX,
                    keys=list(by_key),
                    returnData=False,
                    returnMetadata=False,
                )
            found = [by_key[v["key"]] for v in answer.get("vectors", []) if v["key"] in by_key]
            if not found:
                return
            self._delete(PASSAGE_INDEX, schema.SHARED_OWNER, [k for k in found if k not in kept])
            first += MAX_GET

    def _delete(self, index: str, user_id: str, doc_keys: Sequence[str]) -> None:
        bucket, name = self.location(index, user_id)
        self._delete_keys(bucket, name, user_id, doc_keys)
        if self._shared and index == MEMORY_INDEX:
            self._delete_keys(self._bucket, MEMORY_INDEX, user_id, doc_keys)

    def _delete_keys(self, bucket: str, name: str, user_id: str, doc_keys: Sequence[str]) -> None:
        keys = list(dict.fromkeys(vector_key(user_id, k) for k in doc_keys))
        for start in range(0, len(keys), MAX_DELETE):
            try:
                with _translated(f"delete from {name}"):
                    self._client.delete_vectors(
                        vectorBucketName=bucket,
                        indexName=name,
                        keys=keys[start : start + MAX_DELETE],
                    )
            except LongTermMemoryError as error:
                if _is(error, "NotFoundException") and name != PASSAGE_INDEX:
                    return  # no index: nothing of the owner's to delete
                raise

    # --- the shared index of an older deployment --------------------------------------------

    def shared_page(
        self, token: str | None, limit: int = MAX_LIST
    ) -> tuple[list[SharedEntry], str | None]:
        """One page of the shared memory index (ListVectors with data and metadata, at most
        `limit` vectors), and the token of the next page (None after the last)."""
        request: dict[str, Any] = {
            "vectorBucketName": self._bucket,
            "indexName": MEMORY_INDEX,
            "maxResults": max(1, min(limit, MAX_LIST)),
            "returnData": True,
            "returnMetadata": True,
        }
        if token:
            request["nextToken"] = token
        try:
            with _translated(f"list {MEMORY_INDEX}"):
                answer = self._client.list_vectors(**request)
        except LongTermMemoryError as error:
            if _is(error, "NotFoundException"):
                return [], None  # no shared index: nothing to migrate
            raise
        entries = [
            SharedEntry(doc_of(vector.get("metadata") or {}), vector)
            for vector in answer.get("vectors", [])
        ]
        return entries, answer.get("nextToken") or None


class SharedEntry(NamedTuple):
    """A vector of the shared memory index: the entry it holds, and the vector as listed (key,
    data, metadata), which is copied as it is."""

    doc: MemoryDoc
    vector: dict[str, Any]


# --- metadata -------------------------------------------------------------------------------


def metadata_of(doc: MemoryDoc) -> dict[str, Any]:
    """An entry's metadata: filterable `user_id` (none for a shared passage), `kind` and
    `session_id` (when it has one); non-filterable `text` and `doc` (the rest, as JSON), within
    the service's limits."""
    filterable: dict[str, Any] = {"kind": str(doc.kind)}
    if doc.user_id != schema.SHARED_OWNER:
        filterable["user_id"] = doc.user_id
    if doc.session_id:
        filterable["session_id"] = doc.session_id
    if _size(filterable) > FILTERABLE_BYTES:
        raise LongTermMemoryError(
            f"{doc.doc_key}: its ids take {_size(filterable)} bytes of filterable metadata, "
            f"more than S3 Vectors' {FILTERABLE_BYTES}"
        )
    rest = {
        name: getattr(doc, name)
        for name in _DOC_JSON_FIELDS
        if getattr(doc, name) not in (None, "", [])
    }
    sessions = list(rest.pop("sessions", []))
    while True:
        if sessions:
            rest["sessions"] = sessions
        packed = json.dumps(rest, ensure_ascii=False, separators=(",", ":"))
        if _json_bytes(packed) <= DOC_BYTES or not sessions:
            break
        # A record drawn from very many sessions keeps the newest: it is recalled while one of
        # those still exists (never one of the dropped, which hides it sooner, never later).
        sessions = sessions[len(sessions) // 4 or 1 :]
    if _json_bytes(packed) > DOC_BYTES:
        raise LongTermMemoryError(
            f"{doc.doc_key}: its title, ids and source take {_json_bytes(packed)} bytes, "
            f"more than the {DOC_BYTES} this adapter leaves them"
        )
    budget = METADATA_BYTES - METADATA_MARGIN - _size(filterable) - _size({"doc": packed})
    text = _clip(doc.text, budget - _size({"text": ""}))
    if text != doc.text:
        rest["text_bytes"] = len(doc.text.encode())
        packed = json.dumps(rest, ensure_ascii=False, separators=(",", ":"))
    return {**filterable, "text": text, "doc": packed}


def doc_of(metadata: dict[str, Any]) -> MemoryDoc:
    """The entry a query answered with, from its metadata (unknown keys are ignored)."""
    try:
        rest = json.loads(metadata.get("doc") or "{}")
        values = {k: v for k, v in rest.items() if k in _DOC_FIELDS}
        return MemoryDoc(
            **values,
            user_id=metadata.get("user_id", schema.SHARED_OWNER),
            kind=metadata["kind"],
            text=metadata.get("text", ""),
            session_id=metadata.get("session_id"),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise LongTermMemoryError(f"an entry without this adapter's metadata: {error}") from error


def _filter(index: str, user_id: str | None, sessions_only: bool) -> dict[str, Any] | None:
    """Every search of users' entries is filtered to one owner; passages (an index of their
    own, nobody's) are searched whole."""
    if user_id is None:
        if index != schema.PASSAGE_INDEX:
            raise ValueError(f"a search of {index} must name the owner (user_id)")
        return None
    owner = {"user_id": user_id}
    return {"$and": [owner, _OF_SESSION]} if sessions_only else owner


def _json_bytes(value: Any) -> int:
    """A value's size as sent: JSON, non-ASCII characters escaped (never below its UTF-8)."""
    return len(json.dumps(value))


def _size(values: dict[str, Any]) -> int:
    """Bytes of metadata as this adapter counts them: keys and their values as sent."""
    return sum(len(k.encode()) + _json_bytes(v) for k, v in values.items())


def _clip(text: str, budget: int) -> str:
    """The longest prefix of `text` whose JSON encoding fits `budget` bytes."""
    if _json_bytes(text) <= budget:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest fitting prefix, by characters
        middle = (low + high + 1) // 2
        if _json_bytes(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def _check_index(name: str, found: dict[str, Any], spec: dict[str, Any]) -> None:
    wanted_keys = set(spec["metadataConfiguration"]["nonFilterableMetadataKeys"])
    have_keys = set(
        (found.get("metadataConfiguration") or {}).get("nonFilterableMetadataKeys") or []
    )
    problems = [
        f"{field} is {found.get(field)!r}, not {spec[field]!r}"
        for field in ("dataType", "dimension", "distanceMetric")
        if found.get(field) != spec[field]
    ]
    if not wanted_keys <= have_keys:
        problems.append(f"non-filterable keys {sorted(have_keys)} lack {sorted(wanted_keys)}")
    if problems:
        raise ConfigurationError(
            f"S3 Vectors index {name} does not match schema.py ({'; '.join(problems)}): "
            "an index cannot be changed, create a new one"
        )


def _is(error: LongTermMemoryError, code: str) -> bool:
    cause = error.__cause__
    return isinstance(cause, ClientError) and cause.response.get("Error", {}).get("Code") == code


@contextmanager
def _translated(action: str) -> Iterator[None]:
    """botocore's exceptions become the project's: outages 503, refusals 502."""
    try:
        yield
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        message = error.response.get("Error", {}).get("Message", "")
        if code in _OUTAGES or status == 429 or status >= 500:
            raise LongTermMemoryUnavailable(
                f"S3 Vectors answered {code or status} ({action}): {message}"
            ) from error
        raise LongTermMemoryError(
            f"S3 Vectors refused to {action} ({code or status}): {message}"
        ) from error
    except (SDKConnectionError, HTTPClientError) as error:  # timeouts, resets, DNS
        raise LongTermMemoryUnavailable(f"S3 Vectors unreachable ({action}): {error}") from error
    except BotoCoreError as error:  # a request the SDK would not send
        raise LongTermMemoryError(f"S3 Vectors request failed ({action}): {error}") from error
