"""S3VectorsLongTermIndex against the s3vectors API as botocore defines it (its service model in
botocore 1.44): a real client whose every request is checked by botocore's Stubber against the
exact parameters sent, with answers that the Stubber validates against the API's output shapes;
errors and throttling as the service answers them. Then the services end to end on an in-memory
S3 Vectors (tests/s3vectors_fake.py: requests serialized and answers parsed by botocore, the
service's limits enforced): whatever is deleted leaves no vector behind, whatever runs at the
same time, and recall still finds by words and by meaning."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from chatmemory import schema, wiring
from chatmemory.adapters.s3vectors import (
    DOC_BYTES,
    FILTERABLE_BYTES,
    METADATA_BYTES,
    S3VectorsLongTermIndex,
    metadata_of,
    vector_key,
)
from chatmemory.errors import ConfigurationError, LongTermMemoryError, LongTermMemoryUnavailable
from chatmemory.ports import MemoryDoc, Search
from chatmemory.schema import MEMORY_INDEX, PASSAGE_INDEX
from chatmemory.services.background.consolidation import ConsolidationPolicy, consolidate_session
from chatmemory.services.conversation.chat import ChatDeps
from chatmemory.settings import Settings
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer, PausesOnUpsert
from tests.purging import DELETES, Purger, recalled
from tests.s3vectors_fake import FakeS3Vectors
from tests.unit.test_chat_api import Api

BUCKET = "chat-memory-vectors"
DIMENSION = 3
# Where user-a's memories live: an index of their own, in the one bucket of owners' indexes.
USER_BUCKET = f"{BUCKET}-u0"
INDEX_A = schema.user_vector_index("user-a")
# sha256("user-a"), sha256("user-b"), sha256(""): the owner digests that begin every key.
USER_A = "fc95297aa4f56781f0decb7d4bf59b14"
USER_B = "eb1c58aa404f0ada5e83d6c2bc60990d"
SHARED = "e3b0c44298fc1c149afbf4c8996fb924"
SUMMARY_DOC = (
    '{"doc_key":"sess-1#summary","created_at":"2024-05-01T10:00:00Z","title":"Lisbon trip",'
    '"turn_from":1,"turn_to":12,"record_id":"r-1"}'
)


def client() -> Any:
    return boto3.client("s3vectors", region_name="us-east-1")


@pytest.fixture
def stubbed() -> Iterator[tuple[S3VectorsLongTermIndex, Stubber]]:
    """The adapter on a stubbed client: a request nobody expected fails the test."""
    s3vectors = client()
    with Stubber(s3vectors) as stubber:
        yield S3VectorsLongTermIndex(s3vectors, BUCKET, dimension=DIMENSION), stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def faked() -> tuple[S3VectorsLongTermIndex, FakeS3Vectors]:
    """The adapter on the in-memory S3 Vectors, its two indexes created by ensure_indexes."""
    s3vectors = client()
    fake = FakeS3Vectors(s3vectors, BUCKET)
    index = S3VectorsLongTermIndex(s3vectors, BUCKET, dimension=DIMENSION)
    index.ensure_indexes()
    return index, fake


def summary(**changes: Any) -> MemoryDoc:
    values: dict[str, Any] = {
        "doc_key": "sess-1#summary",
        "user_id": "user-a",
        "kind": "summary",
        "text": "We planned a trip to Lisbon in May.",
        "created_at": "2024-05-01T10:00:00Z",
        "embedding": [0.6, 0.8, 0.0],
        "session_id": "sess-1",
        "title": "Lisbon trip",
        "turn_from": 1,
        "turn_to": 12,
        "record_id": "r-1",
    }
    return MemoryDoc(**(values | changes))


def query_params(**changes: Any) -> dict[str, Any]:
    """QueryVectors as the adapter sends it for user-a's memories (k=5)."""
    return {
        "vectorBucketName": USER_BUCKET,
        "indexName": INDEX_A,
        "topK": 5,
        "queryVector": {"float32": [0.6, 0.8, 0.0]},
        "filter": {"user_id": "user-a"},
        "returnMetadata": True,
        "returnDistance": True,
        "queryMode": "ENHANCED",
    } | changes


def hit(doc_key: str, distance: float, text: str, kind: str = "chunk", **extra: Any) -> Any:
    """One vector of a QueryVectors answer, with the metadata the adapter wrote."""
    session = doc_key.split("#")[0]
    return {
        "key": f"{USER_A}/{doc_key}",
        "distance": distance,
        "metadata": {
            "kind": kind,
            "user_id": "user-a",
            "session_id": session,
            "text": text,
            "doc": json.dumps({"doc_key": doc_key, "created_at": "2024-05-01T10:00:00Z", **extra}),
        },
    }


# --- writes ----------------------------------------------------------------------------------


def test_upsert_puts_each_entry_under_its_owner_and_doc_key_with_ids_filterable_and_text_apart(
    stubbed: Any,
) -> None:
    index, stubber = stubbed
    stubber.add_response(
        "put_vectors",
        {},
        {
            "vectorBucketName": USER_BUCKET,
            "indexName": INDEX_A,
            "vectors": [
                {
                    "key": f"{USER_A}/sess-1#summary",
                    "data": {"float32": [0.6, 0.8, 0.0]},
                    "metadata": {
                        "kind": "summary",
                        "user_id": "user-a",
                        "session_id": "sess-1",
                        "text": "We planned a trip to Lisbon in May.",
                        "doc": SUMMARY_DOC,
                    },
                }
            ],
        },
    )

    index.upsert(MEMORY_INDEX, [summary()])


