"""Typed runtime settings, read once from environment variables named in schema.py and validated.

Local mode changes the endpoint URL, the model backends and the long-term backend; everything
else has the same defaults in AWS, locally and in tests. A value that does not parse (a number
that is not one, a backend that does not exist) is a ConfigurationError naming the variable:
the deployment is wrong, not the request, so handlers answer it with 500 and log it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from chatmemory import schema as s
from chatmemory.errors import ConfigurationError
from chatmemory.schema import (
    EmbedBackend,
    EmbedFormat,
    LongTermBackend,
    SentimentMode,
    TextBackend,
    TextFormat,
)


def _origins(raw: Any) -> Any:
    """CORS_ALLOW_ORIGINS is comma-separated."""
    if isinstance(raw, str):
        return tuple(origin.strip() for origin in raw.split(",") if origin.strip())
    return raw


def _flag(raw: Any) -> Any:
    """Booleans as people write them in environment variables."""
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
    return raw


Flag = Annotated[bool, BeforeValidator(_flag)]
Positive = Annotated[int, Field(ge=1)]
# "vector,lexical,recency,time": up to four numbers.
_WEIGHTS = re.compile(r"^\s*-?\d+(\.\d+)?(\s*,\s*-?\d+(\.\d+)?){0,3}\s*$")


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # Every field's description is the documentation of its environment variable (the docs'
    # configuration page is generated from them: docs/gen_pages.py).
    sessions_table: str = Field("sessions", description="The sessions table's name.")
    conversations_table: str = Field(
        "conversations", description="The conversations (turns) table's name."
    )
    users_table: str = Field("users", description="The users table's name.")
    records_table: str = Field("records", description="The profile records table's name.")
    checkpoints_table: str = Field(
        "checkpoints", description="The LangGraph checkpoints table's name."
    )
    dynamodb_endpoint: str | None = Field(
        None, description="A DynamoDB endpoint URL: DynamoDB Local in local mode; unset in AWS."
    )
    text_backend: TextBackend = Field(
        TextBackend.OFFLINE,
        description=(
            "The text model: `sagemaker`, `bedrock`, `openai` (any OpenAI-compatible server) "
            "or `offline` (a plainly labelled responder that calls no model)."
        ),
    )
    embed_backend: EmbedBackend = Field(
        EmbedBackend.OFFLINE,
        description=(
            "The embedding model: `sagemaker`, `bedrock`, `openai` or `offline` "
            "(all-MiniLM-L6-v2 in process)."
        ),
    )
    text_endpoint: str = Field("", description="The SageMaker text endpoint's name.")
    text_format: TextFormat = Field(
        TextFormat.JUMPSTART_FLAN_T5,
        description="The text endpoint's payload format: `jumpstart-flan-t5` or `tgi`.",
    )
    embed_endpoint: str = Field("", description="The SageMaker embedding endpoint's name.")
    embed_format: EmbedFormat = Field(
        EmbedFormat.JUMPSTART_GPT_J,
        description="The embedding endpoint's payload format: `jumpstart-gpt-j` or `tei`.",
    )
    embed_dimension: Positive = Field(
        384, description="The embedding's size; the long-term indexes are made for it."
    )
    text_model_id: str = Field(
        "",
        description=(
            "The Bedrock or OpenAI-compatible text model (a Bedrock inference profile id "
            "such as `eu.amazon.nova-micro-v1:0` works)."
        ),
    )
    embed_model_id: str = Field(
        "",
        description=(
            "The Bedrock or OpenAI-compatible embedding model (Bedrock: "
            "`amazon.titan-embed-text-v2:0` when unset)."
        ),
    )
    openai_base_url: str = Field(
        "http://127.0.0.1:11434/v1",
        description="The OpenAI-compatible server (Ollama's address by default).",
    )
    openai_api_key: str = Field("", description="Its API key, when it needs one.")
    # API Gateway gives up after 29 s: a model call with its retries must finish well before.
    model_timeout_seconds: float = Field(
        20.0,
        gt=0,
        description=(
            "How long one model call may take (a request's deadline may give it less: "
            "chatmemory/deadline.py)."
        ),
    )
    model_max_attempts: Positive = Field(
        3, description="Tries of a model call that is throttled or fails on the server's side."
    )
    window_turns: int = Field(
        6,
        ge=0,
        description="The recent turns in a chat prompt, unless a message asks for another number.",
    )
    max_window_turns: int = Field(
        50, ge=0, description="The most recent turns a message may ask for (`window_turns`)."
    )
    prompt_token_budget: Positive = Field(
        512, description="The prompt's size in tokens, clipped to fit (FLAN-T5 reads 512)."
    )
    max_new_tokens: Positive = Field(256, description="The longest answer, in tokens.")
    max_input_chars: int = Field(
        s.MAX_INPUT_CHARS_DEFAULT,
        ge=1,
        le=s.MAX_INPUT_CHARS_LIMIT,
        description=(
            "The longest message a chat turn takes, in characters (longer: 413); at most "
            f"{s.MAX_INPUT_CHARS_LIMIT:,}, so that a turn fits one DynamoDB item."
        ),
    )
    user_role: str = Field("User", description="The user's name in prompts.")
    assistant_role: str = Field("Assistant", description="The assistant's name in prompts.")
    system_prompt: str = Field(
        "You are a helpful assistant. Answer the user's last message using the conversation.",
        description="The instruction at the top of every chat prompt.",
    )
    intent_classifier: Flag = Field(
        False,
        description=(
            "Route messages without a command (`/past`, `/verified`) with a few-shot prompt "
            "to the text model."
        ),
    )
    store_prompt: Flag = Field(
        False, description="Keep each turn's rendered prompt with it (for debugging prompts)."
    )
    turn_ttl_days: int = Field(
        0, ge=0, description="Turns expire this many days after they were written (0: kept)."
    )
    # How many recent client_message_ids a session remembers for idempotent retries.
    keep_message_ids: Positive = Field(
        50,
        description=(
            "How many recent `client_message_id`s a session remembers, so that a retry is "
            "stored once."
        ),
    )
    long_term_backend: LongTermBackend = Field(
        LongTermBackend.NONE,
        description=(
            "Long-term memory: `embedded` (a SQLite file at `MEMORY_PATH`), `opensearch`, "
            "`s3vectors`, or `none` (`/past` and `/verified` then say it is not configured)."
        ),
    )
    memory_path: str = Field(
        ".local/memory.sqlite3", description="The embedded index's file (local mode)."
    )
    opensearch_endpoint: str = Field(
        "", description="The OpenSearch domain's or Serverless collection's endpoint."
    )
    opensearch_serverless: Flag = Field(
        False, description="Whether the endpoint is an OpenSearch Serverless collection."
    )
    # Amazon S3 Vectors: the vector bucket holding the long-term indexes (required with it).
    vector_bucket: str = Field(
        default="",
        validate_default=True,
        description="The S3 vector bucket of the long-term indexes (required with `s3vectors`).",
    )
    # "vector,lexical,recency,time" weights of /past ranking, and the recency half-life.
    recall_weights: str = Field(
        default="1.0,1.0,0.0,1.5",
        pattern=_WEIGHTS.pattern,
        description="The weights of `/past`'s ranking: meaning, words, recency, a named time.",
    )
    recency_half_life_days: float = Field(
        30.0, gt=0, description="How fast recency fades in `/past`'s ranking."
    )
    compact_after_turns: Positive = Field(
        12,
        description=(
            "A session's rolling summary is extended once this many turns are outside it and "
            "the window."
        ),
    )
    idle_minutes: Positive = Field(
        30, description="The sweeper ends sessions without a turn for this long."
    )
    # How long a purge waits after a forget before trusting the user index (its lag).
    purge_settle_seconds: float = Field(
        30.0,
        ge=0,
        description=(
            "How long the purge of a forget waits before it reads the user index; keep it "
            "longer than the chat function's timeout."
        ),
    )
    # Ordinary chat turns bring relevant long-term memory into the prompt (not only /past),
    # at most this many tokens of it.
    auto_recall: Flag = Field(
        True, description="Bring relevant long-term memory into ordinary chat turns."
    )
    memory_token_budget: int = Field(
        400,
        ge=0,
        description="Auto-recall's memory in a prompt, in tokens (at most half the context).",
    )
    # Origins a browser page may call the API from ("*": any); none by default.
    cors_origins: Annotated[tuple[str, ...], BeforeValidator(_origins)] = Field(
        (), description="Comma-separated origins a browser page may call the API from (`*`: any)."
    )
    # How a user turn's sentiment is found: VADER in process (also with a text model: a model
    # call per turn would add its latency and cost to every turn), the text model, or not.
    sentiment: SentimentMode = Field(
        SentimentMode.AUTO,
        description=(
            "The sentiment of user turns: `auto` (the text model when there is one, else "
            "VADER), `vader`, `model` or `off`."
        ),
    )
    # Messages sent before the bot answered are answered together
    # (services/conversation/stacking.py), after waiting this long for more (0: no wait; see the
    # README's "Stacked messages").
    stack_messages: Flag = Field(
        True, description="Answer messages sent before the bot answered together."
    )
    stack_wait_ms: int = Field(
        0,
        ge=0,
        le=10_000,
        description="How long a chat message waits for more before the model is called.",
    )
    # Hand-off to a person (services/conversation/handoff.py): where its events go (an EventBridge
    # bus, or in local mode a JSON-lines file; neither: none), who is an agent (members of the
    # Cognito group, or with auth=iam the sessions of the role), and the automatic rules (off unless
    # set): hand off when /verified finds nothing relevant, and after this many consecutive
    # user turns whose sentiment score is at most handoff_negative_score (0: never).
    event_bus_name: str = Field("", description="The EventBridge bus of hand-off events.")
    events_file: str = Field(
        "", description="Without a bus, a JSON-lines file of hand-off events (local mode)."
    )
    agent_group: str = Field(
        "agents", description="The Cognito group whose members may use the `/agent` routes."
    )
    agent_role_arn: str = Field(
        default="",
        pattern=r"^(arn:[\w-]+:iam::\d{12}:role/\S+)?$",
        description="With IAM auth, the role whose sessions are agents.",
    )
    handoff_on_nothing_verified: Flag = Field(
        False, description="Hand the session to a person when `/verified` finds nothing relevant."
    )
    handoff_negative_turns: int = Field(
        0,
        ge=0,
        le=50,
        description=(
            "Hand the session to a person after this many user turns in a row at or below "
            "`HANDOFF_NEGATIVE_SCORE` (0: never)."
        ),
    )
    handoff_negative_score: float = Field(
        -0.5, ge=-1, le=1, description="The sentiment score that counts as negative."
    )

    @field_validator("vector_bucket")
    @classmethod
    def _bucket_with_s3vectors(cls, value: str, info: ValidationInfo) -> str:
        backend = info.data.get("long_term_backend")
        if backend == LongTermBackend.S3VECTORS and not value.strip():
            raise ValueError(f"required when {s.ENV_LONG_TERM_BACKEND}={backend.value}")
        return value.strip()

    @field_validator("sentiment")
    @classmethod
    def _model_sentiment_needs_a_model(
        cls, value: SentimentMode, info: ValidationInfo
    ) -> SentimentMode:
        if value == SentimentMode.MODEL and info.data.get("text_backend") == TextBackend.OFFLINE:
            raise ValueError(
                f"needs a text model ({s.ENV_TEXT_BACKEND} other than {TextBackend.OFFLINE.value})"
            )
        return value

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from the variables of ENV (unset or empty: the default)."""
        env = os.environ if env is None else env
        raw = {field: env[name] for field, name in ENV.items() if env.get(name, "") != ""}
        try:
            return cls.model_validate(raw)
        except ValidationError as error:
            problems = "; ".join(
                f"{ENV[str(e['loc'][0])]}={raw.get(str(e['loc'][0]))!r}: {e['msg']}"
                for e in error.errors()
            )
            raise ConfigurationError(f"invalid settings: {problems}") from None


