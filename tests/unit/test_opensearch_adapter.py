"""OpenSearchLongTermIndex against recorded OpenSearch 2.x answers: a real client whose only
fake is the connection, so request paths, parameters and bodies are the ones sent in AWS."""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionTimeout

from chatmemory import schema
from chatmemory.adapters.opensearch import (
    OpenSearchLongTermIndex,
    inner_product_from_score,
    opensearch_client,
)
from chatmemory.errors import LongTermMemoryError, LongTermMemoryUnavailable
from chatmemory.ports import Candidate, MemoryDoc, Search
from tests.opensearch_fake import AnsweringConnection

RECORDED = Path(__file__).parent / "recorded" / "opensearch"
HOST = "search-chat-memory-abc123.eu-west-1.es.amazonaws.com"
DIMENSION = 384


def recorded(name: str) -> dict[str, Any]:
    return json.loads((RECORDED / f"{name}.json").read_text())


@dataclass
class Sent:
    method: str
    url: str
    params: dict[str, str]
    body: str | None

    def json(self) -> Any:
        return json.loads(self.body or "null")

    def ndjson(self) -> list[Any]:
        assert self.body is not None and self.body.endswith("\n")
        return [json.loads(line) for line in self.body.splitlines()]


@dataclass
class Exchange:
    """What the client sent, and the recorded answers (or exceptions) it gets, in order."""

    replies: deque[Any] = field(default_factory=deque)
    sent: list[Sent] = field(default_factory=list)