def test_upsert_writes_500_vectors_a_request_and_a_key_given_twice_once(faked: Any) -> None:
    index, fake = faked
    index.upsert(MEMORY_INDEX, [summary()])  # the owner's index exists
    fake.calls.clear()
    docs = [
        summary(doc_key=f"sess-1#chunk-{n}", kind="chunk", text=f"turn {n}") for n in range(1, 502)
    ]

    index.upsert(MEMORY_INDEX, [*docs, summary(doc_key="sess-1#chunk-1", text="rewritten")])

    puts = [body for operation, body in fake.calls if operation == "PutVectors"]
    assert [len(body["vectors"]) for body in puts] == [500, 1]
    assert len(fake.keys(MEMORY_INDEX)) == 502
    written = {m["text"] for m in fake.metadata(MEMORY_INDEX)}
    assert "rewritten" in written and "turn 1" not in written  # the last of one key wins


def test_upsert_cuts_put_vectors_at_the_request_payload_limit() -> None:
    # 400 windows of 1,024 dimensions whose texts fill the metadata are about 24 MB as JSON,
    # over the 20 MiB a request may carry. Failed before the fix (batches of 500 by count
    # only: one request, refused).
    s3vectors = client()
    fake = FakeS3Vectors(s3vectors, BUCKET)
    index = S3VectorsLongTermIndex(s3vectors, BUCKET, dimension=1024)
    index.ensure_indexes()
    index.upsert(MEMORY_INDEX, [summary(embedding=[0.5] * 1024)])  # the owner's index exists
    fake.calls.clear()
    docs = [
        summary(
            doc_key=f"sess-1#chunk-{n}",
            kind="chunk",
            text="word " * 8_000,
            embedding=[0.1234567890123456 + n / 1e9] * 1024,
        )
        for n in range(400)
    ]

    index.upsert(MEMORY_INDEX, docs)

    puts = [body for operation, body in fake.calls if operation == "PutVectors"]
    assert len(puts) == 2 and sum(len(body["vectors"]) for body in puts) == 400
    assert len(fake.keys(MEMORY_INDEX)) == 401


def test_a_passage_has_no_owner_and_a_users_entry_is_refused_among_passages(stubbed: Any) -> None:
    index, stubber = stubbed
    passage = MemoryDoc(
        doc_key="handbook#p1",
        user_id=schema.SHARED_OWNER,
        kind="passage",
        text="Refunds are issued within 14 days.",
        created_at="1970-01-01T00:00:00.000Z",
        embedding=[0.0, 1.0, 0.0],
        title="Handbook",
        doc_id="handbook",
        passage_id="p1",
        source="s3://docs/handbook.md",
    )
    stubber.add_response(
        "put_vectors",
        {},
        {
            "vectorBucketName": BUCKET,
            "indexName": PASSAGE_INDEX,
            "vectors": [
                {
                    "key": f"{SHARED}/handbook#p1",
                    "data": {"float32": [0.0, 1.0, 0.0]},
                    "metadata": {
                        "kind": "passage",
                        "text": "Refunds are issued within 14 days.",
                        "doc": '{"doc_key":"handbook#p1","created_at":"1970-01-01T00:00:00.000Z",'
                        '"title":"Handbook","doc_id":"handbook","passage_id":"p1",'
                        '"source":"s3://docs/handbook.md"}',
                    },
                }
            ],
        },
    )
    index.upsert(PASSAGE_INDEX, [passage])

    with pytest.raises(ValueError, match="no place among passages"):
        index.upsert(PASSAGE_INDEX, [summary()])  # nothing sent: the Stubber would object


def test_an_entry_without_its_vector_is_refused_before_any_request(stubbed: Any) -> None:
    index, _ = stubbed
    with pytest.raises(LongTermMemoryError, match="0 values, the index takes 3"):
        index.upsert(MEMORY_INDEX, [summary(embedding=[])])


def test_text_beyond_the_metadata_limit_is_cut_at_a_character_boundary_with_its_length_kept(
    faked: Any,
) -> None:
    index, fake = faked
    text = "Lisbon é " * 6000  # 60,000 bytes of UTF-8, more than S3 Vectors' 40 KB

    metadata = metadata_of(summary(text=text))

    size = sum(len(k.encode()) + len(json.dumps(v).encode()) for k, v in metadata.items())
    assert size <= METADATA_BYTES
    assert text.startswith(metadata["text"]) and len(metadata["text"]) > 3000
    assert json.loads(metadata["doc"])["text_bytes"] == 60_000
    index.upsert(MEMORY_INDEX, [summary(text=text)])  # the service's limits hold (the fake's)
    [stored] = fake.metadata(MEMORY_INDEX)
    assert stored["text"] == metadata["text"]


def test_ids_longer_than_the_filterable_limit_are_refused_not_cut() -> None:
    with pytest.raises(LongTermMemoryError, match=f"more than S3 Vectors' {FILTERABLE_BYTES}"):
        metadata_of(summary(session_id="s" * 3000))


