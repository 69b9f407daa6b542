"""Auto-recall's small-talk phrasings are embedded once and cached across cold starts
(ports.VectorCache): a later process reads them and embeds one phrasing to check them; a change
of the model, its dimension or the phrase set embeds them anew."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from chatmemory import schema
from chatmemory.adapters.dynamodb.vector_cache import MAX_VECTOR_BYTES, DynamoVectorCache
from chatmemory.services.longterm import auto_recall
from chatmemory.services.longterm.auto_recall import (
    SMALL_TALK,
    small_talk_cache_key,
    small_talk_similarity,
)
from tests.fakes import FakeEmbedder, InMemoryVectorCache


@dataclass
class RecordingEmbedder(FakeEmbedder):
    """The fake embedder, recording each request's texts."""

    requests: list[list[str]] = field(default_factory=list)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.requests.append(list(texts))
        return super().embed(texts)


@pytest.fixture(autouse=True)
def _fresh_process() -> None:
    auto_recall._small_talk_vectors.clear()


def _cold_start() -> None:
    """What a new container starts with: no vectors in the process."""
    auto_recall._small_talk_vectors.clear()


def _similarity(embedder: Any, cache: Any, text: str = "hello there") -> float:
    [vector] = FakeEmbedder(dimension=embedder.dimension).embed([text])
    return small_talk_similarity(embedder, vector, cache)


def test_the_first_cold_start_embeds_the_phrasings_and_keeps_them() -> None:
    embedder, cache = RecordingEmbedder(), InMemoryVectorCache()

    _similarity(embedder, cache)

    assert embedder.requests == [list(SMALL_TALK)]
    assert list(cache.saved) == [small_talk_cache_key(embedder)]
    assert len(cache.saved[small_talk_cache_key(embedder)]) == len(SMALL_TALK)


def test_a_later_cold_start_reads_them_and_embeds_one_phrasing_to_check_them() -> None:
    cache = InMemoryVectorCache()
    first = _similarity(RecordingEmbedder(), cache)
    _cold_start()
    embedder = RecordingEmbedder()

    again = _similarity(embedder, cache)

    assert embedder.requests == [[SMALL_TALK[0]]]
    assert again == pytest.approx(first, abs=1e-6)


def test_within_a_process_the_cache_is_read_once() -> None:
    embedder, cache = RecordingEmbedder(), InMemoryVectorCache()
    _similarity(embedder, cache)
    _similarity(embedder, cache, "thanks a lot")

    assert cache.loads == 1 and len(embedder.requests) == 1


def test_the_cached_vectors_are_the_ones_compared_with() -> None:
    """Vectors planted under the key (the same model's, by the check) decide the similarity."""
    embedder = RecordingEmbedder()
    real = embedder.embed(list(SMALL_TALK))
    planted = [real[0]] + [[0.0] * embedder.dimension for _ in SMALL_TALK[1:]]
    cache = InMemoryVectorCache({small_talk_cache_key(embedder): planted})
    embedder.requests.clear()

    # "thanks" is one of the phrasings, but only "hello" (the first) is planted.
    assert _similarity(embedder, cache, "thank you so much") == pytest.approx(0.0)
    assert embedder.requests == [[SMALL_TALK[0]]]


def test_another_model_or_dimension_embeds_them_anew() -> None:
    cache = InMemoryVectorCache()
    _similarity(RecordingEmbedder(), cache)
    for other in (RecordingEmbedder(name="other-model"), RecordingEmbedder(dimension=128)):
        _cold_start()

        _similarity(other, cache)

        assert other.requests == [list(SMALL_TALK)]
    assert len(cache.saved) == 3


def test_another_phrase_set_embeds_them_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = InMemoryVectorCache()
    _similarity(RecordingEmbedder(), cache)
    _cold_start()
    monkeypatch.setattr(auto_recall, "SMALL_TALK", (*SMALL_TALK, "howdy partner"))
    embedder = RecordingEmbedder()

    _similarity(embedder, cache)

    assert embedder.requests == [list(auto_recall.SMALL_TALK)]
    assert len(cache.saved) == 2