class RecordedConnection(AnsweringConnection):
    """Answers from the exchange's queue."""

    def __init__(self, *, exchange: Exchange, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.exchange = exchange

    def answer(
        self, method: str, url: str, params: dict[str, Any], body: str | None
    ) -> tuple[int, dict[str, str], Any]:
        self.exchange.sent.append(Sent(method, url, params, body or None))
        reply = self.exchange.replies.popleft()
        if isinstance(reply, Exception):
            raise reply
        return reply["status"], reply["headers"], reply["body"]


@pytest.fixture
def exchange() -> Exchange:
    return Exchange()


def make_index(exchange: Exchange, *replies: Any, serverless: bool = False):
    exchange.replies.extend(recorded(r) if isinstance(r, str) else r for r in replies)
    # Same retry settings as opensearch_client, so retries are part of what is tested.
    client = OpenSearch(
        hosts=[{"host": HOST, "port": 443, "use_ssl": True}],
        connection_class=RecordedConnection,
        exchange=exchange,
        retry_on_timeout=True,
        max_retries=2,
    )
    return OpenSearchLongTermIndex(client, dimension=DIMENSION, serverless=serverless)


def summary_and_chunk() -> list[MemoryDoc]:
    return [
        MemoryDoc(
            doc_key="sess-1#summary",
            user_id="user-a",
            kind="summary",
            text="We planned a trip to Lisbon in May.",
            created_at="2024-05-01T10:00:00Z",
            embedding=[0.6, 0.8],
            session_id="sess-1",
            title="Lisbon trip",
            turn_from=1,
            turn_to=12,
        ),
        MemoryDoc(
            doc_key="sess-1#chunk-0",
            user_id="user-a",
            kind="chunk",
            text="user: Lisbon in May?",
            created_at="2024-05-01T10:00:00Z",
            embedding=[0.8, 0.6],
            session_id="sess-1",
            turn_from=1,
            turn_to=2,
        ),
    ]


def source_of(doc: MemoryDoc) -> dict[str, Any]:
    return {
        "doc_key": doc.doc_key,
        "user_id": doc.user_id,
        "kind": doc.kind,
        "text": doc.text,
        "created_at": doc.created_at,
        "embedding": doc.embedding,
        "session_id": doc.session_id,
        "title": doc.title,
        "doc_id": None,
        "passage_id": None,
        "source": None,
        "turn_from": doc.turn_from,
        "turn_to": doc.turn_to,
        "record_id": doc.record_id,
        "valid_until": doc.valid_until,
        "sessions": doc.sessions,
    }


# --- ensure_indexes --------------------------------------------------------------------------


def test_missing_indexes_are_created_with_the_schema_body(exchange: Exchange) -> None:
    index = make_index(
        exchange, "head_missing", "create_index", "head_missing", "create_index_passages"
    )

    index.ensure_indexes()

    assert [(s.method, s.url) for s in exchange.sent] == [
        ("HEAD", "/conversation-memories"),
        ("PUT", "/conversation-memories"),
        ("HEAD", "/verified-passages"),
        ("PUT", "/verified-passages"),
    ]
    body = exchange.sent[1].json()
    assert body == schema.long_term_index_body(DIMENSION)
    assert exchange.sent[3].json() == body
    # What the schema promises, spelled out once here: faiss HNSW, 384 dims, keyword user_id.
    assert body["settings"]["index"] == {"knn": True, "number_of_shards": 1}
    assert body["mappings"]["properties"]["user_id"] == {"type": "keyword"}
    # A domain stores no vector in a document's _source (most of its bytes: 4,096 floats are
    # about 90 KB of JSON); the k-NN plugin keeps it, and no hit carries it back.
    assert body["mappings"]["_source"] == {"excludes": ["embedding"]}
    # Stopwords out, Porter stems: what the embedded index's FTS5 query does too.
    assert body["mappings"]["properties"]["text"] == {"type": "text", "analyzer": "memory_text"}
    assert body["settings"]["analysis"]["analyzer"]["memory_text"]["filter"] == [
        "lowercase",
        "memory_stop",
        "porter_stem",
    ]
    assert body["mappings"]["properties"]["embedding"] == {
        "type": "knn_vector",
        "dimension": 384,
        "method": {
            "name": "hnsw",
            "engine": "faiss",
            "space_type": "innerproduct",
            "parameters": {"m": 16, "ef_construction": 128},
        },
    }


def current_mapping(index: str) -> dict[str, Any]:
    """GET /<index>/_mapping of an index that has every field of schema.py (OpenSearch answers
    with the mapping under the concrete index name, as in get_mapping_before_records.json)."""
    mappings = schema.long_term_index_body(DIMENSION)["mappings"]
    return {
        "status": 200,
        "headers": {"content-type": "application/json; charset=UTF-8"},
        "body": {index: {"mappings": mappings}},
    }


def test_existing_indexes_with_every_field_are_left_alone(exchange: Exchange) -> None:
    index = make_index(
        exchange,
        "head_present",
        current_mapping(schema.MEMORY_INDEX),
        "head_present",
        current_mapping(schema.PASSAGE_INDEX),
    )

    index.ensure_indexes()

    assert [(s.method, s.url) for s in exchange.sent] == [
        ("HEAD", "/conversation-memories"),
        ("GET", "/conversation-memories/_mapping"),
        ("HEAD", "/verified-passages"),
        ("GET", "/verified-passages/_mapping"),
    ]


def test_an_index_created_before_the_record_fields_gets_them_with_one_put_mapping(
    exchange: Exchange,
) -> None:
    """The mapping is `dynamic: strict`: without this, every write of a profile record's entry
    (record_id, valid_until, sessions) would be refused by an index of an earlier deployment."""
    index = make_index(
        exchange,
        "head_present",
        "get_mapping_before_records",
        "put_mapping",
        "head_present",
        current_mapping(schema.PASSAGE_INDEX),
    )

    index.ensure_indexes()

    assert [(s.method, s.url) for s in exchange.sent] == [
        ("HEAD", "/conversation-memories"),
        ("GET", "/conversation-memories/_mapping"),
        ("PUT", "/conversation-memories/_mapping"),
        ("HEAD", "/verified-passages"),
        ("GET", "/verified-passages/_mapping"),
    ]
    schema_fields = schema.long_term_index_body(DIMENSION)["mappings"]["properties"]
    # Only the absent fields, exactly as schema.py defines them: restating an existing field
    # (the knn_vector above all) is never attempted.
    assert exchange.sent[2].json() == {
        "properties": {
            "record_text": {"type": "text", "analyzer": "memory_text"},
            "record_id": {"type": "keyword"},
            "valid_until": {"type": "date"},
            "sessions": {"type": "keyword"},
        }
    }
    before = recorded("get_mapping_before_records")["body"][schema.MEMORY_INDEX]["mappings"]
    added = exchange.sent[2].json()["properties"]
    assert set(before["properties"]) | set(added) == set(schema_fields)
    assert all(schema_fields[name] == spec for name, spec in added.items())


def test_an_index_with_records_in_text_gets_the_records_field_alone(exchange: Exchange) -> None:
    """An index of the version before records had a field of their own: record_text is put on
    it (nothing else); its older records keep matching through `text` until written again."""
    before = current_mapping(schema.MEMORY_INDEX)
    del before["body"][schema.MEMORY_INDEX]["mappings"]["properties"]["record_text"]
    index = make_index(
        exchange,
        "head_present",
        before,
        "put_mapping",
        "head_present",
        current_mapping(schema.PASSAGE_INDEX),
    )

    index.ensure_indexes()

    assert exchange.sent[2].json() == {
        "properties": {"record_text": {"type": "text", "analyzer": "memory_text"}}
    }


def test_adding_the_fields_is_idempotent(exchange: Exchange) -> None:
    """A second deployment (or a retried setup) finds the fields there and sends no PUT."""
    index = make_index(
        exchange,
        "head_present",
        "get_mapping_before_records",
        "put_mapping",
        "head_present",
        current_mapping(schema.PASSAGE_INDEX),
        "head_present",
        current_mapping(schema.MEMORY_INDEX),
        "head_present",
        current_mapping(schema.PASSAGE_INDEX),
    )

    index.ensure_indexes()
    index.ensure_indexes()

    assert [s.method for s in exchange.sent[5:]] == ["HEAD", "GET", "HEAD", "GET"]


def test_serverless_existing_index_gets_the_missing_fields_too(exchange: Exchange) -> None:
    index = make_index(
        exchange,
        "head_present",
        "get_mapping_before_records",
        "put_mapping",
        "head_present",
        current_mapping(schema.PASSAGE_INDEX),
        serverless=True,
    )

    index.ensure_indexes()

    put = exchange.sent[2]
    assert (put.method, put.url) == ("PUT", "/conversation-memories/_mapping")
    assert set(put.json()["properties"]) == {
        "record_text",
        "record_id",
        "valid_until",
        "sessions",
    }


def test_throttled_put_mapping_is_unavailable_so_the_setup_retries(exchange: Exchange) -> None:
    index = make_index(exchange, "head_present", "get_mapping_before_records", "too_many_requests")

    with pytest.raises(
        LongTermMemoryUnavailable, match="record_id, record_text, sessions, valid_until"
    ):
        index.ensure_indexes()


def test_index_created_concurrently_by_another_setup_is_not_an_error(exchange: Exchange) -> None:
    index = make_index(
        exchange,
        "head_present",
        current_mapping(schema.MEMORY_INDEX),
        "head_missing",
        "resource_already_exists",
    )

    index.ensure_indexes()

    assert [s.method for s in exchange.sent] == ["HEAD", "GET", "HEAD", "PUT"]


def test_serverless_indexes_are_created_without_number_of_shards(exchange: Exchange) -> None:
    index = make_index(
        exchange,
        "head_missing",
        "create_index",
        "head_missing",
        "create_index_passages",
        serverless=True,
    )

    index.ensure_indexes()

    body = exchange.sent[1].json()
    assert body["settings"]["index"] == {"knn": True}
    assert body["mappings"] == schema.long_term_index_body(DIMENSION, serverless=True)["mappings"]
    assert "_source" not in body["mappings"]  # Serverless manages its documents' storage


def test_a_domains_indexes_are_created_with_its_shards_and_vectors_on_disk(
    exchange: Exchange,
) -> None:
    exchange.replies.extend(
        recorded(r) for r in ("head_missing", "create_index", "head_missing", "create_index")
    )
    client = OpenSearch(hosts=[HOST], connection_class=RecordedConnection, exchange=exchange)
    index = OpenSearchLongTermIndex(client, dimension=DIMENSION, shards=6, on_disk=True)

    index.ensure_indexes()

    body = exchange.sent[1].json()
    assert body["settings"]["index"] == {"knn": True, "number_of_shards": 6}
    # The graph 32x quantized in memory (binary quantization), rescored from disk: OpenSearch
    # 2.17's disk-based vector search, the same faiss HNSW and inner product.
    assert body["mappings"]["properties"]["embedding"] == {
        "type": "knn_vector",
        "dimension": 384,
        "data_type": "float",
        "mode": "on_disk",
        "compression_level": "32x",
        "method": {
            "name": "hnsw",
            "engine": "faiss",
            "space_type": "innerproduct",
            "parameters": {"m": 16, "ef_construction": 128},
        },
    }


def test_a_serverless_collection_gets_no_vectors_on_disk(exchange: Exchange) -> None:
    """(Nor routing: test_serverless_upsert_deletes_same_doc_keys_then_indexes_without_id.)"""
    exchange.replies.extend(recorded(r) for r in ("head_missing", "create_index"))
    exchange.replies.extend([recorded("head_present"), current_mapping(schema.PASSAGE_INDEX)])
    client = OpenSearch(hosts=[HOST], connection_class=RecordedConnection, exchange=exchange)
    index = OpenSearchLongTermIndex(client, dimension=DIMENSION, serverless=True, on_disk=True)

    index.ensure_indexes()

    assert "mode" not in exchange.sent[1].json()["mappings"]["properties"]["embedding"]


def test_index_prefix_is_prepended_to_both_index_names(exchange: Exchange) -> None:
    exchange.replies.extend(
        [
            recorded("head_present"),
            current_mapping("dev-conversation-memories"),
            recorded("head_present"),
            current_mapping("dev-verified-passages"),
        ]
    )
    client = OpenSearch(hosts=[HOST], connection_class=RecordedConnection, exchange=exchange)
    index = OpenSearchLongTermIndex(client, dimension=DIMENSION, index_prefix="dev-")

    index.ensure_indexes()

    assert [s.url for s in exchange.sent] == [
        "/dev-conversation-memories",
        "/dev-conversation-memories/_mapping",
        "/dev-verified-passages",
        "/dev-verified-passages/_mapping",
    ]


# --- upsert ----------------------------------------------------------------------------------


def test_upsert_sends_one_bulk_request_with_doc_key_as_id(exchange: Exchange) -> None:
    index = make_index(exchange, "bulk_created")
    docs = summary_and_chunk()

    index.upsert(schema.MEMORY_INDEX, docs)

    [sent] = exchange.sent
    # wait_for: searchable when it returns, so a delete-by-query right after (a writer that
    # finds its session or record deleted meanwhile) sees what it wrote. Failed before the fix
    # (refresh=false: the compensating delete missed the unrefreshed documents).
    assert (sent.method, sent.url, sent.params) == (
        "POST",
        "/conversation-memories/_bulk",
        {"refresh": "wait_for"},
    )
    # Routed by owner: every entry of user-a on one shard, which their searches alone read.
    assert sent.ndjson() == [
        {"index": {"_id": "sess-1#summary", "routing": "user-a"}},
        source_of(docs[0]),
        {"index": {"_id": "sess-1#chunk-0", "routing": "user-a"}},
        source_of(docs[1]),
    ]


def _bulk_reply(count: int) -> dict[str, Any]:
    item = {"index": {"_index": "conversation-memories", "status": 201, "result": "created"}}
    return {
        "status": 200,
        "headers": {"content-type": "application/json"},
        "body": {"took": 1, "errors": False, "items": [item] * count},
    }


def test_upsert_cuts_bulk_requests_at_the_domains_payload_limit(exchange: Exchange) -> None:
    # 130 windows of a long session at 4,096 dimensions are about 11 MB of NDJSON: a domain of
    # t3 instances refuses a request over 10 MiB (413). Failed before the fix: one request.
    docs = [
        MemoryDoc(
            doc_key=f"sess-1#chunk-{n}",
            user_id="user-a",
            kind="chunk",
            text=f"user: turn {n}",
            created_at="2024-05-01T10:00:00Z",
            embedding=[0.123456789012345678 + n / 1e6] * 4096,
            session_id="sess-1",
        )
        for n in range(130)
    ]
    index = make_index(exchange, *[_bulk_reply(n) for n in (122, 8)])

    index.upsert(schema.MEMORY_INDEX, docs)

    sizes = [len(sent.body.encode()) for sent in exchange.sent if sent.body]
    assert len(sizes) == 2 and max(sizes) <= 10 * 1024 * 1024
    keys = [line["index"]["_id"] for sent in exchange.sent for line in sent.ndjson()[::2]]
    assert keys == [d.doc_key for d in docs]  # every document once, in order


@pytest.mark.parametrize("doc_id", ["d" * 510, "規程" * 100], ids=["ascii", "japanese"])
def test_a_long_document_id_is_ingested_and_its_old_passages_still_deleted_by_key(
    exchange: Exchange, doc_id: str
) -> None:
    """ingest allows a doc_id of 512 characters of any script; OpenSearch refuses an _id over
    512 bytes, which "<doc_id>#p1" passed (513 and 603 bytes): the ingest failed."""
    from chatmemory.services.background.ingest import SourceDocument, ingest_documents
    from tests.fakes import FakeEmbedder

    text = "\n\n".join(f"Rule {n}. " + "word " * 100 for n in range(2))
    index = make_index(exchange, _bulk_reply(2), "delete_by_query")
    ingest_documents([SourceDocument(doc_id, text)], embedder=FakeEmbedder(), index=index)
    ingest_documents(
        [SourceDocument(doc_id, text)],
        embedder=FakeEmbedder(),
        index=make_index(exchange, _bulk_reply(2), "delete_by_query"),
    )

    bulks = [sent.ndjson() for sent in exchange.sent if sent.url.endswith("/_bulk")]
    ids = [[line["index"]["_id"] for line in lines[::2]] for lines in bulks]
    assert max(len(i.encode()) for i in ids[0]) <= 512
    assert ids[0] == ids[1] and len(set(ids[0])) == 2  # a re-ingest overwrites, one per passage
    keys = [source["doc_key"] for source in bulks[0][1::2]]
    assert keys == [f"{doc_id}#p1", f"{doc_id}#p2"]
    # The old tail is deleted by the doc_id and the full doc_keys, not by the _id.
    deleted = [sent.json() for sent in exchange.sent if sent.url.endswith("/_delete_by_query")]
    assert deleted[0]["query"]["bool"] == {
        "filter": [{"term": {"doc_id": doc_id}}],
        "must_not": [{"terms": {"doc_key": keys}}],
    }


def a_fact() -> MemoryDoc:
    return MemoryDoc(
        doc_key="record#user-a#r1",
        user_id="user-a",
        kind="fact",
        text="I live in Lisbon.",
        created_at="2024-05-01T10:05:00Z",
        embedding=[0.6, 0.8],
        record_id="r1",
        sessions=["sess-1"],
    )


def test_a_profile_records_words_go_to_a_field_of_their_own(exchange: Exchange) -> None:
    """Records in `text` would share BM25's statistics with the sessions' entries: a user's
    facts would change how /past scores their sessions. A summary is its session's: `text`."""
    index = make_index(exchange, "bulk_created")
    summary = summary_and_chunk()[0]
    summary.record_id = "r0"

    index.upsert(schema.MEMORY_INDEX, [summary, a_fact()])

    summary_source, fact_source = exchange.sent[0].ndjson()[1::2]
    assert summary_source["text"] == summary.text and "record_text" not in summary_source
    assert fact_source["record_text"] == "I live in Lisbon." and "text" not in fact_source


def test_a_records_hit_reads_its_words_from_its_own_field(exchange: Exchange) -> None:
    # The recorded answer's fact was indexed with `text` (before record_text): both read back.
    answer = recorded("msearch")
    fact = answer["body"]["responses"][1]["hits"]["hits"][0]["_source"]
    fact["record_text"] = fact.pop("text")
    index = make_index(exchange, answer, "msearch")

    for _ in range(2):
        [found] = index.hybrid_search(
            Search(schema.MEMORY_INDEX, [0.6, 0.8], "Lisbon", 5, "user-a")
        )[1]
        assert (found.doc.kind, found.doc.text) == ("fact", "I live in Lisbon.")


def test_upsert_of_nothing_sends_no_request(exchange: Exchange) -> None:
    index = make_index(exchange)

    index.upsert(schema.MEMORY_INDEX, [])

    assert exchange.sent == []


def test_document_without_embedding_is_indexed_without_the_vector_field(
    exchange: Exchange,
) -> None:
    index = make_index(exchange, "bulk_created")
    doc = summary_and_chunk()[0]
    doc.embedding = []

    index.upsert(schema.MEMORY_INDEX, [doc])

    assert "embedding" not in exchange.sent[0].ndjson()[1]


def test_serverless_upsert_deletes_same_doc_keys_then_indexes_without_id(
    exchange: Exchange,
) -> None:
    index = make_index(exchange, "delete_by_query", "bulk_serverless_created", serverless=True)
    docs = summary_and_chunk()

    index.upsert(schema.MEMORY_INDEX, docs)

    delete, bulk = exchange.sent
    assert (delete.method, delete.url, delete.params) == (
        "POST",
        "/conversation-memories/_delete_by_query",
        {"conflicts": "proceed"},
    )
    assert delete.json() == {"query": {"terms": {"doc_key": ["sess-1#summary", "sess-1#chunk-0"]}}}
    assert (bulk.method, bulk.url, bulk.params) == ("POST", "/conversation-memories/_bulk", {})
    assert bulk.ndjson() == [
        {"index": {}},
        source_of(docs[0]),
        {"index": {}},
        source_of(docs[1]),
    ]


def test_bulk_item_error_raises_long_term_memory_error_with_its_reason(
    exchange: Exchange,
) -> None:
    index = make_index(exchange, "bulk_item_error")

    with pytest.raises(LongTermMemoryError) as raised:
        index.upsert(schema.MEMORY_INDEX, summary_and_chunk())

    message = str(raised.value)
    assert "1 of 2 documents" in message
    assert "sess-1#chunk-0: mapper_parsing_exception: failed to parse field [embedding]" in message
    assert raised.value.status == 502


def test_bulk_item_rejected_under_load_is_unavailable(exchange: Exchange) -> None:
    index = make_index(exchange, "bulk_item_rejected")

    with pytest.raises(LongTermMemoryUnavailable, match="rejected_execution_exception"):
        index.upsert(schema.MEMORY_INDEX, summary_and_chunk()[:1])


# --- vector_search ---------------------------------------------------------------------------


def test_vector_search_sends_knn_query_filtered_to_the_user(exchange: Exchange) -> None:
    index = make_index(exchange, "knn_search")

    index.vector_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "", 5, "user-a"))

    [sent] = exchange.sent
    assert (sent.method, sent.url) == ("POST", "/conversation-memories/_search")
    assert sent.json() == {
        "size": 5,
        "_source": {"excludes": ["embedding"]},
        "query": {
            "knn": {
                "embedding": {
                    "vector": [0.6, 0.8],
                    "k": 5,
                    "filter": {"term": {"user_id": "user-a"}},
                }
            }
        },
    }