def test_a_record_drawn_from_very_many_sessions_keeps_the_newest_within_its_share() -> None:
    sessions = [f"{n:05d}-0000-0000-0000-000000000000" for n in range(1000)]

    kept = json.loads(metadata_of(summary(sessions=sessions))["doc"])["sessions"]

    assert 0 < len(kept) < 1000 and kept == sessions[-len(kept) :]
    assert len(metadata_of(summary(sessions=sessions))["doc"].encode()) <= DOC_BYTES


def test_a_key_longer_than_the_service_allows_is_hashed_the_same_way_every_time() -> None:
    long_key = "d" * 2000 + "#p1"
    key = vector_key("", long_key)
    assert len(key) <= 1024 and key == vector_key("", long_key) and key.startswith(SHARED)
    assert vector_key("user-a", "record#pref-1") != vector_key("user-b", "record#pref-1")


# --- searches --------------------------------------------------------------------------------


def test_vector_search_filters_to_the_owner_and_answers_cosine_similarity(stubbed: Any) -> None:
    index, stubber = stubbed
    stubber.add_response(
        "query_vectors",
        {
            "vectors": [
                {
                    "key": f"{USER_A}/sess-1#summary",
                    "distance": 0.25,
                    "metadata": {
                        "kind": "summary",
                        "user_id": "user-a",
                        "session_id": "sess-1",
                        "text": "We planned a trip to Lisbon in May.",
                        "doc": SUMMARY_DOC,
                    },
                },
                hit("sess-2#chunk-3", 0.75, "The user dislikes early flights."),
            ],
            "distanceMetric": "cosine",
        },
        query_params(),
    )

    found = index.vector_search(Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "", 5, "user-a"))

    assert [(c.doc.doc_key, c.vector_score, c.lexical_score) for c in found] == [
        ("sess-1#summary", 0.75, None),
        ("sess-2#chunk-3", 0.25, None),
    ]
    assert found[0].doc == summary(embedding=[])  # every field back, but the vector


def test_past_asks_for_the_owners_session_documents_only(stubbed: Any) -> None:
    index, stubber = stubbed
    only_sessions = {"$and": [{"user_id": "user-a"}, {"session_id": {"$exists": True}}]}
    stubber.add_response(
        "query_vectors",
        {"vectors": [], "distanceMetric": "cosine"},
        query_params(filter=only_sessions),
    )

    assert (
        index.vector_search(
            Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "", 5, "user-a", sessions_only=True)
        )
        == []
    )


def test_hybrid_search_is_one_query_of_100_candidates_then_bm25_over_their_text(
    stubbed: Any,
) -> None:
    index, stubber = stubbed
    stubber.add_response(
        "query_vectors",
        {
            "vectors": [
                hit("sess-1#chunk-1", 0.1, "We talked about the weather."),
                hit("sess-2#chunk-4", 0.2, "Caroline adopted a greyhound named Biscuit."),
                hit("sess-3#chunk-2", 0.3, "Nothing about pets here."),
                hit("sess-4#chunk-9", 0.6, "Biscuit the greyhound loves the beach."),
            ],
            "distanceMetric": "cosine",
        },
        query_params(topK=100),
    )

    vector, lexical = index.hybrid_search(
        Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "What is the greyhound's name, Biscuit?", 2, "user-a")
    )

    assert [(c.doc.doc_key, c.vector_score) for c in vector] == [
        ("sess-1#chunk-1", 0.9),
        ("sess-2#chunk-4", 0.8),
    ]
    # Only the candidates sharing a word, best first: greyhound, name (named) and Biscuit,
    # then greyhound and Biscuit, though it is the farthest by meaning.
    assert [c.doc.doc_key for c in lexical] == ["sess-2#chunk-4", "sess-4#chunk-9"]
    assert all(c.lexical_score and c.vector_score is None for c in lexical)


def test_hybrid_search_of_past_carries_the_session_filter(stubbed: Any) -> None:
    index, stubber = stubbed
    only_sessions = {"$and": [{"user_id": "user-a"}, {"session_id": {"$exists": True}}]}
    stubber.add_response(
        "query_vectors",
        {"vectors": [], "distanceMetric": "cosine"},
        query_params(topK=100, filter=only_sessions),
    )

    assert index.hybrid_search(
        Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "Lisbon", 5, "user-a", sessions_only=True)
    ) == ([], [])


def test_the_filter_goes_over_the_wire_as_a_json_document(faked: Any) -> None:
    """What botocore serializes (the Stubber sees parameters, the fake sees the body sent)."""
    index, fake = faked
    index.upsert(MEMORY_INDEX, [summary()])

    vector, lexical = index.hybrid_search(
        Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "Lisbon", 5, "user-a", sessions_only=True)
    )

    assert fake.calls[-1] == (
        "QueryVectors",
        {
            "vectorBucketName": USER_BUCKET,
            "indexName": INDEX_A,
            "topK": 100,
            "queryVector": {"float32": [0.6, 0.8, 0.0]},
            "filter": {"$and": [{"user_id": "user-a"}, {"session_id": {"$exists": True}}]},
            "returnMetadata": True,
            "returnDistance": True,
            "queryMode": "ENHANCED",
        },
    )
    assert [c.doc for c in vector] == [c.doc for c in lexical] == [summary(embedding=[])]
    assert vector[0].vector_score == pytest.approx(1.0)


