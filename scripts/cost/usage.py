"""What one chat turn, one session and one user use: measured where bench/RESULTS.md measured it,
otherwise an assumption stated here (and printed in the cost section of docs/cost.md)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields

from chatmemory import schema
from chatmemory.services.longterm.summarize import ModelSummarizer
from chatmemory.services.profile.extract import ModelExtractor


def _default(callable_: object, parameter: str) -> int:
    """A keyword default of the runtime's code, so the estimate follows the code."""
    value = inspect.signature(callable_).parameters[parameter].default  # type: ignore[arg-type]
    assert isinstance(value, int)
    return value


MEASURED = "measured"
ASSUMED = "assumed"
FROM_CODE = "from the code"


@dataclass(frozen=True)
class Usage:
    """Quantities per turn, per session and per user. Prompt and answer lengths, the compaction
    interval and the function sizes come from each template instead (the chat function's
    environment and memory)."""

    # Traffic.
    turns_per_session: int = 20
    turns_per_user_month: int = 20
    user_counts: tuple[int, ...] = (10, 1_000, 100_000)
    months_of_history: int = 12

    # A turn, as bench.turns sends it.
    words_per_message: int = 60
    words_per_answer: int = 80
    tokens_per_word: float = 4 / 3
    chat_dynamodb_read_units: float = 3.0
    # Stacked messages (the default): the message is written, then its answer (bench.turns:
    # 12.2 at turn 100; 8.2 with STACK_MESSAGES=false).
    chat_dynamodb_write_units: float = 12.2
    live_check_read_units: float = 5.0
    chat_lambda_seconds: float = 2.0
    searches_per_turn: int = 1
    traces_per_turn: int = 1
    log_bytes_per_turn: int = 2_000
    turn_item_bytes: int = 1_000

    # Consolidation and compaction (off the request path).
    model_reads_per_turn: int = 3
    summary_output_tokens: int = _default(ModelSummarizer, "max_new_tokens")
    extraction_calls_per_session: int = 8
    extraction_output_tokens: int = _default(ModelExtractor, "max_new_tokens")
    records_per_session: float = 10.8
    consolidation_lambda_seconds: float = 10.0
    compaction_lambda_seconds: float = 3.0
    consolidation_read_units: float = 25.0
    consolidation_write_units: float = 30.0
    embedding_request_seconds: float = 0.1

    # Long-term index.
    reference_index_vectors: int = 100_000
    vector_metadata_bytes: int = 200
    vector_key_bytes: int = 40
    vector_text_bytes: int = 2_000

    # The idle sweeper.
    sweeper_lambda_seconds: float = 0.5
    sweeper_queries: int = schema.OPEN_SHARDS * 3
    sweeper_log_bytes: int = 1_000

    # The default model mode's endpoints, which the stack references but does not create.
    external_endpoint_instance_type: str = "ml.g5.2xlarge"

    @property
    def tokens_per_message(self) -> float:
        return self.words_per_message * self.tokens_per_word

    @property
    def tokens_per_turn(self) -> float:
        return (self.words_per_message + self.words_per_answer) * self.tokens_per_word

    @property
    def windows_per_session(self) -> float:
        """Consolidation embeds one window per two turns (bench/RESULTS.md)."""
        return self.turns_per_session / 2

    @property
    def vectors_per_session(self) -> float:
        """Windows, one session summary and the profile's records."""
        return self.windows_per_session + 1 + self.records_per_session

    def index_vectors(self, users: int) -> int:
        """Vectors in the memory index after `months_of_history` months of `users` users."""
        sessions = users * self.turns_per_user_month / self.turns_per_session
        return round(sessions * self.vectors_per_session * self.months_of_history)