def test_past_searches_only_documents_of_sessions(exchange: Exchange) -> None:
    """Profile records share the memory index but belong to no session: /past asks for a
    session's documents only, so records never take its candidates."""
    index = make_index(exchange, "knn_search", "match_search")

    index.vector_search(
        Search(schema.MEMORY_INDEX, [0.6, 0.8], "", 5, "user-a", sessions_only=True)
    )
    index.lexical_search(
        Search(schema.MEMORY_INDEX, (), "Lisbon trip", 4, "user-a", sessions_only=True)
    )

    knn, match = (sent.json()["query"] for sent in exchange.sent)
    assert knn["knn"]["embedding"]["filter"] == {
        "bool": {"filter": [{"term": {"user_id": "user-a"}}, {"exists": {"field": "session_id"}}]}
    }
    # Only the sessions' field: records' words (record_text) neither match nor count in it.
    assert match["bool"]["must"] == [{"match": {"text": {"query": "Lisbon trip"}}}]
    assert match["bool"]["filter"] == [
        {"term": {"user_id": "user-a"}},
        {"exists": {"field": "session_id"}},
    ]


def test_vector_search_of_shared_passages_has_no_user_filter(exchange: Exchange) -> None:
    index = make_index(exchange, "knn_search")

    index.vector_search(Search(schema.PASSAGE_INDEX, [0.6, 0.8], "", 3, None))

    sent = exchange.sent[0]
    assert sent.url == "/verified-passages/_search"
    assert sent.json()["query"] == {"knn": {"embedding": {"vector": [0.6, 0.8], "k": 3}}}