def test_passages_are_searched_whole_and_memories_never_without_their_owner(stubbed: Any) -> None:
    index, stubber = stubbed
    params = query_params(vectorBucketName=BUCKET, indexName=PASSAGE_INDEX, topK=100)
    del params["filter"]  # the passage index holds nobody's entries but passages
    stubber.add_response("query_vectors", {"vectors": [], "distanceMetric": "cosine"}, params)

    assert index.hybrid_search(Search(PASSAGE_INDEX, [0.6, 0.8, 0.0], "refunds", 5, None)) == (
        [],
        [],
    )
    with pytest.raises(ValueError, match="must name the owner"):
        index.hybrid_search(Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "refunds", 5, None))
    with pytest.raises(ValueError, match="must name the owner"):
        index.vector_search(Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "", 5, None))


def test_lexical_search_alone_sends_nothing(stubbed: Any) -> None:
    index, _ = stubbed
    assert index.lexical_search(Search(MEMORY_INDEX, (), "Lisbon", 5, "user-a")) == []


def test_a_top_k_above_the_page_size_is_read_page_by_page(stubbed: Any) -> None:
    index, stubber = stubbed
    first = [hit(f"sess-1#chunk-{n}", 0.1 * n, f"turn {n}") for n in (1, 2, 3)]
    rest = [hit(f"sess-1#chunk-{n}", 0.1 * n, f"turn {n}") for n in (4, 5)]
    stubber.add_response(
        "query_vectors",
        {"vectors": first, "distanceMetric": "cosine", "nextToken": "page-2"},
        query_params(),
    )
    stubber.add_response(
        "query_vectors",
        {"vectors": rest, "distanceMetric": "cosine"},
        query_params(nextToken="page-2"),
    )

    found = index.vector_search(Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "", 5, "user-a"))

    assert [c.doc.doc_key for c in found] == [f"sess-1#chunk-{n}" for n in range(1, 6)]


def test_an_index_measuring_another_distance_is_refused(stubbed: Any) -> None:
    index, stubber = stubbed
    stubber.add_response(
        "query_vectors",
        {"vectors": [hit("sess-1#chunk-1", 0.4, "x")], "distanceMetric": "euclidean"},
        query_params(),
    )
    with pytest.raises(LongTermMemoryError, match="euclidean"):
        index.vector_search(Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "", 5, "user-a"))


# --- deletion by key -------------------------------------------------------------------------


def test_delete_session_deletes_every_key_its_turn_count_allows(stubbed: Any) -> None:
    index, stubber = stubbed
    keys = ["summary", "opening", "chunk-1", "chunk-2", "chunk-3"]
    stubber.add_response(
        "delete_vectors",
        {},
        {
            "vectorBucketName": USER_BUCKET,
            "indexName": INDEX_A,
            "keys": [f"{USER_A}/sess-1#{key}" for key in keys],
        },
    )

    index.delete_session("user-a", "sess-1", num_turns=3)


def test_delete_session_of_a_long_session_deletes_500_keys_a_request(faked: Any) -> None:
    index, fake = faked
    docs = [summary(doc_key=f"sess-1#chunk-{n}", kind="chunk") for n in range(1, 600)]
    index.upsert(MEMORY_INDEX, [summary(), *docs])

    index.delete_session("user-a", "sess-1", num_turns=600)

    deletes = [body["keys"] for operation, body in fake.calls if operation == "DeleteVectors"]
    assert [len(keys) for keys in deletes] == [500, 102]
    assert fake.keys(MEMORY_INDEX) == set()


def test_delete_session_without_its_turn_count_is_refused(stubbed: Any) -> None:
    index, _ = stubbed
    with pytest.raises(LongTermMemoryError, match="needs its turn count"):
        index.delete_session("user-a", "sess-1")


def test_delete_user_deletes_the_owners_index_whole(stubbed: Any) -> None:
    index, stubber = stubbed
    where = {"vectorBucketName": USER_BUCKET, "indexName": INDEX_A}
    stubber.add_response("delete_index", {}, where)
    stubber.add_client_error("delete_index", "NotFoundException", http_status_code=404)

    index.delete_user("user-a", doc_keys=["record#r-1", "sess-1#summary"])
    index.delete_user("user-a")  # deleted already: nothing left, no error


def test_with_a_shared_index_kept_delete_user_also_deletes_its_records_keys_there() -> None:
    s3vectors = client()
    with Stubber(s3vectors) as stubber:
        index = S3VectorsLongTermIndex(s3vectors, BUCKET, dimension=DIMENSION, shared_index=True)
        where = {"vectorBucketName": USER_BUCKET, "indexName": INDEX_A}
        stubber.add_response("delete_index", {}, where)
        stubber.add_response(
            "delete_vectors",
            {},
            {
                "vectorBucketName": BUCKET,
                "indexName": MEMORY_INDEX,
                "keys": [f"{USER_A}/record#r-1", f"{USER_A}/sess-1#summary"],
            },
        )

        index.delete_user("user-a", doc_keys=["record#r-1", "sess-1#summary", "record#r-1"])
        stubber.assert_no_pending_responses()