# Where each number comes from: (kind, why). Kinds: measured (bench/RESULTS.md), from the code,
# or assumed (no measurement exists; change it here).
BASIS: dict[str, tuple[str, str]] = {
    "turns_per_session": (
        ASSUMED,
        "turns in a session; its consolidation is amortized over them",
    ),
    "turns_per_user_month": (
        ASSUMED,
        "messages a user sends a month; every user counts as a monthly active user",
    ),
    "months_of_history": (
        ASSUMED,
        "months of stored turns and vectors, never expired (turnTtlDays=0)",
    ),
    "words_per_message": (
        MEASURED,
        "bench.turns' realistic turns: a 60-word message (319 bytes)",
    ),
    "words_per_answer": (
        MEASURED,
        "and an 80-word answer (421 bytes)",
    ),
    "tokens_per_word": (
        ASSUMED,
        "4 tokens for 3 English words",
    ),
    "chat_dynamodb_read_units": (
        MEASURED,
        "3 read units per turn at turn 100 and 1,000 (bench.turns)",
    ),
    "chat_dynamodb_write_units": (
        MEASURED,
        "write units per turn at turn 100 and 1,000 with stacked messages, the default "
        "(bench.turns; 8.2 with STACK_MESSAGES=false)",
    ),
    "live_check_read_units": (
        ASSUMED,
        "auto-recall's live check (a BatchGetItem when something was found, bench.turns), "
        "counted on every turn as that many strongly consistent items of at most 4 KB",
    ),
    "chat_lambda_seconds": (
        ASSUMED,
        "billed duration of a turn with a remote model: the model's answer dominates (the "
        "handler's own time on local mode, p50 17-54 ms in bench.turns, excludes it)",
    ),
    "searches_per_turn": (
        MEASURED,
        "auto-recall: one embedding and one search per turn (bench.turns)",
    ),
    "traces_per_turn": (
        FROM_CODE,
        "active tracing; X-Ray's default rule records one request a second and 5% beyond, so "
        "every turn at these rates",
    ),
    "log_bytes_per_turn": (
        ASSUMED,
        "the chat function's JSON log lines, Lambda's platform lines and the API access log line",
    ),
    "turn_item_bytes": (
        ASSUMED,
        "a stored turn: the 740 bytes of text plus keys and attributes",
    ),
    "model_reads_per_turn": (
        FROM_CODE,
        "the text model reads each turn at most three times after the turn: compaction "
        "(services/background/maintenance.py), the session summary and the profile's extraction",
    ),
    "summary_output_tokens": (
        FROM_CODE,
        "ModelSummarizer's max_new_tokens, once per compaction and once per session summary",
    ),
    "extraction_calls_per_session": (
        MEASURED,
        "at most 8 extraction calls per session at any length (bench.consolidation)",
    ),
    "extraction_output_tokens": (
        FROM_CODE,
        "ModelExtractor's max_new_tokens per extraction call",
    ),
    "records_per_session": (
        MEASURED,
        "10.8 profile records per session (bench.facts, LoCoMo dev)",
    ),
    "consolidation_lambda_seconds": (
        ASSUMED,
        "per session: 2.3 s measured with a 0.5 s simulated model (bench.consolidation), about "
        "4 rounds of 2 s calls with a real one",
    ),
    "compaction_lambda_seconds": (
        ASSUMED,
        "one summary call per compaction",
    ),
    "consolidation_read_units": (
        ASSUMED,
        "not measured: reading the session's turns and its records",
    ),
    "consolidation_write_units": (
        ASSUMED,
        "not measured: a write per record and per status change, doubled for transactions",
    ),
    "embedding_request_seconds": (
        ASSUMED,
        "compute time of one request to a serverless embedding endpoint (deploy mode)",
    ),
    "reference_index_vectors": (
        ASSUMED,
        "size of the memory index for the per-turn figure; S3 Vectors bills each query for the "
        "whole index",
    ),
    "vector_metadata_bytes": (
        ASSUMED,
        "filterable metadata of a vector (user, kind, session); a query is taken to be billed "
        "for the vector, its filterable metadata and its key, not its other metadata",
    ),
    "vector_key_bytes": (
        ASSUMED,
        "a vector's key",
    ),
    "vector_text_bytes": (
        ASSUMED,
        "non-filterable metadata stored with a vector: a two-turn window's text (2 x 740 "
        "bytes, bench.turns) and the entry's ids and dates (adapters/s3vectors.py)",
    ),
    "sweeper_lambda_seconds": (
        ASSUMED,
        "billed duration of one idle sweep",
    ),
    "sweeper_queries": (
        FROM_CODE,
        "schema.OPEN_SHARDS shards x 3 states (open, importing, deleting) per sweep, each an "
        "empty query of 0.5 read units when idle",
    ),
    "sweeper_log_bytes": (
        ASSUMED,
        "log lines of one sweep",
    ),
    "external_endpoint_instance_type": (
        ASSUMED,
        "JumpStart's default instance for FLAN-T5 XL and GPT-J 6B, each endpoint always on",
    ),
}


def described(usage: Usage) -> list[tuple[str, object, str, str]]:
    """(name, value, kind, why) of every assumption, for the report."""
    rows = []
    for spec in fields(usage):
        if spec.name == "user_counts":
            continue
        kind, why = BASIS[spec.name]
        rows.append((spec.name, getattr(usage, spec.name), kind, why))
    return rows
