"""What one chat turn, one session and one user use: measured where the AWS contract scenario
(scripts/capacity/measured.json: the DynamoDB units and the entries a session really takes) or
bench/RESULTS.md measured it, otherwise an assumption stated here (and printed in the cost
section of docs/cost.md)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from chatmemory import schema
from chatmemory.services.longterm.summarize import ModelSummarizer
from chatmemory.services.profile.extract import ModelExtractor
from scripts.capacity.model import READS, WRITES, Measured, vectors_per_session
from stacks.sizing import Load

_LOAD = Load()
# The serverless profile's measured session (the DynamoDB work is the same in every profile).
_MEASURED = Measured.load("serverless")


def _measured_units(parts: tuple[str, ...], operations: set[str], *, per_turn: bool) -> float:
    """DynamoDB units of the measured session's `parts`, per turn or per session."""
    total = sum(
        max(float(r["units"]), float(r["items"])) if r["operation"] in READS else float(r["units"])
        for r in _MEASURED.rows(*parts)
        if r["service"] == "dynamodb" and r["operation"] in operations
    )
    return round(total / (float(_MEASURED.parts["turns"]) if per_turn else 1.0), 2)


MEASURED = "measured"
ASSUMED = "assumed"
FROM_CODE = "from the code"


@dataclass(frozen=True)
class Usage:
    """Quantities per turn, per session and per user. Prompt and answer lengths, the compaction
    interval and the function sizes come from each template instead (the chat function's
    environment and memory)."""

    # Traffic: daily users, each sending turns_per_user_day (stacks/sizing.Load), and the
    # users with memories for each daily user (Cognito's monthly active users).
    turns_per_session: int = int(_LOAD.turns_per_session)
    turns_per_user_day: float = _LOAD.turns_per_user_day
    days_per_month: float = 30.4
    users_per_daily_user: float = _LOAD.users_per_daily_user
    user_counts: tuple[int, ...] = (10_000, 1_000_000, 10_000_000)
    months_of_history: int = 12

    # A turn, as bench.turns sends it.
    words_per_message: int = 60
    words_per_answer: int = 80
    tokens_per_word: float = 4 / 3
    # A turn's own, and its session's creation over its turns (measured).
    chat_dynamodb_read_units: float = _measured_units(
        ("session", "turns_requests"), READS, per_turn=True
    )
    chat_dynamodb_write_units: float = _measured_units(
        ("session", "turns_requests"), WRITES, per_turn=True
    )
    chat_lambda_seconds: float = 2.0
    searches_per_turn: int = 1
    traces_per_turn: int = 1
    log_bytes_per_turn: int = 2_000
    turn_item_bytes: int = 1_000

    # Consolidation and compaction (off the request path).
    model_reads_per_turn: int = 3
    summary_output_tokens: int = ModelSummarizer.default_max_new_tokens
    # Text calls of a consolidation but its summary's (measured: extraction's).
    extraction_calls_per_session: int = max(
        1,
        round(
            _MEASURED.per_session(
                lambda r: r["function"] == "consolidate" and r["operation"] == "Converse"
            )
        )
        - 1,
    )
    extraction_output_tokens: int = ModelExtractor.default_max_new_tokens
    entries_per_session: float = vectors_per_session(_MEASURED)
    consolidation_lambda_seconds: float = 10.0
    compaction_lambda_seconds: float = 3.0
    # A session's end, consolidation and the streams' work for its turns (measured).
    consolidation_read_units: float = _measured_units(
        ("turns_streams", "consolidation"), READS, per_turn=False
    )
    consolidation_write_units: float = _measured_units(
        ("turns_streams", "consolidation"), WRITES, per_turn=False
    )
    embedding_request_seconds: float = 0.1

    # Long-term index.
    vector_metadata_bytes: int = 200
    vector_key_bytes: int = 40
    vector_text_bytes: int = 2_000

    # The idle sweeper.
    sweeper_lambda_seconds: float = 0.5
    sweeper_queries: int = schema.OPEN_SHARDS * 5
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
    def turns_per_user_month(self) -> float:
        """Turns a daily user sends in a month."""
        return self.turns_per_user_day * self.days_per_month

    @property
    def vectors_per_session(self) -> float:
        """Long-term entries a session leaves (measured: its windows, summary, opening and
        the records drawn from it)."""
        return self.entries_per_session

    @property
    def user_index_vectors(self) -> int:
        """Entries in one user's own index after `months_of_history` months: what a query of
        it reads (S3 Vectors bills a query for the data of the index it searches)."""
        sessions = self.turns_per_user_month / self.users_per_daily_user / self.turns_per_session
        return round(sessions * self.vectors_per_session * self.months_of_history)

    def index_vectors(self, users: int) -> int:
        """Entries stored for `users` daily users after `months_of_history` months."""
        sessions = users * self.turns_per_user_month / self.turns_per_session
        return round(sessions * self.vectors_per_session * self.months_of_history)


# Where each number comes from: (kind, why). Kinds: measured (bench/RESULTS.md), from the code,
# or assumed (no measurement exists; change it here).
BASIS: dict[str, tuple[str, str]] = {
    "turns_per_session": (
        ASSUMED,
        "turns in a session (stacks/sizing.Load); its consolidation is amortized over them",
    ),
    "turns_per_user_day": (
        ASSUMED,
        "messages a daily user sends a day (stacks/sizing.Load)",
    ),
    "days_per_month": (ASSUMED, "days in the month priced"),
    "users_per_daily_user": (
        ASSUMED,
        "users with memories, and Cognito monthly active users, for each daily user",
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
        "read units a turn, its session's creation shared over its turns, auto-recall's live "
        "check included (the AWS contract scenario's measured session, scripts/capacity; an "
        "item not found counted as one read)",
    ),
    "chat_dynamodb_write_units": (
        MEASURED,
        "write units a turn with stacked messages, the default (the message written, then its "
        "answer), indexes included (the same measured session)",
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
        "text model calls of a 10-turn session's consolidation besides its summary (the "
        "measured session, with Nova Micro's context; at most 8 at any length: "
        "bench.consolidation)",
    ),
    "extraction_output_tokens": (
        FROM_CODE,
        "ModelExtractor's max_new_tokens per extraction call",
    ),
    "entries_per_session": (
        MEASURED,
        "long-term entries a 10-turn session leaves (windows, summary, opening, records: the "
        "measured session)",
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
        MEASURED,
        "read units of a session's end, its consolidation and the compaction checks of its "
        "turns (the measured session; a user with a profile of a few dozen records)",
    ),
    "consolidation_write_units": (
        MEASURED,
        "write units of the same, indexes included",
    ),
    "embedding_request_seconds": (
        ASSUMED,
        "compute time of one request to a serverless embedding endpoint (deploy mode)",
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
        "schema.OPEN_SHARDS shards x 4 states (open, ended, importing, deleting) and the oldest "
        "ended one per sweep, each an empty query of 0.5 read units when idle",
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