def test_vectors_of_another_model_behind_the_same_name_are_replaced() -> None:
    """An endpoint keeps its name when another model is deployed behind it: the checked
    phrasing does not match, so they are embedded again and the cache is overwritten."""
    embedder = RecordingEmbedder()
    key = small_talk_cache_key(embedder)
    stale = [[1.0] + [0.0] * (embedder.dimension - 1) for _ in SMALL_TALK]
    cache = InMemoryVectorCache({key: stale})

    _similarity(embedder, cache)

    assert embedder.requests == [[SMALL_TALK[0]], list(SMALL_TALK)]
    assert cache.saved[key] != stale


def test_a_cache_that_is_down_costs_the_embedding_as_without_one() -> None:
    embedder, cache = RecordingEmbedder(), InMemoryVectorCache(down=True)
    without = _similarity(RecordingEmbedder(), None)
    _cold_start()

    assert _similarity(embedder, cache) == pytest.approx(without, abs=1e-6)
    assert embedder.requests == [list(SMALL_TALK)]


# --- the DynamoDB adapter ------------------------------------------------------------------------


def test_dynamodb_keeps_the_vectors_as_float32_in_one_reserved_item(dynamodb: Any) -> None:
    cache = DynamoVectorCache(dynamodb, "sessions", draw=lambda copies: 0)
    vectors = [[0.1, -0.2, 0.3], [1e-8, 2.5, -1.0]]

    cache.save("small-talk#abc", vectors)

    assert cache.load("small-talk#abc") == [array("f", v).tolist() for v in vectors]
    assert cache.load("small-talk#other") is None
    key = {schema.SESSION_ID: {"S": "cache#small-talk#abc"}}
    item = dynamodb.get_item(TableName="sessions", Key=key)["Item"]
    assert len(item[schema.VECTORS]["B"]) == 6 * 4
    assert schema.STATUS not in item and schema.USER_ID not in item


def test_dynamodb_does_not_keep_a_set_larger_than_an_item(dynamodb: Any) -> None:
    cache = DynamoVectorCache(dynamodb, "sessions")
    dimension = MAX_VECTOR_BYTES // 4 // len(SMALL_TALK) + 1

    cache.save("big", [[0.5] * dimension for _ in SMALL_TALK])

    assert cache.load("big") is None


def test_dynamodb_ignores_an_item_it_cannot_cut(dynamodb: Any) -> None:
    dynamodb.put_item(
        TableName="sessions",
        Item={
            schema.SESSION_ID: {"S": "cache#odd"},
            schema.VECTOR_ROWS: {"N": "2"},
            schema.VECTOR_DIMENSION: {"N": "3"},
            schema.VECTORS: {"B": b"\x00" * 20},
        },
    )

    assert DynamoVectorCache(dynamodb, "sessions").load("odd") is None