def test_deleting_an_owners_entry_leaves_another_owners_entry_of_the_same_doc_key(
    faked: Any,
) -> None:
    index, fake = faked
    mine = summary(doc_key="record#pref-1", kind="fact", session_id=None, text="I like tea")
    theirs = summary(doc_key="record#pref-1", kind="fact", session_id=None, user_id="user-b")
    index.upsert(MEMORY_INDEX, [mine, theirs])

    index.delete_documents(MEMORY_INDEX, "user-a", ["record#pref-1"])

    assert fake.keys(MEMORY_INDEX) == {f"{USER_B}/record#pref-1"}


def test_delete_document_probes_its_passages_and_deletes_the_old_tail(stubbed: Any) -> None:
    index, stubber = stubbed

    def probe(first: int) -> dict[str, Any]:
        return {
            "vectorBucketName": BUCKET,
            "indexName": PASSAGE_INDEX,
            "keys": [f"{SHARED}/handbook#p{n}" for n in range(first, first + 100)],
            "returnData": False,
            "returnMetadata": False,
        }

    found = {"vectors": [{"key": f"{SHARED}/handbook#p{n}"} for n in range(1, 6)]}
    stubber.add_response("get_vectors", found, probe(1))
    stubber.add_response(
        "delete_vectors",
        {},
        {
            "vectorBucketName": BUCKET,
            "indexName": PASSAGE_INDEX,
            "keys": [f"{SHARED}/handbook#p4", f"{SHARED}/handbook#p5"],
        },
    )
    stubber.add_response("get_vectors", {"vectors": []}, probe(101))

    index.delete_document("handbook", keep=["handbook#p1", "handbook#p2", "handbook#p3"])


# --- set-up ----------------------------------------------------------------------------------


def index_answer(name: str, **changes: Any) -> dict[str, Any]:
    return {
        "index": {
            "vectorBucketName": BUCKET,
            "indexName": name,
            "indexArn": f"arn:aws:s3vectors:us-east-1:123456789012:bucket/{BUCKET}/index/{name}",
            "creationTime": datetime(2026, 11, 1, tzinfo=UTC),
            "dataType": "float32",
            "dimension": DIMENSION,
            "distanceMetric": "cosine",
            "metadataConfiguration": {"nonFilterableMetadataKeys": ["text", "doc"]},
            "indexMode": "ENHANCED",
        }
        | changes
    }


def test_ensure_indexes_creates_a_missing_index_as_schema_describes_it() -> None:
    s3vectors = client()
    with Stubber(s3vectors) as stubber:
        index = S3VectorsLongTermIndex(s3vectors, BUCKET, dimension=DIMENSION, shared_index=True)
        where = {"vectorBucketName": BUCKET, "indexName": PASSAGE_INDEX}
        stubber.add_client_error(
            "get_index", "NotFoundException", "Index not found", 404, expected_params=where
        )
        stubber.add_response(
            "create_index",
            {"indexArn": f"arn:aws:s3vectors:us-east-1:123456789012:bucket/{BUCKET}/index/x"},
            where
            | {
                "dataType": "float32",
                "dimension": DIMENSION,
                "distanceMetric": "cosine",
                "metadataConfiguration": {"nonFilterableMetadataKeys": ["text", "doc"]},
            },
        )
        # A deployment's shared memory index, kept until its migration: checked as well.
        stubber.add_response(
            "get_index",
            index_answer(MEMORY_INDEX),
            {"vectorBucketName": BUCKET, "indexName": MEMORY_INDEX},
        )

        index.ensure_indexes()
        stubber.assert_no_pending_responses()


def test_ensure_indexes_makes_no_owners_index_their_first_write_does(faked: Any) -> None:
    index, fake = faked
    assert set(fake.indexes) == {PASSAGE_INDEX} and fake.user_indexes() == {}

    index.upsert(MEMORY_INDEX, [summary()])

    # The write found no index, created it (and its bucket, missing too), and wrote again.
    assert [operation for operation, _ in fake.calls[-5:]] == [
        "PutVectors",
        "CreateIndex",
        "CreateVectorBucket",
        "CreateIndex",
        "PutVectors",
    ]
    assert list(fake.user_indexes()) == [(USER_BUCKET, INDEX_A)]
    assert fake.calls[-2][1] == {
        "vectorBucketName": USER_BUCKET,
        "indexName": INDEX_A,
        **schema.s3vectors_index_spec(DIMENSION),
    }
    assert fake.keys(MEMORY_INDEX) == {f"{USER_A}/sess-1#summary"}


def test_owners_are_spread_over_the_buckets_each_in_an_index_of_its_own() -> None:
    s3vectors = client()
    fake = FakeS3Vectors(s3vectors, BUCKET)
    index = S3VectorsLongTermIndex(s3vectors, BUCKET, dimension=DIMENSION, buckets=4)
    owners = [f"user-{n}" for n in range(40)]

    index.upsert(MEMORY_INDEX, [summary(user_id=owner) for owner in owners])

    placed = fake.user_indexes()
    assert len(placed) == 40  # one index per owner
    assert {bucket for bucket, _ in placed} == {f"{BUCKET}-u{n}" for n in range(4)}
    for owner in owners:
        bucket, name = index.location(MEMORY_INDEX, owner)
        assert set(placed[bucket, name].vectors) == {vector_key(owner, "sess-1#summary")}
    # A search reads the owner's index only: what it is billed for is that owner's entries.
    found = index.vector_search(Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "", 100, "user-7"))
    assert [c.doc.user_id for c in found] == ["user-7"]