def test_vector_search_hits_become_candidates_with_the_raw_inner_product(
    exchange: Exchange,
) -> None:
    index = make_index(exchange, "knn_search")

    found = index.vector_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "", 5, "user-a"))

    assert found == [
        Candidate(
            doc=MemoryDoc(
                doc_key="sess-1#summary",
                user_id="user-a",
                kind="summary",
                text="We planned a trip to Lisbon in May.",
                created_at="2024-05-01T10:00:00Z",
                session_id="sess-1",
                title="Lisbon trip",
                turn_from=1,
                turn_to=12,
            ),
            vector_score=pytest.approx(0.8068256),
        ),
        Candidate(
            doc=MemoryDoc(
                doc_key="sess-2#chunk-3",
                user_id="user-a",
                kind="chunk",
                text="The user dislikes early flights.",
                created_at="2024-04-02T08:30:00Z",
                session_id="sess-2",
                turn_from=7,
                turn_to=9,
            ),
            # score 0.8 = 1 / (1 - ip)  =>  ip = -0.25
            vector_score=pytest.approx(-0.25),
        ),
    ]


@pytest.mark.parametrize("ip", [1.0, 0.8068256, 0.3, 0.0, -0.25, -1.0])
def test_score_translation_is_the_exact_inverse_of_the_knn_plugin(ip: float) -> None:
    # k-NN plugin, faiss innerproduct: scoreTranslation(-ip) = 1/(1 + -ip) if -ip >= 0 else ip + 1
    score = 1 / (1 - ip) if ip <= 0 else ip + 1
    assert inner_product_from_score(score) == pytest.approx(ip)


