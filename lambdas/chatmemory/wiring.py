"""Composition root for Lambda handlers and local mode: builds adapters from Settings, once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from typing import TYPE_CHECKING, Any

from chatmemory.errors import ConfigurationError
from chatmemory.ports import (
    CheckpointStore,
    Embedder,
    EventPublisher,
    Extractor,
    LongTermIndex,
    SentimentAnalyzer,
    ShortTermMemory,
    Summarizer,
    TextGenerator,
    VectorCache,
)
from chatmemory.providers import EMBED_PROVIDERS, TEXT_PROVIDERS
from chatmemory.schema import LongTermBackend, SentimentMode, TextBackend
from chatmemory.services.prompt import Roles
from chatmemory.settings import Settings

# Services are imported where used: each handler's cold start loads only those of its own work
# (the stream handlers do not load the chat service's modules, nor the chat handler the
# consolidation's).
if TYPE_CHECKING:
    from datetime import datetime

    from chatmemory.services.background.consolidation import (
        ConsolidationPolicy,
        ConsolidationResult,
    )
    from chatmemory.services.background.forget import Purging
    from chatmemory.services.background.maintenance import CompactionPolicy
    from chatmemory.services.background.migrate import SharedIndex
    from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy


@lru_cache(maxsize=1)
def settings() -> Settings:
    return Settings.from_env()


@cache
def aws_client(service: str, endpoint_url: str | None = None) -> Any:
    """One boto3 client per service and endpoint, created on first use: in a Lambda by the end
    of its init (handlers/__init__.py), never by importing a module."""
    import boto3
    from botocore.config import Config

    # Standard retries back off on throttling and transient errors (DynamoDB included).
    config = Config(retries={"mode": "standard", "max_attempts": 5})
    return boto3.client(service, endpoint_url=endpoint_url, config=config)


class _ClientOnFirstUse:
    """A boto3 client created when first used, for one a cold start's first request rarely
    needs (EventBridge: only a hand-off publishes), so that request does not build it."""

    def __init__(self, service: str) -> None:
        self._service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(aws_client(self._service), name)


def short_term_memory(cfg: Settings | None = None) -> ShortTermMemory:
    from chatmemory.adapters.dynamodb import DynamoShortTermMemory

    cfg = cfg or settings()
    return DynamoShortTermMemory(
        aws_client("dynamodb", cfg.dynamodb_endpoint),
        cfg.sessions_table,
        cfg.conversations_table,
        cfg.users_table,
        cfg.records_table,
    )


def vector_cache(cfg: Settings | None = None) -> VectorCache:
    """Vectors kept across cold starts: one item of the sessions table (the chat may read and
    write it already)."""
    from chatmemory.adapters.dynamodb.vector_cache import DynamoVectorCache

    cfg = cfg or settings()
    return DynamoVectorCache(aws_client("dynamodb", cfg.dynamodb_endpoint), cfg.sessions_table)


def checkpoint_store(cfg: Settings | None = None) -> CheckpointStore:
    """LangGraph checkpoints (services/conversation/checkpoints.py) on the checkpoints table."""
    from chatmemory.adapters.dynamodb.checkpoints import DynamoCheckpointStore

    cfg = cfg or settings()
    return DynamoCheckpointStore(
        aws_client("dynamodb", cfg.dynamodb_endpoint), cfg.checkpoints_table
    )


# --- model and index adapters, one builder per backend ----------------------------------------
# The model providers' registries are chatmemory/providers.py; the long-term indexes' is here.
# Each maps a backend (validated in Settings) to the function that builds its adapter; adapters
# are imported inside, so a Lambda loads only the one it uses.


def _embedded_index(cfg: Settings) -> LongTermIndex:
    from chatmemory.adapters.embedded import EmbeddedLongTermIndex

    return EmbeddedLongTermIndex(cfg.memory_path)


def _opensearch_index(cfg: Settings) -> LongTermIndex:
    import os

    from chatmemory.adapters.opensearch import OpenSearchLongTermIndex, opensearch_client

    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
    client = opensearch_client(
        cfg.opensearch_endpoint, region, serverless=cfg.opensearch_serverless
    )
    return OpenSearchLongTermIndex(
        client,
        dimension=cfg.embed_dimension,
        serverless=cfg.opensearch_serverless,
        shards=cfg.opensearch_shards,
        on_disk=cfg.opensearch_on_disk,
        memory_indexes=cfg.opensearch_memory_indexes,
        memory_generation=cfg.opensearch_memory_generation,
        previous_memory_indexes=cfg.opensearch_previous_memory_indexes,
    )


# The first botocore that knows S3 Vectors. The asset uses the runtime's boto3 (it ships none:
# stacks/packaging.py); a runtime whose SDK is older cannot reach the vector bucket.
S3VECTORS_BOTOCORE = "1.39.9"


def _s3vectors_index(cfg: Settings) -> LongTermIndex:
    import botocore
    from botocore.exceptions import UnknownServiceError

    from chatmemory.adapters.s3vectors import S3VectorsLongTermIndex

    try:
        # The shared client: standard retries back off on TooManyRequestsException and 5xx.
        client = aws_client("s3vectors")
    except UnknownServiceError:
        raise ConfigurationError(
            f"LONG_TERM_BACKEND=s3vectors needs botocore {S3VECTORS_BOTOCORE} or later; this "
            f"runtime has {botocore.__version__} (deploy with a newer Lambda runtime, or add "
            "a boto3 layer)"
        ) from None
    return S3VectorsLongTermIndex(
        client,
        cfg.vector_bucket,
        dimension=cfg.embed_dimension,
        buckets=cfg.vector_buckets,
        shared_index=cfg.vector_shared_index,
    )


def shared_memory_index(cfg: Settings | None = None) -> SharedIndex:
    """The index with what an older deployment's memory indexes hold, to migrate
    (services/background/migrate.py): S3 Vectors' shared memory index, or a domain's memory
    indexes of the previous generation."""
    cfg = cfg or settings()
    if cfg.long_term_backend == LongTermBackend.S3VECTORS and cfg.vector_shared_index:
        from chatmemory.adapters.s3vectors import S3VectorsLongTermIndex

        index = _s3vectors_index(cfg)
        assert isinstance(index, S3VectorsLongTermIndex)
        return index
    if cfg.long_term_backend == LongTermBackend.OPENSEARCH and (
        cfg.opensearch_previous_memory_indexes and not cfg.opensearch_serverless
    ):
        from chatmemory.adapters.opensearch import OpenSearchLongTermIndex

        domain = _opensearch_index(cfg)
        assert isinstance(domain, OpenSearchLongTermIndex)
        return domain
    raise ConfigurationError(
        "the migration of memory indexes needs LONG_TERM_BACKEND=s3vectors with "
        "VECTOR_SHARED_INDEX=true, or LONG_TERM_BACKEND=opensearch (a domain) with "
        "OPENSEARCH_PREVIOUS_MEMORY_INDEXES"
    )


def migration_embedder(cfg: Settings | None = None) -> Embedder | None:
    """The embedder the migration fills missing vectors with: a domain's previous memory
    index may have kept none in `_source` (S3 Vectors lists every vector with its data)."""
    cfg = cfg or settings()
    return embedder(cfg) if cfg.long_term_backend == LongTermBackend.OPENSEARCH else None


LONG_TERM_INDEXES: dict[LongTermBackend, Callable[[Settings], LongTermIndex]] = {
    LongTermBackend.EMBEDDED: _embedded_index,
    LongTermBackend.OPENSEARCH: _opensearch_index,
    LongTermBackend.S3VECTORS: _s3vectors_index,
}


def _build(registry: Mapping[Any, Callable[[Settings], Any]], backend: Any, cfg: Settings) -> Any:
    builder = registry.get(backend)
    if builder is None:
        raise ConfigurationError(f"no adapter is registered for backend {backend!r}")
    return builder(cfg)


def text_generator(cfg: Settings | None = None) -> TextGenerator:
    """The text model of the configured provider (chatmemory/providers.py)."""
    cfg = cfg or settings()
    builders = {name: provider.build for name, provider in TEXT_PROVIDERS.items()}
    generator: TextGenerator = _build(builders, cfg.text_backend, cfg)
    return generator


def embedder(cfg: Settings | None = None) -> Embedder:
    """The embedding model of the configured provider (chatmemory/providers.py)."""
    cfg = cfg or settings()
    builders = {name: provider.build for name, provider in EMBED_PROVIDERS.items()}
    built: Embedder = _build(builders, cfg.embed_backend, cfg)
    return built


@cache
def _cached_model_client(service: str, timeout: float, attempts: int) -> Any:
    import boto3

    from chatmemory.adapters.retry import model_client_config

    return boto3.client(service, config=model_client_config(timeout, attempts))


def model_client(service: str, cfg: Settings) -> Any:
    """A model runtime client whose timeout and retries stay under API Gateway's 29 s, and
    within the deadline of the request being served (adapters/retry.DeadlineClients)."""
    from chatmemory.adapters.retry import DeadlineClients

    return DeadlineClients(
        lambda timeout, attempts: _cached_model_client(service, timeout, attempts),
        cfg.model_timeout_seconds,
        cfg.model_max_attempts,
    )


def chat_policy(cfg: Settings | None = None) -> ChatPolicy:
    from chatmemory import plugins
    from chatmemory.services.conversation.chat import ChatPolicy
    from chatmemory.services.conversation.handoff import HandoffPolicy
    from chatmemory.services.conversation.stacking import StackPolicy
    from chatmemory.services.longterm.auto_recall import AUTO_RECALL_WEIGHTS, AutoRecallPolicy
    from chatmemory.services.longterm.scoring import RecallWeights
    from chatmemory.services.profile.block import ProfileBlockPolicy

    cfg = cfg or settings()
    return ChatPolicy(
        window_turns=cfg.window_turns,
        max_window_turns=cfg.max_window_turns,
        prompt_token_budget=cfg.prompt_token_budget,
        max_new_tokens=cfg.max_new_tokens,
        max_input_chars=cfg.max_input_chars,
        roles=Roles(cfg.user_role, cfg.assistant_role),
        system_prompt=cfg.system_prompt,
        input_transforms=plugins.input_transforms(cfg.input_transforms),
        output_transforms=plugins.output_transforms(cfg.output_transforms),
        use_classifier=cfg.intent_classifier,
        store_prompt=cfg.store_prompt,
        keep_message_ids=cfg.keep_message_ids,
        turn_ttl_days=cfg.turn_ttl_days,
        recall_weights=RecallWeights.parse(cfg.recall_weights, cfg.recency_half_life_days),
        auto_recall=AutoRecallPolicy(
            enabled=cfg.auto_recall,
            token_budget=cfg.memory_token_budget,
            weights=AUTO_RECALL_WEIGHTS._replace(half_life_days=cfg.recency_half_life_days),
        ),
        profile=ProfileBlockPolicy(token_budget=cfg.profile_token_budget),
        rewrite_follow_ups=cfg.text_backend != TextBackend.OFFLINE,
        stack=StackPolicy(enabled=cfg.stack_messages, wait_seconds=cfg.stack_wait_ms / 1000),
        handoff=HandoffPolicy(
            on_nothing_verified=cfg.handoff_on_nothing_verified,
            negative_turns=cfg.handoff_negative_turns,
            negative_score=cfg.handoff_negative_score,
        ),
    )


def long_term_index(cfg: Settings | None = None) -> LongTermIndex | None:
    """The configured long-term index, or None when long-term memory is off."""
    cfg = cfg or settings()
    if cfg.long_term_backend == LongTermBackend.NONE:
        return None
    index: LongTermIndex = _build(LONG_TERM_INDEXES, cfg.long_term_backend, cfg)
    return index


def summarizer(cfg: Settings | None = None) -> Any:
    """Offline: extractive. Otherwise the text model, in chunks that fit its context."""
    cfg = cfg or settings()
    if cfg.text_backend == TextBackend.OFFLINE:
        from chatmemory.adapters.offline.summarizer import ExtractiveSummarizer

        return ExtractiveSummarizer()
    from chatmemory.services.longterm.summarize import ModelSummarizer

    return ModelSummarizer(text_generator(cfg))


def sentiment_analyzers(
    cfg: Settings, generator: TextGenerator
) -> tuple[SentimentAnalyzer | None, SentimentAnalyzer | None]:
    """The analyzer of chat turns and the one of stored turns (POST /turns makes no model
    call, so it is VADER there with SENTIMENT=model too): VADER unless SENTIMENT=model. VADER
    loads on first use."""
    if cfg.sentiment == SentimentMode.OFF:
        return None, None
    from chatmemory.adapters.offline.sentiment import VaderSentimentAnalyzer

    vader = VaderSentimentAnalyzer()
    # Only when asked for: a second model call on every chat turn doubles the text model's
    # requests (its quota, its bill) and waits before the answer.
    if cfg.sentiment == SentimentMode.MODEL:
        from chatmemory.services.conversation.sentiment import ModelSentimentAnalyzer

        return ModelSentimentAnalyzer(generator, fallback=vader), vader
    return vader, vader


@lru_cache(maxsize=1)
def chat_deps() -> ChatDeps:
    """What the chat Lambda needs. Adapters are cheap to build; models load on first use."""
    from chatmemory.services.conversation.chat import ChatDeps

    cfg = settings()
    index = long_term_index(cfg)
    generator = text_generator(cfg)
    chat_sentiment, stored_sentiment = sentiment_analyzers(cfg, generator)
    return ChatDeps(
        memory=short_term_memory(cfg),
        generator=generator,
        embedder=embedder(cfg) if index is not None else None,
        long_term=index,
        sentiment=chat_sentiment,
        stored_sentiment=stored_sentiment,
        events=event_publisher(cfg),
        vector_cache=vector_cache(cfg) if index is not None else None,
    )


def event_publisher(cfg: Settings | None = None) -> EventPublisher | None:
    """Hand-off events: to the EventBridge bus of EVENT_BUS_NAME, else (local mode) appended to
    EVENTS_FILE, else nowhere."""
    cfg = cfg or settings()
    if cfg.event_bus_name:
        from chatmemory.adapters.eventbridge import EventBridgePublisher

        return EventBridgePublisher(_ClientOnFirstUse("events"), cfg.event_bus_name)
    if cfg.events_file:
        from chatmemory.adapters.events_file import JsonLinesEventPublisher

        return JsonLinesEventPublisher(cfg.events_file)
    return None


def extractor(cfg: Settings | None = None) -> Extractor:
    """Offline: first-person statements by pattern, judged again by meaning where the embedder
    has fitted weights (services/profile/lasting.py). Otherwise the text model, bounded."""
    from chatmemory.services.profile.extract import ModelExtractor, PatternExtractor
    from chatmemory.services.profile.lasting import judge_for

    cfg = cfg or settings()
    if cfg.text_backend == TextBackend.OFFLINE:
        return PatternExtractor(judge=judge_for(embedder(cfg)))
    return ModelExtractor(text_generator(cfg))


@dataclass
class ConsolidationDeps:
    memory: ShortTermMemory
    summarizer: Summarizer
    embedder: Embedder
    index: LongTermIndex
    policy: ConsolidationPolicy
    extractor: Extractor | None = None

    def consolidate(self, session_id: str, *, now: datetime, **run: Any) -> ConsolidationResult:
        """consolidate_session with these models and stores (`run`: owner, num_turns,
        time_left)."""
        from chatmemory.services.background.consolidation import consolidate_session

        return consolidate_session(
            session_id,
            memory=self.memory,
            summarizer=self.summarizer,
            embedder=self.embedder,
            index=self.index,
            policy=self.policy,
            now=now,
            extractor=self.extractor,
            **run,
        )

    def redrive(self, now: datetime) -> dict[str, str]:
        """Consolidate each FAILED session again with a fresh attempt budget (redrive_failed)."""
        from chatmemory.services.background.consolidation import redrive_failed

        return redrive_failed(self.memory, lambda session_id: self.consolidate(session_id, now=now))


@lru_cache(maxsize=1)
def consolidation_deps() -> ConsolidationDeps:
    cfg = settings()
    index = long_term_index(cfg)
    if index is None:
        raise ConfigurationError(
            "consolidation needs LONG_TERM_BACKEND=embedded, opensearch or s3vectors"
        )
    from chatmemory.services.background.consolidation import ConsolidationPolicy

    return ConsolidationDeps(
        memory=short_term_memory(cfg),
        summarizer=summarizer(cfg),
        embedder=embedder(cfg),
        index=index,
        policy=ConsolidationPolicy(roles=Roles(cfg.user_role, cfg.assistant_role)),
        extractor=extractor(cfg),
    )


@dataclass
class CompactionDeps:
    memory: ShortTermMemory
    summarizer: Any
    policy: CompactionPolicy


@lru_cache(maxsize=1)
def compaction_deps() -> CompactionDeps:
    from chatmemory.services.background.maintenance import CompactionPolicy

    cfg = settings()
    return CompactionDeps(
        memory=short_term_memory(cfg),
        summarizer=summarizer(cfg),
        policy=CompactionPolicy(
            compact_after_turns=cfg.compact_after_turns,
            keep_recent_turns=cfg.window_turns,
            roles=Roles(cfg.user_role, cfg.assistant_role),
        ),
    )


@lru_cache(maxsize=1)
def purge_deps() -> Purging:
    from chatmemory.services.background.forget import PurgePolicy, Purging

    cfg = settings()
    return Purging(
        memory=short_term_memory(cfg),
        index=long_term_index(cfg),
        policy=PurgePolicy(settle_seconds=cfg.purge_settle_seconds),
        checkpoints=checkpoint_store(cfg),
        embedder=partial(embedder, cfg),
    )


_CACHED = (
    settings,
    aws_client,
    _cached_model_client,
    chat_deps,
    consolidation_deps,
    compaction_deps,
    purge_deps,
)


def clear_caches() -> None:
    """Forget every cached client and setting (tests, and local mode after a config change)."""
    for cached in _CACHED:
        cached.cache_clear()