def test_an_owner_without_an_index_has_no_memories_and_nothing_to_delete(faked: Any) -> None:
    index, fake = faked

    assert index.hybrid_search(Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "Lisbon", 5, "user-a")) == (
        [],
        [],
    )
    index.delete_session("user-a", "sess-1", num_turns=3)
    index.delete_documents(MEMORY_INDEX, "user-a", ["record#r-1"])
    index.delete_user("user-a")

    assert fake.user_indexes() == {}  # and nothing was created


def test_erasing_an_owner_deletes_its_index_and_leaves_the_others(faked: Any) -> None:
    index, fake = faked
    index.upsert(MEMORY_INDEX, [summary(), summary(user_id="user-b")])

    index.delete_user("user-a")

    assert fake.keys(MEMORY_INDEX) == {f"{USER_B}/sess-1#summary"}
    assert (USER_BUCKET, INDEX_A) not in fake.user_indexes()


def test_ensure_indexes_accepts_an_index_created_concurrently(stubbed: Any) -> None:
    index, stubber = stubbed
    stubber.add_client_error("get_index", "NotFoundException", "not found", 404)
    stubber.add_client_error("create_index", "ConflictException", "exists", 409)

    index.ensure_indexes()


def test_ensure_indexes_refuses_an_index_that_differs_from_schema(stubbed: Any) -> None:
    index, stubber = stubbed
    answer = index_answer(PASSAGE_INDEX, dimension=384)
    answer["index"]["metadataConfiguration"] = {"nonFilterableMetadataKeys": ["text", "title"]}
    stubber.add_response("get_index", answer)

    with pytest.raises(ConfigurationError) as refused:
        index.ensure_indexes()
    assert "dimension is 384, not 3" in str(refused.value)
    assert "lack ['doc', 'text']" in str(refused.value)


# --- errors and throttling -------------------------------------------------------------------

OUTAGES = [
    ("TooManyRequestsException", 429),
    ("ServiceUnavailableException", 503),
    ("InternalServerException", 500),
    ("RequestTimeoutException", 408),
]
REFUSALS = [
    ("ValidationException", 400),
    ("AccessDeniedException", 403),
    ("NotFoundException", 404),
    ("KmsDisabledException", 400),
]
CALLS: dict[str, Callable[[S3VectorsLongTermIndex], Any]] = {
    "query_vectors": lambda i: i.hybrid_search(
        Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "x", 5, "user-a")
    ),
    "put_vectors": lambda i: i.upsert(MEMORY_INDEX, [summary()]),
    "delete_vectors": lambda i: i.delete_session("user-a", "sess-1", num_turns=1),
    "get_vectors": lambda i: i.delete_document("handbook"),
}


@pytest.mark.parametrize("operation", CALLS)
@pytest.mark.parametrize(("code", "status"), OUTAGES + REFUSALS)
def test_service_errors_become_the_projects_outage_or_refusal(
    stubbed: Any, operation: str, code: str, status: int
) -> None:
    index, stubber = stubbed
    if code == "NotFoundException" and operation != "get_vectors":
        # An owner's index that does not exist yet: no memories, nothing to delete, or
        # created by the write (test_an_owner_without_an_index_has_no_memories...).
        return
    stubber.add_client_error(operation, code, "the service says no", status)
    expected = LongTermMemoryUnavailable if (code, status) in OUTAGES else LongTermMemoryError

    with pytest.raises(expected) as raised:
        CALLS[operation](index)

    assert type(raised.value) is expected
    assert code in str(raised.value) and "the service says no" in str(raised.value)


def test_an_unreachable_service_is_an_outage() -> None:
    s3vectors = boto3.client(
        "s3vectors", region_name="us-east-1", config=Config(retries={"max_attempts": 1})
    )

    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://s3vectors.us-east-1.api.aws")

    s3vectors.meta.events.register_first("before-send.s3vectors", unreachable)
    index = S3VectorsLongTermIndex(s3vectors, BUCKET, dimension=DIMENSION)

    with pytest.raises(LongTermMemoryUnavailable, match="unreachable"):
        index.vector_search(Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "", 5, "user-a"))


def test_the_wired_client_retries_throttling_before_giving_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(schema.ENV_LONG_TERM_BACKEND, "s3vectors")
    monkeypatch.setenv(schema.ENV_VECTOR_BUCKET, BUCKET)
    monkeypatch.setenv(schema.ENV_EMBED_DIMENSION, str(DIMENSION))
    monkeypatch.setattr("time.sleep", lambda seconds: None)  # the retries' back-off
    index = wiring.long_term_index()
    assert isinstance(index, S3VectorsLongTermIndex)
    s3vectors = wiring.aws_client("s3vectors")
    retries = s3vectors.meta.config.retries
    assert (retries["mode"], retries["total_max_attempts"]) == ("standard", 6)
    fake = FakeS3Vectors(s3vectors, BUCKET)
    index.ensure_indexes()
    for _ in range(2):
        fake.fail_next("QueryVectors", "TooManyRequestsException", 429)

    assert index.vector_search(Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "", 5, "user-a")) == []
    assert [op for op, _ in fake.calls].count("QueryVectors") == 3

    for _ in range(6):
        fake.fail_next("QueryVectors", "TooManyRequestsException", 429)
    with pytest.raises(LongTermMemoryUnavailable, match="TooManyRequestsException"):
        index.vector_search(Search(MEMORY_INDEX, [0.6, 0.8, 0.0], "", 5, "user-a"))