def test_search_of_a_missing_index_finds_nothing(exchange: Exchange) -> None:
    index = make_index(exchange, "index_not_found")

    assert index.vector_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "", 5, "user-a")) == []


# --- lexical_search --------------------------------------------------------------------------


def test_lexical_search_sends_match_query_filtered_to_the_user(exchange: Exchange) -> None:
    index = make_index(exchange, "match_search")

    index.lexical_search(Search(schema.MEMORY_INDEX, (), "Lisbon trip", 4, "user-a"))

    # A user's memories: the sessions' entries (`text`) and the profile records, whose words
    # are in a field of their own with its own BM25 statistics.
    assert exchange.sent[0].json() == {
        "size": 4,
        "_source": {"excludes": ["embedding"]},
        "query": {
            "bool": {
                "must": [
                    {"multi_match": {"query": "Lisbon trip", "fields": ["text", "record_text"]}}
                ],
                "filter": [{"term": {"user_id": "user-a"}}],
            }
        },
    }


def test_lexical_search_hits_carry_the_bm25_score(exchange: Exchange) -> None:
    index = make_index(exchange, "match_search")

    [hit] = index.lexical_search(Search(schema.PASSAGE_INDEX, (), "refund", 4, None))

    assert "filter" not in exchange.sent[0].json()["query"]["bool"]
    assert hit.lexical_score == pytest.approx(2.7725887)
    assert hit.vector_score is None
    assert (hit.doc.doc_id, hit.doc.passage_id, hit.doc.source) == (
        "handbook",
        "p-4",
        "s3://docs/handbook.pdf",
    )