def test_the_chat_keeps_them_in_the_sessions_table_when_it_has_long_term_memory(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from chatmemory import wiring

    monkeypatch.setenv(schema.ENV_LONG_TERM_BACKEND, "none")
    wiring.clear_caches()
    assert wiring.chat_deps().vector_cache is None

    monkeypatch.setenv(schema.ENV_LONG_TERM_BACKEND, "embedded")
    monkeypatch.setenv(schema.ENV_MEMORY_PATH, str(tmp_path / "memory"))
    wiring.clear_caches()
    cache = wiring.chat_deps().vector_cache
    assert isinstance(cache, DynamoVectorCache)
    cache.save("k", [[1.0]])
    keys = {f"cache#k#{n}" for n in range(1, 16)} | {"cache#k"}
    items = dynamodb.scan(TableName=wiring.settings().sessions_table)["Items"]
    written = {item[schema.SESSION_ID]["S"] for item in items} & keys
    assert len(written) == 1  # the process's own copy


def test_cold_starts_read_one_of_16_copies_not_one_key(dynamodb: Any) -> None:
    """Failed before: every cold start of the chat read one item, "cache#<key>" (a deploy's
    hundreds of cold starts on one partition, each refused read costing 50 embeddings)."""
    vectors = [[0.25, 0.5]]
    read: list[str] = []
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.GetItem",
        lambda params, **_: read.append(params["Key"][schema.SESSION_ID]["S"]),
    )
    DynamoVectorCache(dynamodb, "sessions", draw=lambda copies: 0).save("set", vectors)

    caches = [DynamoVectorCache(dynamodb, "sessions", draw=lambda c, n=n: n) for n in range(16)]
    assert all(cache.load("set") == vectors for cache in caches)  # copies 1-15: from the first
    read.clear()
    assert all(cache.load("set") == vectors for cache in caches)  # now each from its own copy

    assert sorted(read) == sorted(["cache#set"] + [f"cache#set#{n}" for n in range(1, 16)])


def test_the_first_set_embedded_is_the_first_copy_whatever_copy_its_writer_drew(
    dynamodb: Any,
) -> None:
    """Failed before: a first writer that drew copy 5 wrote copy 5 only, so each cold start
    drawing another unwritten copy found no first copy either and embedded every phrasing again
    (bench.coldstart: 50 embedding requests in a later cold start of the chat)."""
    vectors = [[0.25, 0.5]]
    first = DynamoVectorCache(dynamodb, "sessions", draw=lambda copies: 5)
    assert first.load("set") is None
    first.save("set", vectors)

    later = DynamoVectorCache(dynamodb, "sessions", draw=lambda copies: 9)
    assert later.load("set") == vectors


def test_a_copy_refused_for_throughput_is_read_from_another(dynamodb: Any) -> None:
    from botocore.exceptions import ClientError

    vectors = [[0.25, 0.5]]
    for n in range(2):
        DynamoVectorCache(dynamodb, "sessions", draw=lambda c, n=n: n).save("set", vectors)
    cache = DynamoVectorCache(dynamodb, "sessions", copies=2, draw=lambda copies: 1)
    refused = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow"}}

    def throttle(params: Any, **_: Any) -> None:
        if params["Key"][schema.SESSION_ID]["S"] == "cache#set#1":
            raise ClientError(refused, "GetItem")

    dynamodb.meta.events.register("provide-client-params.dynamodb.GetItem", throttle)

    assert cache.load("set") == vectors  # from copy 0, not 50 embeddings and a rewrite


def test_an_embedder_whose_name_pins_its_model_reads_them_without_a_check() -> None:
    # A Bedrock model id names one version of one model: the vectors kept under it are its.
    cache = InMemoryVectorCache()
    first = _similarity(RecordingEmbedder(pins_model=True), cache)
    _cold_start()
    embedder = RecordingEmbedder(pins_model=True)

    again = _similarity(embedder, cache)

    assert embedder.requests == []
    assert again == pytest.approx(first, abs=1e-6)


def test_only_bedrock_embedders_pin_their_model() -> None:
    import boto3

    from chatmemory.adapters.bedrock import BedrockEmbedder
    from chatmemory.adapters.offline.embedder import MiniLMEmbedder
    from chatmemory.adapters.openai_compat import OpenAICompatEmbedder
    from chatmemory.adapters.sagemaker import SageMakerEmbedder

    bedrock = boto3.client("bedrock-runtime", region_name="us-east-1")
    sagemaker = boto3.client("sagemaker-runtime", region_name="us-east-1")
    assert BedrockEmbedder(bedrock, "amazon.titan-embed-text-v2:0", dimension=1024).pins_model
    assert not SageMakerEmbedder(sagemaker, "my-endpoint", dimension=4096).pins_model
    assert not OpenAICompatEmbedder.pins_model and not MiniLMEmbedder.pins_model