def test_the_vector_bucket_is_required_with_s3vectors_only() -> None:
    with pytest.raises(ConfigurationError, match=schema.ENV_VECTOR_BUCKET):
        Settings.from_env({schema.ENV_LONG_TERM_BACKEND: "s3vectors"})
    assert Settings.from_env({schema.ENV_LONG_TERM_BACKEND: "embedded"}).vector_bucket == ""
    configured = Settings.from_env(
        {schema.ENV_LONG_TERM_BACKEND: "s3vectors", schema.ENV_VECTOR_BUCKET: BUCKET}
    )
    assert configured.vector_bucket == BUCKET


# --- the services end to end on the in-memory S3 Vectors -------------------------------------


class PausingIndex(PausesOnUpsert, S3VectorsLongTermIndex):
    """The adapter, pausing before or after its next write (as tests/unit/test_forgetting.py does
    on the embedded index)."""


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any):
    return services_on_s3vectors(dynamodb, monkeypatch, lambda_context)


def services_on_s3vectors(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any, **options: Any
) -> tuple[Api, ChatDeps, PausingIndex, FakeS3Vectors, Purger]:
    """The chat handler, its deps and the purge on moto's DynamoDB and the in-memory S3 Vectors
    (the adapter made with `options`)."""
    from handlers import chat_api

    s3vectors = client()
    fake = FakeS3Vectors(s3vectors, BUCKET)
    index = PausingIndex(s3vectors, BUCKET, dimension=FakeEmbedder().dimension, **options)
    index.ensure_indexes()
    deps = ChatDeps(
        memory=wiring.short_term_memory(),
        generator=FakeGenerator(reply=lambda prompt: "grounded answer"),
        embedder=FakeEmbedder(),
        long_term=index,
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    api = Api(chat_api.handler, lambda_context)
    purger = Purger(dynamodb, deps.memory, index, monkeypatch, lambda_context)
    return api, deps, index, fake, purger


def _ended(api: Api, user: str, *texts: str) -> str:
    sid = api.new_session(user=user)
    for text in texts:
        api.say(sid, text, user=user)
    assert api.call("POST", f"/sessions/{sid}/end", user=user)[0] == 200
    return sid


def _consolidate(deps: ChatDeps, sid: str, **stream: Any) -> str:
    from chatmemory.services.profile.extract import PatternExtractor

    return consolidate_session(
        sid,
        memory=deps.memory,
        summarizer=FakeSummarizer(),
        embedder=deps.embedder,
        index=deps.long_term,
        policy=ConsolidationPolicy(),
        now=datetime.now(UTC),
        extractor=PatternExtractor(),
        **stream,
    ).outcome


def _vectors_of(fake: FakeS3Vectors, *, session: str | None = None, owner: str | None = None):
    return [
        m
        for m in fake.metadata(MEMORY_INDEX)
        if (session is None or m.get("session_id") == session or session in m["doc"])
        and (owner is None or m.get("user_id") == owner)
    ]


@pytest.mark.parametrize("delete", DELETES, ids=list(DELETES))
@pytest.mark.parametrize("purge_during", [True, False], ids=["purged-meanwhile", "purged-after"])
@pytest.mark.parametrize("moment", ["before", "after"], ids=["before-write", "after-write"])
def test_a_delete_while_consolidation_writes_leaves_no_vector_behind(
    world: Any, delete: str, purge_during: bool, moment: str
) -> None:
    """The race of tests/unit/test_forgetting.py on this adapter: deletion is by key, derived
    from the session's turn count, and must still leave nothing, summary, windows and records
    drawn from the session included."""
    api, deps, index, fake, purger = world
    sid = _ended(
        api,
        "alice",
        "We are adopting a rescue greyhound named Biscuit",
        "I work as a nurse at the children's hospital",
        "I love long walks on the beach with the dog",
    )
    kept = _ended(api, "bob", "Bob's greyhound is called Biscuit too")
    assert _consolidate(deps, kept) == "consolidated"
    seen_during: list[set[str]] = []

    def delete_now() -> None:
        assert DELETES[delete](api, sid)[0] == 204
        seen_during.append(recalled(api, "alice", "greyhound Biscuit"))
        if purge_during:
            purger.drain()

    index.hook, index.moment = delete_now, moment
    late_forget = delete == "everything" and not purge_during
    assert _consolidate(deps, sid) == ("consolidated" if late_forget else "deleted")
    purger.drain()

    assert seen_during == [set()]
    assert _vectors_of(fake, session=sid) == []
    # Nothing else of alice's was consolidated: no vector of hers is left, records included.
    assert [m for m in fake.metadata(MEMORY_INDEX) if m["user_id"].startswith("alice")] == []
    assert recalled(api, "alice", "greyhound Biscuit") == set()
    purger.drain()
    assert api.call("GET", "/deletions", user="alice")[1]["complete"] is True
    # Another user's memory of the same words is untouched, and found by words and meaning.
    assert recalled(api, "bob", "greyhound Biscuit") == {kept}
    assert _vectors_of(fake, session=kept)


def test_a_forget_leaves_no_vector_of_the_owner_records_included(world: Any) -> None:
    api, deps, _, fake, purger = world
    first = _ended(api, "alice", "I work as a nurse at the children's hospital")
    second = _ended(api, "alice", "I moved to Porto last spring", "I love green tea")
    for sid in (first, second):
        assert _consolidate(deps, sid) == "consolidated"
    status, _ = api.call("POST", "/memories/records", {"text": "I prefer trains"}, user="alice")
    assert status == 201
    kinds = {m["kind"] for m in _vectors_of(fake, owner="alice")}
    assert {"summary", "chunk", "fact", "preference"} <= kinds

    assert api.call("DELETE", "/memories", user="alice")[0] == 204
    purger.drain()

    assert _vectors_of(fake, owner="alice") == []
    assert api.call("GET", "/deletions", user="alice")[1]["complete"] is True


def test_a_redelivered_record_of_a_purged_session_deletes_what_a_crashed_attempt_indexed(
    world: Any,
) -> None:
    """The session item is gone: the consolidation handler takes the owner and the turn count
    from the stream record's image, which is enough to derive every key to delete."""
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
        DynamoDBRecord,
    )

    from handlers import consolidate

    api, deps, index, fake, purger = world
    sid = _ended(api, "alice", "my passport number is in the blue folder", "and the keys too")
    orphans = [
        summary(doc_key=f"{sid}#{part}", user_id="alice", session_id=sid, embedding=vector)
        for part, vector in zip(
            ("summary", "chunk-1", "chunk-2"),
            FakeEmbedder().embed(["passport", "blue folder", "keys"]),
            strict=True,
        )
    ]
    assert api.call("DELETE", f"/sessions/{sid}", user="alice")[0] == 204
    purger.drain()
    index.upsert(MEMORY_INDEX, orphans)  # a zombie write of the crashed attempt, after the purge
    image = {
        "session_id": {"S": sid},
        "user_id": {"S": "alice"},
        "status": {"S": "ENDED"},
        "num_turns": {"N": "2"},
    }
    record = {
        "eventName": "MODIFY",
        "dynamodb": {
            "Keys": {"session_id": {"S": sid}},
            "OldImage": image | {"status": {"S": "OPEN"}},
            "NewImage": image,
        },
    }
    monkeypatch_deps = wiring.ConsolidationDeps(
        memory=deps.memory,
        summarizer=FakeSummarizer(),
        embedder=deps.embedder,
        index=index,
        policy=ConsolidationPolicy(),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wiring, "consolidation_deps", lambda: monkeypatch_deps)
        consolidate.record_handler(DynamoDBRecord(record))

    assert _vectors_of(fake, session=sid) == []


