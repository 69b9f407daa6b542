"""Long-term memory: the indexes, their mappings and analyzers, the keys of their entries, and
Amazon S3 Vectors' names."""

from __future__ import annotations

import hashlib
from typing import Any

# --- long-term memory (OpenSearch k-NN; the embedded index mirrors the same fields) ------------

MEMORY_INDEX = "conversation-memories"
PASSAGE_INDEX = "verified-passages"
LONG_TERM_INDEXES = (MEMORY_INDEX, PASSAGE_INDEX)


# What an OpenSearch index may be named here: lowercase, no spaces, commas, wildcards or paths.
OPENSEARCH_INDEX_NAME = r"[a-z0-9][a-z0-9_.-]{0,254}"


def memory_index_base(generation: int = 0) -> str:
    """The name of a domain's first memory index of `generation`: MEMORY_INDEX, then
    MEMORY_INDEX-g1, -g2 ... (a new generation is a new index, made to change what an index
    cannot change in place: its shards, its vectors' mode, its `_source`)."""
    return MEMORY_INDEX if generation == 0 else f"{MEMORY_INDEX}-g{generation}"


def memory_index_names(count: int = 1, generation: int = 0) -> tuple[str, ...]:
    """The memory indexes of a domain whose owners are spread over `count` of them (an index
    holds at most 1,024 primary shards): the generation's base name, then <base>-1 ...
    -<count-1>."""
    base = memory_index_base(generation)
    return (base, *(f"{base}-{n}" for n in range(1, count)))


def memory_index_of(owner: str, count: int = 1, generation: int = 0) -> str:
    """The memory index of an owner key among `count` (a digest of the key: stable, even)."""
    if count <= 1:
        return memory_index_base(generation)
    digest = hashlib.sha256(owner.encode()).digest()
    return memory_index_names(count, generation)[int.from_bytes(digest[:8], "big") % count]


def long_term_index_names(memory_indexes: int = 1, generation: int = 0) -> tuple[str, ...]:
    """Every index of a domain's long-term memory: the memory indexes, then the passages'."""
    return (*memory_index_names(memory_indexes, generation), PASSAGE_INDEX)


# On a managed domain with fine-grained access control, the Lambdas' IAM roles are mapped to this
# OpenSearch security role (read/write on the indexes above only) by the index-setup resource.
OPENSEARCH_RUNTIME_ROLE = "chatmemory_runtime"


# Document reads and writes (search, bulk, delete-by-query) on the two indexes, and the
# cluster-level half of bulk and multi-search; no index creation, mapping or admin rights but
# one: a delete-by-query with refresh=true (the adapter's, so searches stop seeing what was
# deleted when the request returns) ends with a refresh of its own, indices:admin/refresh,
# which `crud` does not include (the security plugin refuses it with 403).
def opensearch_runtime_role_body(
    memory_indexes: int = 1, generation: int = 0, previous: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The runtime's security role on a domain whose owners are spread over `memory_indexes`
    of `generation`; `previous`, the memory indexes of an earlier generation still being
    migrated (read by the migration, deleted from by erasures until it is done)."""
    return {
        "description": "Chat memory Lambdas: read and write long-term memory documents",
        "cluster_permissions": ["cluster_composite_ops"],
        "index_permissions": [
            {
                "index_patterns": [
                    *long_term_index_names(memory_indexes, generation),
                    *previous,
                ],
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
# Which generation of memory indexes the runtime uses (memory_index_base), and the memory
# indexes of an earlier one while they are migrated into it (docs/operations.md).
ENV_OPENSEARCH_MEMORY_GENERATION = "OPENSEARCH_MEMORY_GENERATION"
ENV_OPENSEARCH_PREVIOUS_MEMORY_INDEXES = "OPENSEARCH_PREVIOUS_MEMORY_INDEXES"
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