# --- hybrid_search (auto-recall: both searches in one request) --------------------------------


def test_hybrid_search_sends_both_searches_in_one_msearch_of_the_memory_index(
    exchange: Exchange,
) -> None:
    index = make_index(exchange, "msearch")

    index.hybrid_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "Lisbon trip", 5, "user-a"))

    [sent] = exchange.sent
    # The index is in the path, never in a header line: IAM allows exactly this path, and the
    # domain refuses an index named in the body (rest.action.multi.allow_explicit_index).
    assert (sent.method, sent.url, sent.params) == ("POST", "/conversation-memories/_msearch", {})
    # Each search routed to the owner's shard: it reads one shard, not every one.
    assert sent.ndjson() == [
        {"routing": "user-a"},
        {
            "size": 5,
            "_source": {"excludes": ["embedding"]},
            "query": {
                "knn": {
                    "embedding": {
                        "vector": [0.6, 0.8],
                        "k": 5,
                        "filter": {"term": {"user_id": "user-a"}},
                    }
                }
            },
        },
        {"routing": "user-a"},
        {
            "size": 5,
            "_source": {"excludes": ["embedding"]},
            "query": {
                "bool": {
                    "must": [
                        {
                            "multi_match": {
                                "query": "Lisbon trip",
                                "fields": ["text", "record_text"],
                            }
                        }
                    ],
                    "filter": [{"term": {"user_id": "user-a"}}],
                }
            },
        },
    ]