def test_a_deleted_records_entry_is_purged(world: Any) -> None:
    from chatmemory.services.profile.purge import purge_record

    api, deps, _, fake, _ = world
    status, body = api.call("POST", "/memories/records", {"text": "I prefer trains"}, user="alice")
    assert status == 201
    record_id = body["record"]["record_id"]
    assert any(
        json.loads(m["doc"]).get("record_id") == record_id for m in fake.metadata(MEMORY_INDEX)
    )

    # The delete purges in the request; the records stream's purge then finds nothing left.
    assert api.call("DELETE", f"/memories/records/{record_id}", user="alice")[0] == 204
    assert _vectors_of(fake, owner="alice") == []
    assert not purge_record("alice", record_id, memory=deps.memory, index=deps.long_term)


def test_reingesting_a_shorter_document_removes_its_old_tail(faked: Any) -> None:
    from chatmemory.services.background.ingest import SourceDocument, ingest_documents

    index, fake = faked
    embedder = FakeEmbedder(dimension=DIMENSION)
    long_text = "\n\n".join(f"Paragraph {n} " + "word " * 110 for n in range(1, 151))
    ingest_documents([SourceDocument("handbook", long_text)], embedder=embedder, index=index)
    assert len(fake.keys(PASSAGE_INDEX)) == 150

    shorter = SourceDocument("handbook", "Only one paragraph now.")
    ingest_documents([shorter], embedder=embedder, index=index)

    assert fake.keys(PASSAGE_INDEX) == {f"{SHARED}/handbook#p1"}
    [passage] = fake.metadata(PASSAGE_INDEX)
    assert passage["text"] == "Only one paragraph now." and "user_id" not in passage


def test_an_owners_first_write_is_written_again_at_once_after_its_index_is_made() -> None:
    s3vectors = client()
    fake = FakeS3Vectors(s3vectors, BUCKET)
    slept: list[float] = []
    index = S3VectorsLongTermIndex(s3vectors, BUCKET, dimension=DIMENSION, sleep=slept.append)

    index.upsert(MEMORY_INDEX, [summary()])

    assert slept == [] and fake.keys(MEMORY_INDEX) == {f"{USER_A}/sess-1#summary"}


def test_a_missing_index_that_stays_missing_is_a_refusal_after_a_few_tries() -> None:
    s3vectors = client()
    FakeS3Vectors(s3vectors, BUCKET)
    slept: list[float] = []
    index = S3VectorsLongTermIndex(s3vectors, BUCKET, dimension=DIMENSION, sleep=slept.append)
    # Another writer's delete of the index (a forget's purge) keeps undoing the create.
    index._create_index = lambda bucket, name: None  # type: ignore[method-assign]

    with pytest.raises(LongTermMemoryError, match="NotFoundException"):
        index.upsert(MEMORY_INDEX, [summary()])
    assert slept == [0.2, 1.0]