# The environment variable of every setting (names from schema.py, the one source).
ENV: dict[str, str] = {
    "sessions_table": s.ENV_SESSIONS_TABLE,
    "conversations_table": s.ENV_CONVERSATIONS_TABLE,
    "users_table": s.ENV_USERS_TABLE,
    "records_table": s.ENV_RECORDS_TABLE,
    "checkpoints_table": s.ENV_CHECKPOINTS_TABLE,
    "auto_recall": s.ENV_AUTO_RECALL,
    "memory_token_budget": s.ENV_MEMORY_TOKEN_BUDGET,
    "dynamodb_endpoint": s.ENV_DYNAMODB_ENDPOINT,
    "text_backend": s.ENV_TEXT_BACKEND,
    "embed_backend": s.ENV_EMBED_BACKEND,
    "text_endpoint": s.ENV_TEXT_ENDPOINT,
    "text_format": s.ENV_TEXT_FORMAT,
    "embed_endpoint": s.ENV_EMBED_ENDPOINT,
    "embed_format": s.ENV_EMBED_FORMAT,
    "embed_dimension": s.ENV_EMBED_DIMENSION,
    "text_model_id": s.ENV_TEXT_MODEL_ID,
    "embed_model_id": s.ENV_EMBED_MODEL_ID,
    "openai_base_url": s.ENV_OPENAI_BASE_URL,
    "openai_api_key": s.ENV_OPENAI_API_KEY,
    "model_timeout_seconds": s.ENV_MODEL_TIMEOUT,
    "model_max_attempts": s.ENV_MODEL_MAX_ATTEMPTS,
    "window_turns": s.ENV_WINDOW_TURNS,
    "max_window_turns": s.ENV_MAX_WINDOW_TURNS,
    "prompt_token_budget": s.ENV_PROMPT_TOKEN_BUDGET,
    "max_new_tokens": s.ENV_MAX_NEW_TOKENS,
    "max_input_chars": s.ENV_MAX_INPUT_CHARS,
    "user_role": s.ENV_USER_ROLE,
    "assistant_role": s.ENV_ASSISTANT_ROLE,
    "system_prompt": s.ENV_SYSTEM_PROMPT,
    "intent_classifier": s.ENV_INTENT_CLASSIFIER,
    "store_prompt": s.ENV_STORE_PROMPT,
    "turn_ttl_days": s.ENV_TURN_TTL_DAYS,
    "keep_message_ids": s.ENV_KEEP_MESSAGE_IDS,
    "long_term_backend": s.ENV_LONG_TERM_BACKEND,
    "memory_path": s.ENV_MEMORY_PATH,
    "opensearch_endpoint": s.ENV_OPENSEARCH_ENDPOINT,
    "opensearch_serverless": s.ENV_OPENSEARCH_SERVERLESS,
    "vector_bucket": s.ENV_VECTOR_BUCKET,
    "recall_weights": s.ENV_RECALL_WEIGHTS,
    "recency_half_life_days": s.ENV_RECENCY_HALF_LIFE_DAYS,
    "compact_after_turns": s.ENV_COMPACT_AFTER_TURNS,
    "idle_minutes": s.ENV_IDLE_MINUTES,
    "purge_settle_seconds": s.ENV_PURGE_SETTLE_SECONDS,
    "cors_origins": s.ENV_CORS_ORIGINS,
    "sentiment": s.ENV_SENTIMENT,
    "stack_messages": s.ENV_STACK_MESSAGES,
    "stack_wait_ms": s.ENV_STACK_WAIT_MS,
    "event_bus_name": s.ENV_EVENT_BUS,
    "events_file": s.ENV_EVENTS_FILE,
    "agent_group": s.ENV_AGENT_GROUP,
    "agent_role_arn": s.ENV_AGENT_ROLE_ARN,
    "handoff_on_nothing_verified": s.ENV_HANDOFF_ON_NOTHING_VERIFIED,
    "handoff_negative_turns": s.ENV_HANDOFF_NEGATIVE_TURNS,
    "handoff_negative_score": s.ENV_HANDOFF_NEGATIVE_SCORE,
}