def test_hybrid_search_answers_become_vector_and_lexical_candidates(exchange: Exchange) -> None:
    index = make_index(exchange, "msearch")

    vector, lexical = index.hybrid_search(
        Search(schema.MEMORY_INDEX, [0.6, 0.8], "Lisbon trip", 5, "user-a")
    )

    assert [(c.doc.doc_key, c.vector_score, c.lexical_score) for c in vector] == [
        ("sess-1#summary", pytest.approx(0.8068256), None),
        ("sess-2#chunk-3", pytest.approx(-0.25), None),
    ]
    assert vector[0].doc.record_id == "20240501T100000000-sess-1-summary"
    # An entry indexed before the record fields existed has none of them.
    assert (vector[1].doc.record_id, vector[1].doc.sessions) == (None, [])
    [fact] = lexical
    assert fact.lexical_score == pytest.approx(2.7725887)
    assert fact.vector_score is None
    assert fact.doc == MemoryDoc(
        doc_key="record#20240501T100500000-sess-1-t3-0",
        user_id="user-a",
        kind="fact",
        text="I live in Lisbon.",
        created_at="2024-05-01T10:05:00Z",
        turn_from=3,
        record_id="20240501T100500000-sess-1-t3-0",
        valid_until="2024-09-12T18:20:00Z",
        sessions=["sess-1"],
    )


@pytest.mark.parametrize("answer", ["msearch_index_not_found", "index_not_found"])
def test_hybrid_search_of_a_missing_index_finds_nothing(exchange: Exchange, answer: str) -> None:
    """Nothing consolidated yet: per search (how _msearch reports it) or for the request."""
    index = make_index(exchange, answer)

    assert index.hybrid_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "Lisbon", 5, "user-a")) == (
        [],
        [],
    )


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("msearch_item_rejected", "429 (search conversation-memories): rejected_execution"),
        ("msearch_item_shards_failed", "503 (search conversation-memories): search_phase"),
    ],
)
def test_a_search_rejected_or_failed_inside_the_msearch_is_unavailable(
    exchange: Exchange, answer: str, reason: str
) -> None:
    """_msearch answers 200 and reports each search's failure in its item: a shard under load
    (429) or failing (5xx) is an outage, which the turn survives degraded."""
    index = make_index(exchange, answer)

    with pytest.raises(LongTermMemoryUnavailable, match=re.escape(reason)) as raised:
        index.hybrid_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "Lisbon", 5, "user-a"))

    assert raised.value.status == 503


def test_a_search_refused_inside_the_msearch_is_a_long_term_memory_error(
    exchange: Exchange,
) -> None:
    index = make_index(exchange, "msearch_item_parsing_exception")

    with pytest.raises(LongTermMemoryError) as raised:
        index.hybrid_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "Lisbon", 5, "user-a"))

    assert not isinstance(raised.value, LongTermMemoryUnavailable)
    assert "parsing_exception: [knn] requires 'vector' to be non-null" in str(raised.value)


def test_a_throttled_msearch_request_is_unavailable(exchange: Exchange) -> None:
    index = make_index(exchange, "too_many_requests")

    with pytest.raises(LongTermMemoryUnavailable, match="429"):
        index.hybrid_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "Lisbon", 5, "user-a"))


# --- deletes ---------------------------------------------------------------------------------


def test_delete_session_deletes_by_user_and_session(exchange: Exchange) -> None:
    index = make_index(exchange, "delete_by_query")

    index.delete_session("user-a", "sess-1")

    [sent] = exchange.sent
    # refresh=true: searches stop seeing the documents when the call returns.
    assert (sent.method, sent.url, sent.params) == (
        "POST",
        "/conversation-memories/_delete_by_query",
        {"conflicts": "proceed", "refresh": "true", "routing": "user-a"},
    )
    assert sent.json() == {
        "query": {
            "bool": {
                "filter": [{"term": {"user_id": "user-a"}}, {"term": {"session_id": "sess-1"}}]
            }
        }
    }


def test_delete_user_deletes_only_that_users_memories(exchange: Exchange) -> None:
    index = make_index(exchange, "delete_by_query")

    index.delete_user("user-a")

    [sent] = exchange.sent
    assert sent.url == "/conversation-memories/_delete_by_query"
    assert sent.json() == {"query": {"bool": {"filter": [{"term": {"user_id": "user-a"}}]}}}


