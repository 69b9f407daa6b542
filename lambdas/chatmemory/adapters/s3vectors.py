"""Long-term memory on Amazon S3 Vectors, behind the LongTermIndex port: one vector index per
schema.LONG_TERM_INDEXES name in a vector bucket, cosine distance, float32.

What the service allows, and what this adapter does with it:

* Every query carries a filter on the filterable `user_id` (and, for /past, on `session_id`
  existing) and asks for ENHANCED mode, which filters before the vector search, so one user's
  entries among millions still fill topK. Verified passages live in their own index and are
  nobody's: they carry no `user_id`, and their queries no filter. A query of the memory index
  without a user is refused here, before any request.
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
  vectors per PutVectors and DeleteVectors, 100 keys per GetVectors, topK up to 100; metadata up
  to 40 KB per vector, of which filterable up to 2 KB. An entry's text longer than its share of
  the 40 KB is cut at a character boundary (its embedding was computed from the whole text);
  `doc.text_bytes` then records the full length.
* Errors: throttling and outages (429, 5xx, timeouts, connection failures) are
  LongTermMemoryUnavailable after the client's own retries (wiring: standard mode); any other
  refusal is LongTermMemoryError.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as SDKConnectionError

from chatmemory import limits, schema
from chatmemory.errors import ConfigurationError, LongTermMemoryError, LongTermMemoryUnavailable
from chatmemory.ports import Candidate, MemoryDoc
from chatmemory.services.longterm.lexical import rescore

MAX_KEY_CHARS = limits.S3VECTORS_KEY_CHARS
MAX_DELETE = limits.S3VECTORS_DELETE.count
MAX_GET = limits.S3VECTORS_GET_KEYS
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
    """LongTermIndex on the vector bucket `bucket` (indexes named as in schema.py)."""

    def __init__(
        self, client: Any, bucket: str, *, dimension: int, candidates: int = MAX_TOP_K
    ) -> None:
        self._client = client
        self._bucket = bucket
        self._dimension = dimension
        self._candidates = max(1, min(candidates, MAX_TOP_K))
        # ENHANCED is asked for on every query when the SDK knows the parameter (an older
        # botocore in the Lambda runtime does not: then the index's own mode applies, which is
        # ENHANCED for buckets created from 30 September 2026).
        members = client.meta.service_model.operation_model("QueryVectors").input_shape.members
        self._query_mode = "queryMode" in members

    # --- set-up --------------------------------------------------------------------------------

    def ensure_indexes(self) -> None:
        """Check that both indexes exist as schema.s3vectors_index_spec describes them, and
        create a missing one (local set-up; in AWS, CloudFormation creates them). An index
        that exists with another dimension, metric or non-filterable keys cannot be changed:
        that is a ConfigurationError naming the difference."""
        spec = schema.s3vectors_index_spec(self._dimension)
        for name in schema.LONG_TERM_INDEXES:
            try:
                with _translated(f"read index {name}"):
                    answer = self._client.get_index(vectorBucketName=self._bucket, indexName=name)
            except LongTermMemoryError as error:
                if not _is(error, "NotFoundException"):
                    raise
                self._create_index(name, spec)
                continue
            _check_index(name, answer["index"], spec)

    def _create_index(self, name: str, spec: dict[str, Any]) -> None:
        try:
            with _translated(f"create index {name}"):
                self._client.create_index(vectorBucketName=self._bucket, indexName=name, **spec)
        except LongTermMemoryError as error:
            if not _is(error, "ConflictException"):  # created concurrently: fine
                raise

    # --- writes --------------------------------------------------------------------------------

    def upsert(self, index: str, docs: Sequence[MemoryDoc]) -> None:
        """PutVectors in batches within the request limits (500 vectors and 20 MiB: 500 vectors
        of 4,096 dimensions are about 40 MB as JSON); an entry's key is derived from its owner
        and doc_key, so a retried write overwrites (of one key twice in `docs`, the last is
        written)."""
        vectors = {}
        for doc in docs:
            if index == schema.PASSAGE_INDEX and doc.user_id != schema.SHARED_OWNER:
                raise ValueError(f"a user's entry ({doc.doc_key}) has no place among passages")
            vectors[vector_key(doc.user_id, doc.doc_key)] = self._vector(doc)
        for batch in limits.batches(list(vectors.values()), _json_bytes, limits.S3VECTORS_PUT):
            with _translated(f"write to {index}"):
                self._client.put_vectors(
                    vectorBucketName=self._bucket, indexName=index, vectors=batch
                )

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

    def vector_search(
        self,
        index: str,
        vector: Sequence[float],
        k: int,
        user_id: str | None,
        *,
        sessions_only: bool = False,
    ) -> list[Candidate]:
        """The k nearest entries of `user_id` (k up to 100), cosine-scored."""
        return self._query(index, vector, k, user_id, sessions_only)

    def lexical_search(
        self, index: str, text: str, k: int, user_id: str | None, *, sessions_only: bool = False
    ) -> list[Candidate]:
        """Nothing: S3 Vectors searches by vector, and there is no vector here. Words are
        scored over vector candidates in hybrid_search."""
        return []

    def hybrid_search(
        self,
        index: str,
        vector: Sequence[float],
        text: str,
        k: int,
        user_id: str | None,
        *,
        sessions_only: bool = False,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """One QueryVectors for the nearest `candidates` (at least k), then BM25 of `text` over
        their stored text: the k nearest, and the k best word matches among the candidates."""
        found = self._query(index, vector, max(k, self._candidates), user_id, sessions_only)
        return rescore(found, text, k)

    def _query(
        self,
        index: str,
        vector: Sequence[float],
        k: int,
        user_id: str | None,
        sessions_only: bool,
    ) -> list[Candidate]:
        if k <= 0:
            return []
        request: dict[str, Any] = {
            "vectorBucketName": self._bucket,
            "indexName": index,
            "topK": min(k, MAX_TOP_K),
            "queryVector": {"float32": [float(x) for x in vector]},
            "returnMetadata": True,
            "returnDistance": True,
        }
        query_filter = _filter(index, user_id, sessions_only)
        if query_filter is not None:
            request["filter"] = query_filter
        if self._query_mode:
            request["queryMode"] = schema.S3VECTORS_INDEX_MODE
        hits: list[dict[str, Any]] = []
        while True:
            with _translated(f"search {index}"):
                answer = self._client.query_vectors(**request)
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
        self._delete(schema.MEMORY_INDEX, user_id, schema.session_doc_keys(session_id, num_turns))

    def delete_user(self, user_id: str, *, doc_keys: Sequence[str] = ()) -> None:
        """The owner's entries outside its sessions (`doc_keys`, its records'); each session's
        entries go with that session's purge (see the port)."""
        self._delete(schema.MEMORY_INDEX, user_id, doc_keys)

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
                    indexName=schema.PASSAGE_INDEX,
                    keys=list(by_key),
                    returnData=False,
                    returnMetadata=False,
                )
            found = [by_key[v["key"]] for v in answer.get("vectors", []) if v["key"] in by_key]
            if not found:
                return
            self._delete(
                schema.PASSAGE_INDEX, schema.SHARED_OWNER, [k for k in found if k not in kept]
            )
            first += MAX_GET

    def _delete(self, index: str, user_id: str, doc_keys: Sequence[str]) -> None:
        keys = list(dict.fromkeys(vector_key(user_id, k) for k in doc_keys))
        for start in range(0, len(keys), MAX_DELETE):
            with _translated(f"delete from {index}"):
                self._client.delete_vectors(
                    vectorBucketName=self._bucket,
                    indexName=index,
                    keys=keys[start : start + MAX_DELETE],
                )


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