def test_owners_spread_over_memory_indexes_are_written_searched_and_deleted_in_their_own(
    exchange: Exchange,
) -> None:
    """A domain whose owners are spread over several memory indexes (an index holds at most
    1,024 shards): every request about one owner's memories names that owner's index, routed
    by the owner as before; the setup creates every memory index and the passages'."""
    spread = 3
    owner_a, owner_b = "user-a", "user-b"
    index_a = schema.memory_index_of(owner_a, spread)
    index_b = schema.memory_index_of(owner_b, spread)
    assert index_a != index_b  # these two owners land apart (a digest of the owner key)
    assert {index_a, index_b} <= set(schema.memory_index_names(spread))
    exchange.replies.extend(
        [*[recorded("head_missing"), recorded("create_index")] * (spread + 1)]
        + [_bulk_reply(2), _bulk_reply(1), recorded("msearch"), recorded("delete_by_query")]
        + [recorded("delete_by_query"), recorded("delete_by_query")]
    )
    client = OpenSearch(hosts=[HOST], connection_class=RecordedConnection, exchange=exchange)
    index = OpenSearchLongTermIndex(client, dimension=DIMENSION, memory_indexes=spread)

    index.ensure_indexes()
    docs = summary_and_chunk()
    other = MemoryDoc(
        doc_key="sess-9#summary",
        user_id=owner_b,
        kind="summary",
        text="Another owner's summary.",
        created_at="2024-05-02T10:00:00Z",
        embedding=[0.8, 0.6],
        session_id="sess-9",
    )
    index.upsert(schema.MEMORY_INDEX, [*docs, other])
    index.hybrid_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "Lisbon", 5, owner_a))
    index.delete_user(owner_b)
    index.delete_session(owner_a, "sess-1")
    index.delete_documents(schema.MEMORY_INDEX, owner_b, ["sess-9#summary"])

    created = [s.url for s in exchange.sent if s.method == "PUT"]
    assert created == [f"/{name}" for name in schema.long_term_index_names(spread)]
    requests = [(s.url, s.params.get("routing")) for s in exchange.sent[2 * (spread + 1) :]]
    assert requests == [
        (f"/{index_a}/_bulk", None),
        (f"/{index_b}/_bulk", None),
        (f"/{index_a}/_msearch", None),
        (f"/{index_b}/_delete_by_query", owner_b),
        (f"/{index_a}/_delete_by_query", owner_a),
        (f"/{index_b}/_delete_by_query", owner_b),
    ]
    bulk_a, bulk_b = exchange.sent[2 * (spread + 1)], exchange.sent[2 * (spread + 1) + 1]
    assert [line["index"]["routing"] for line in bulk_a.ndjson()[::2]] == [owner_a, owner_a]
    assert [line["index"]["routing"] for line in bulk_b.ndjson()[::2]] == [owner_b]
    # A memory request must name its owner once there are several memory indexes.
    with pytest.raises(LongTermMemoryError, match="owner"):
        index.vector_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "", 5, None))


def test_delete_from_a_missing_index_is_not_an_error(exchange: Exchange) -> None:
    index = make_index(exchange, "index_not_found", "index_not_found")

    index.delete_session("user-a", "sess-1")
    index.delete_user("user-a")


# --- error mapping ---------------------------------------------------------------------------


def test_throttling_429_is_unavailable(exchange: Exchange) -> None:
    index = make_index(exchange, "too_many_requests")

    with pytest.raises(LongTermMemoryUnavailable, match="429") as raised:
        index.lexical_search(Search(schema.MEMORY_INDEX, (), "Lisbon", 4, "user-a"))

    assert raised.value.status == 503


def test_503_after_the_clients_retries_is_unavailable(exchange: Exchange) -> None:
    index = make_index(exchange, *["all_shards_failed"] * 3)

    with pytest.raises(LongTermMemoryUnavailable, match="search_phase_execution_exception"):
        index.vector_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "", 5, "user-a"))

    assert len(exchange.sent) == 3  # one try and max_retries=2


def test_timeouts_after_the_clients_retries_are_unavailable(exchange: Exchange) -> None:
    timeouts = [ConnectionTimeout("TIMEOUT", "Read timed out. (read timeout=10)", None)] * 3
    index = make_index(exchange, *timeouts)

    with pytest.raises(LongTermMemoryUnavailable, match="unreachable"):
        index.upsert(schema.MEMORY_INDEX, summary_and_chunk())


def test_parsing_exception_400_is_long_term_memory_error_with_type_and_reason(
    exchange: Exchange,
) -> None:
    index = make_index(exchange, "parsing_exception")

    with pytest.raises(LongTermMemoryError) as raised:
        index.vector_search(Search(schema.MEMORY_INDEX, [0.6, 0.8], "", 5, "user-a"))

    assert "(400): parsing_exception: [knn] requires 'vector' to be non-null" in str(raised.value)
    assert raised.value.code == "long_term_memory_error"


# --- the real client -------------------------------------------------------------------------


@pytest.mark.parametrize(("serverless", "service"), [(False, "es"), (True, "aoss")])
def test_client_signs_for_the_right_service_over_verified_https(
    serverless: bool, service: str
) -> None:
    client = opensearch_client(f"https://{HOST}", "eu-west-1", serverless=serverless)

    [connection] = client.transport.connection_pool.connections
    assert connection.host == f"https://{HOST}:443"
    assert connection.http_auth.service == service
    assert connection.http_auth.signer.region == "eu-west-1"
    assert connection.pool.cert_reqs == "CERT_REQUIRED"
    assert (client.transport.max_retries, client.transport.retry_on_timeout) == (2, True)
    headers = connection.http_auth("GET", f"https://{HOST}:443/_search", None)
    assert f"/eu-west-1/{service}/aws4_request" in headers["Authorization"]
