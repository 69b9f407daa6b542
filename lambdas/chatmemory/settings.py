"""Typed runtime settings, read once from environment variables named in schema.py and validated.

Local mode changes the endpoint URL, the model backends and the long-term backend; everything
else has the same defaults in AWS, locally and in tests. A value that does not parse (a number
that is not one, a backend that does not exist) is a ConfigurationError naming the variable:
the deployment is wrong, not the request, so handlers answer it with 500 and log it.

Plain Python, not a pydantic model: every function reads its settings at cold start, and
building a pydantic model there took about a third of `import boto3` plus one client on top of
each stream handler's cold start (docs/measured/coldstart.md). A setting is declared once, with
its default, how its variable's text is read and what it means (the docs' configuration page
is generated from those: scripts/docs_pages.py).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any

from chatmemory import schema as s
from chatmemory.errors import ConfigurationError
from chatmemory.providers import EMBED_PROVIDERS, TEXT_PROVIDERS, described
from chatmemory.schema import (
    EmbedBackend,
    EmbedFormat,
    LongTermBackend,
    SentimentMode,
    TextBackend,
    TextFormat,
)

Parse = Callable[[Any], Any]


class Setting:
    """One setting: its default (used as it is), how a given value is read (a variable's text
    or a typed value; ValueError says what it should be) and its documentation."""

    __slots__ = ("default", "description", "parse")

    def __init__(self, default: Any, parse: Parse, description: str) -> None:
        self.default, self.parse, self.description = default, parse, description


def setting(default: Any, description: str, parse: Parse | None = None) -> Any:
    """A field of Settings (typed by its annotation; Any here so that the annotation stands)."""
    return Setting(default, parse or _text, description)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("should be text")
    return value


def _stripped(value: Any) -> str:
    return _text(value).strip()


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _matching(pattern: str, what: str) -> Parse:
    compiled = re.compile(pattern)

    def parse(value: Any) -> str:
        if compiled.fullmatch(_text(value)) is None:
            raise ValueError(f"should be {what}")
        return str(value)

    return parse


def choice(default: Enum, description: str) -> Any:
    """A field that is one of the values of its default's enum."""
    kind = type(default)

    def parse(value: Any) -> Any:
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(repr(member.value) for member in kind)
            raise ValueError(f"should be one of {allowed}") from None

    return setting(default, description, parse)


def _provider(registry: Mapping[str, Any], builtin: type[Enum]) -> Parse:
    """A name of the providers' registry (chatmemory/providers.py) as it is when read; a
    built-in provider as its enum member."""

    def parse(value: Any) -> Any:
        name = _text(value)
        if name not in registry:
            allowed = ", ".join(repr(str(known)) for known in registry)
            raise ValueError(f"should be one of {allowed}")
        try:
            return builtin(name)
        except ValueError:
            return name

    return parse


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _bounded(value: float, gt: float | None, ge: float | None, le: float | None) -> None:
    if gt is not None and not value > gt:
        raise ValueError(f"should be greater than {gt}")
    if ge is not None and not value >= ge:
        raise ValueError(f"should be at least {ge}")
    if le is not None and not value <= le:
        raise ValueError(f"should be at most {le}")


def integer(default: int, description: str, ge: int | None = None, le: int | None = None) -> Any:
    """A field that is a whole number, within bounds."""

    def parse(value: Any) -> int:
        if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("should be a whole number")
        _bounded(value, None, ge, le)
        return value

    return setting(default, description, parse)


def number(
    default: float,
    description: str,
    gt: float | None = None,
    ge: float | None = None,
    le: float | None = None,
) -> Any:
    """A field that is a finite number, within bounds."""

    def parse(value: Any) -> float:
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ValueError("should be a number") from None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ValueError("should be a finite number")
        _bounded(value, gt, ge, le)
        return float(value)

    return setting(default, description, parse)


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _flag(value: Any) -> bool:
    """Booleans as people write them in environment variables."""
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else None
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError("should be true or false (1 or 0, yes or no, on or off)")


def flag(default: bool, description: str) -> Any:
    """A field that is true or false, as people write it (_flag)."""
    return setting(default, description, _flag)


def _origins(value: Any) -> tuple[str, ...]:
    """CORS_ALLOW_ORIGINS is comma-separated."""
    if isinstance(value, str):
        return tuple(origin.strip() for origin in value.split(",") if origin.strip())
    if isinstance(value, tuple | list) and all(isinstance(origin, str) for origin in value):
        return tuple(value)
    raise ValueError("should be comma-separated origins")


def _role_arns(value: Any) -> tuple[str, ...]:
    """END_USER_ROLE_ARNS: IAM role ARNs, comma-separated."""
    if isinstance(value, str):
        value = [arn.strip() for arn in value.split(",") if arn.strip()]
    if not isinstance(value, tuple | list) or not all(
        isinstance(arn, str) and re.fullmatch(_ROLE_ARN, arn) and arn for arn in value
    ):
        raise ValueError("should be comma-separated IAM role ARNs")
    return tuple(value)


def _index_names(value: Any) -> tuple[str, ...]:
    """OPENSEARCH_PREVIOUS_MEMORY_INDEXES: index names, comma-separated."""
    if isinstance(value, str):
        value = [name.strip() for name in value.split(",") if name.strip()]
    if not isinstance(value, tuple | list) or not all(
        isinstance(name, str) and re.fullmatch(s.OPENSEARCH_INDEX_NAME, name) for name in value
    ):
        raise ValueError("should be comma-separated OpenSearch index names")
    return tuple(value)


# A module and an attribute of it: "package.module:Name" or "package.module.Name".
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?")


def _dotted_paths(value: Any) -> tuple[str, ...]:
    """INPUT_TRANSFORMS, OUTPUT_TRANSFORMS: import paths, comma-separated, in order."""
    if isinstance(value, str):
        value = [path.strip() for path in value.split(",") if path.strip()]
    if not isinstance(value, tuple | list) or not all(
        isinstance(path, str) and _DOTTED.fullmatch(path) for path in value
    ):
        raise ValueError("should be comma-separated import paths (package.module:Name)")
    return tuple(value)


# "vector,lexical,recency,time": up to four numbers.
_WEIGHTS = r"\s*-?\d+(\.\d+)?(\s*,\s*-?\d+(\.\d+)?){0,3}\s*"
_ROLE_ARN = r"(arn:[\w-]+:iam::\d{12}:role/\S+)?"


class Settings:
    """Every setting of the runtime, read once and not changed (hashable: caches key on it).

    Every field's description is the documentation of its environment variable (the docs'
    configuration page is generated from them: scripts/docs_pages.py)."""

    sessions_table: str = setting("sessions", "The sessions table's name.")
    conversations_table: str = setting("conversations", "The conversations (turns) table's name.")
    users_table: str = setting("users", "The users table's name.")
    records_table: str = setting("records", "The profile records table's name.")
    checkpoints_table: str = setting("checkpoints", "The LangGraph checkpoints table's name.")
    dynamodb_endpoint: str | None = setting(
        None, "A DynamoDB endpoint URL: DynamoDB Local in local mode; unset in AWS.", _optional_text
    )
    # A provider's name (chatmemory/providers.py): TextBackend's member for a built-in one.
    text_backend: str = setting(
        TextBackend.OFFLINE,
        f"The text model's provider: {described(TEXT_PROVIDERS)}.",
        _provider(TEXT_PROVIDERS, TextBackend),
    )
    embed_backend: str = setting(
        EmbedBackend.OFFLINE,
        f"The embedding model's provider: {described(EMBED_PROVIDERS)}.",
        _provider(EMBED_PROVIDERS, EmbedBackend),
    )
    text_endpoint: str = setting("", "The SageMaker text endpoint's name.")
    text_format: TextFormat = choice(
        TextFormat.JUMPSTART_FLAN_T5,
        "The text endpoint's payload format: `jumpstart-flan-t5` or `tgi`.",
    )
    embed_endpoint: str = setting("", "The SageMaker embedding endpoint's name.")
    embed_format: EmbedFormat = choice(
        EmbedFormat.JUMPSTART_GPT_J,
        "The embedding endpoint's payload format: `jumpstart-gpt-j` or `tei`.",
    )
    embed_dimension: int = integer(
        384, "The embedding's size; the long-term indexes are made for it.", ge=1
    )
    text_model_id: str = setting(
        "",
        "The Bedrock or OpenAI-compatible text model (a Bedrock inference profile id "
        "such as `eu.amazon.nova-micro-v1:0` works).",
    )
    embed_model_id: str = setting(
        "",
        "The Bedrock or OpenAI-compatible embedding model (Bedrock: "
        "`amazon.titan-embed-text-v2:0` when unset); offline: `all-MiniLM-L6-v2` (unset), "
        "`all-mpnet-base-v2` (with `EMBED_DIMENSION=768`) or `multilingual-e5-small`, each "
        "from its PyPI packages (docs/concepts/models.md).",
    )
    openai_base_url: str = setting(
        "http://127.0.0.1:11434/v1", "The OpenAI-compatible server (Ollama's address by default)."
    )
    openai_api_key: str = setting("", "Its API key, when it needs one.")
    # API Gateway gives up after 29 s: a model call with its retries must finish well before.
    model_timeout_seconds: float = number(
        20.0,
        "How long one model call may take (a request's deadline may give it less: "
        "chatmemory/deadline.py).",
        gt=0,
    )
    model_max_attempts: int = integer(
        3, "Tries of a model call that is throttled or fails on the server's side.", ge=1
    )
    window_turns: int = integer(
        6, "The recent turns in a chat prompt, unless a message asks for another number.", ge=0
    )
    max_window_turns: int = integer(
        50, "The most recent turns a message may ask for (`window_turns`).", ge=0
    )
    prompt_token_budget: int = integer(
        512, "The prompt's size in tokens, clipped to fit (FLAN-T5 reads 512).", ge=1
    )
    max_new_tokens: int = integer(256, "The longest answer, in tokens.", ge=1)
    max_input_chars: int = integer(
        s.MAX_INPUT_CHARS_DEFAULT,
        "The longest message a chat turn takes, in characters (longer: 413); at most "
        f"{s.MAX_INPUT_CHARS_LIMIT:,}, so that a turn fits one DynamoDB item.",
        ge=1,
        le=s.MAX_INPUT_CHARS_LIMIT,
    )
    user_role: str = setting("User", "The user's name in prompts.")
    assistant_role: str = setting("Assistant", "The assistant's name in prompts.")
    system_prompt: str = setting(
        "You are a helpful assistant. Answer the user's last message using the conversation.",
        "The instruction at the top of every chat prompt.",
    )
    input_transforms: tuple[str, ...] = setting(
        (),
        "Transforms of a chat message's text, applied in order when the message is taken (the "
        "text stored, recalled and put in the prompt is theirs): import paths, comma-separated "
        "(`package.module:Name`), each a function of the text that returns the text (a class is "
        "made once, with no arguments, and called). See [Streaming](../streaming.md#transforms).",
        _dotted_paths,
    )
    output_transforms: tuple[str, ...] = setting(
        ("chatmemory.services.prompt:ResponseFilter",),
        "Transforms of an answer's text as the model writes it, applied in order to each piece "
        "before it is streamed or stored: import paths, comma-separated, each called with the "
        "prompt's roles for every answer and returning a filter with `feed(text) -> text` (what "
        "may be shown so far; it may hold text back) and `finish() -> text` (what it held). "
        "The default drops an echoed `Assistant:` and stops at the first anti-prompt "
        "(`User:`), even one split across pieces; list it too to keep it. Whitespace at the "
        "answer's ends is trimmed after them.",
        _dotted_paths,
    )
    intent_classifier: bool = flag(
        False,
        "Route messages without a command (`/past`, `/verified`) with a few-shot prompt "
        "to the text model.",
    )
    store_prompt: bool = flag(
        False, "Keep each turn's rendered prompt with it (for debugging prompts)."
    )
    turn_ttl_days: int = integer(
        0, "Turns expire this many days after they were written (0: kept).", ge=0
    )
    # How many recent client_message_ids a session remembers for idempotent retries.
    keep_message_ids: int = integer(
        50,
        "How many recent `client_message_id`s a session remembers, so that a retry is stored once.",
        ge=1,
    )
    long_term_backend: LongTermBackend = choice(
        LongTermBackend.NONE,
        "Long-term memory: `embedded` (a SQLite file at `MEMORY_PATH`), `opensearch`, "
        "`s3vectors`, or `none` (`/past` and `/verified` then say it is not configured).",
    )
    memory_path: str = setting(".local/memory.sqlite3", "The embedded index's file (local mode).")
    opensearch_endpoint: str = setting(
        "", "The OpenSearch domain's or Serverless collection's endpoint."
    )
    opensearch_serverless: bool = flag(
        False, "Whether the endpoint is an OpenSearch Serverless collection."
    )
    opensearch_shards: int = integer(
        1,
        "Primary shards of a long-term index the index setup creates on a domain (memories are "
        "routed by user, so a search reads one shard); an existing index keeps its own.",
        ge=1,
        le=1024,
    )
    opensearch_memory_indexes: int = integer(
        1,
        "How many memory indexes a domain's owners are spread over (each owner's memories in "
        "one of them, by a digest of the owner key); 1: conversation-memories alone. It must "
        "not change once memories are written (docs/operations.md).",
        ge=1,
        le=64,
    )
    opensearch_memory_generation: int = integer(
        0,
        "Which generation of memory indexes a domain's runtime uses: 0, conversation-memories; "
        "n, conversation-memories-gn (a new index, made to change its shards or vectors' mode; "
        "docs/operations.md).",
        ge=0,
        le=999,
    )
    opensearch_previous_memory_indexes: tuple[str, ...] = setting(
        (),
        "The memory indexes of an earlier generation while they are migrated into the current "
        "one (comma-separated): the migration reads them, and deletions remove entries there "
        "too.",
        _index_names,
    )
    opensearch_on_disk: bool = flag(
        False,
        "Create the indexes' vectors in OpenSearch's on_disk mode (32x quantized in memory, "
        "rescored from disk; domains only); an existing index keeps its own.",
    )
    # Amazon S3 Vectors: the vector bucket holding the long-term indexes (required with it).
    vector_bucket: str = setting(
        "",
        "The S3 vector bucket of the long-term indexes (required with `s3vectors`).",
        _stripped,
    )
    vector_buckets: int = integer(
        1,
        "How many S3 vector buckets (named after `VECTOR_BUCKET_NAME`) the per-user memory "
        "indexes are spread over: a bucket holds at most 10,000 indexes. Changing it moves "
        "users to other buckets: migrate their indexes first (docs/operations.md).",
        ge=1,
        le=10_000,
    )
    vector_shared_index: bool = flag(
        False,
        "Whether the shared memory index of a deployment made before per-user indexes still "
        "exists in the vector bucket (deletions then remove entries there too).",
    )
    # "vector,lexical,recency,time" weights of /past ranking, and the recency half-life.
    recall_weights: str = setting(
        "1.0,1.0,0.0,1.5",
        "The weights of `/past`'s ranking: meaning, words, recency, a named time.",
        _matching(_WEIGHTS, "up to four comma-separated numbers"),
    )
    recency_half_life_days: float = number(
        30.0, "How fast recency fades in `/past`'s ranking.", gt=0
    )
    compact_after_turns: int = integer(
        12,
        "A session's rolling summary is extended once this many turns are outside it and "
        "the window.",
        ge=1,
    )
    idle_minutes: int = integer(30, "The sweeper ends sessions without a turn for this long.", ge=1)
    consolidation_retry_minutes: int = integer(
        360,
        "The sweeper starts again the consolidation of a session ended this long ago and not "
        "consolidated (its stream record expired or was lost), and again after as long.",
        ge=1,
    )
    consolidation_retries_per_sweep: int = integer(
        1000,
        "At most this many lost consolidations started again by one sweep (as many as "
        "consolidation can take in a sweep's interval).",
        ge=1,
    )
    # How long a purge waits after a forget before trusting the user index (its lag).
    purge_settle_seconds: float = number(
        30.0,
        "How long the purge of a forget waits before it reads the user index; keep it "
        "longer than the chat function's timeout.",
        ge=0,
    )
    # Ordinary chat turns bring relevant long-term memory into the prompt (not only /past),
    # at most this many tokens of it.
    auto_recall: bool = flag(True, "Bring relevant long-term memory into ordinary chat turns.")
    memory_token_budget: int = integer(
        400, "Auto-recall's memory in a prompt, in tokens (at most half the context).", ge=0
    )
    # The user's lasting facts and preferences in every chat prompt (services/profile/block.py).
    profile_token_budget: int = integer(
        1000,
        "The profile block every chat prompt holds (the user's lasting facts and preferences, "
        "health and safety first), in tokens (at most a quarter of the context; 0: none).",
        ge=0,
    )
    # Origins a browser page may call the API from ("*": any); none by default.
    cors_origins: tuple[str, ...] = setting(
        (), "Comma-separated origins a browser page may call the API from (`*`: any).", _origins
    )
    # How a user turn's sentiment is found: VADER in process (also with a text model: a model
    # call per turn would add its latency, its cost and a request against the model's quota
    # to every turn), the text model when asked for, or not.
    sentiment: SentimentMode = choice(
        SentimentMode.AUTO,
        "The sentiment of user turns: `auto` and `vader` (VADER, in process: no model call), "
        "`model` (one more text model call a turn) or `off`.",
    )
    # Messages sent before the bot answered are answered together
    # (services/conversation/stacking.py), after waiting this long for more (0: no wait; see the
    # README's "Stacked messages").
    stack_messages: bool = flag(True, "Answer messages sent before the bot answered together.")
    stack_wait_ms: int = integer(
        0, "How long a chat message waits for more before the model is called.", ge=0, le=10_000
    )
    # Hand-off to a person (services/conversation/handoff.py): where its events go (an EventBridge
    # bus, or in local mode a JSON-lines file; neither: none), who is an agent (members of the
    # Cognito group, or with auth=iam the sessions of the role), and the automatic rules (off unless
    # set): hand off when /verified finds nothing relevant, and after this many consecutive
    # user turns whose sentiment score is at most handoff_negative_score (0: never).
    event_bus_name: str = setting("", "The EventBridge bus of hand-off events.")
    events_file: str = setting(
        "", "Without a bus, a JSON-lines file of hand-off events (local mode)."
    )
    agent_group: str = setting(
        "agents", "The Cognito group whose members may use the `/agent` routes."
    )
    agent_role_arn: str = setting(
        "",
        "With IAM auth, the role whose sessions are agents.",
        _matching(_ROLE_ARN, "an IAM role's ARN"),
    )
    end_user_role_arns: tuple[str, ...] = setting(
        (),
        "With IAM auth, the roles whose sessions may name their end users in the "
        f"`{s.END_USER_HEADER}` header (each end user then a caller of their own).",
        _role_arns,
    )
    handoff_on_nothing_verified: bool = flag(
        False, "Hand the session to a person when `/verified` finds nothing relevant."
    )
    handoff_negative_turns: int = integer(
        0,
        "Hand the session to a person after this many user turns in a row at or below "
        "`HANDOFF_NEGATIVE_SCORE` (0: never).",
        ge=0,
        le=50,
    )
    handoff_negative_score: float = number(
        -0.5, "The sentiment score that counts as negative.", ge=-1, le=1
    )

    def __init__(self, **values: Any) -> None:
        """Settings of VALUES by field name (the others: their defaults); ConfigurationError
        names every value that does not parse."""
        self._fill(_validated(values, label=str))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from the variables of ENV (unset or empty: the default)."""
        env = os.environ if env is None else env
        raw = {field: env[name] for field, name in ENV.items() if env.get(name, "") != ""}
        settings = cls.__new__(cls)
        settings._fill(_validated(raw, label=ENV.__getitem__))
        return settings

    def _fill(self, values: Mapping[str, Any]) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @classmethod
    def fields(cls) -> dict[str, Setting]:
        """Every setting by field name, in the order declared."""
        return dict(_FIELDS)

    def replace(self, **changes: Any) -> Settings:
        """These settings with CHANGES (validated as the constructor validates)."""
        return Settings(**({name: getattr(self, name) for name in _FIELDS} | changes))

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("settings are read once and not changed: use replace()")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={'***' if name in _SECRET and value else value!r}"
            for name, value in zip(_FIELDS, self._values(), strict=True)
        )
        return f"Settings({shown})"


_FIELDS: dict[str, Setting] = {
    name: value for name, value in vars(Settings).items() if isinstance(value, Setting)
}
# Not repeated where settings are shown (an error's message, a log line).
_SECRET = frozenset({"openai_api_key"})


def _validated(raw: Mapping[str, Any], label: Callable[[str], str]) -> dict[str, Any]:
    """Every field's value: RAW's, parsed, or its default. ConfigurationError lists each value
    that does not parse, named by LABEL (the field, or its environment variable)."""
    unknown = set(raw) - set(_FIELDS)
    if unknown:
        raise ConfigurationError(f"invalid settings: unknown {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    problems: list[str] = []

    def check(name: str, parse: Parse, value: Any) -> None:
        try:
            values[name] = parse(value)
        except ValueError as error:
            shown = "***" if name in _SECRET else repr(raw.get(name, value))
            problems.append(f"{label(name)}={shown}: {error}")

    for name, spec in _FIELDS.items():
        if name in raw:
            check(name, spec.parse, raw[name])
        else:
            values[name] = spec.default
    # Settings that depend on others (each checked when both parsed).
    if values.get("long_term_backend") is LongTermBackend.S3VECTORS and "vector_bucket" in values:
        check("vector_bucket", _required_with_s3vectors, values["vector_bucket"])
    if values.get("text_backend") is TextBackend.OFFLINE and "sentiment" in values:
        check("sentiment", _sentiment_without_a_model, values["sentiment"])
    if problems:
        raise ConfigurationError(f"invalid settings: {'; '.join(problems)}")
    return values


def _required_with_s3vectors(bucket: str) -> str:
    if not bucket:
        raise ValueError(f"required when {s.ENV_LONG_TERM_BACKEND}={LongTermBackend.S3VECTORS}")
    return bucket


def _sentiment_without_a_model(mode: Any) -> Any:
    if mode is SentimentMode.MODEL:
        raise ValueError(
            f"needs a text model ({s.ENV_TEXT_BACKEND} other than {TextBackend.OFFLINE.value})"
        )
    return mode


# The environment variable of every setting (names from schema.py, the one source).
ENV: dict[str, str] = {
    "sessions_table": s.ENV_SESSIONS_TABLE,
    "conversations_table": s.ENV_CONVERSATIONS_TABLE,
    "users_table": s.ENV_USERS_TABLE,
    "records_table": s.ENV_RECORDS_TABLE,
    "checkpoints_table": s.ENV_CHECKPOINTS_TABLE,
    "auto_recall": s.ENV_AUTO_RECALL,
    "memory_token_budget": s.ENV_MEMORY_TOKEN_BUDGET,
    "profile_token_budget": s.ENV_PROFILE_TOKEN_BUDGET,
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
    "input_transforms": s.ENV_INPUT_TRANSFORMS,
    "output_transforms": s.ENV_OUTPUT_TRANSFORMS,
    "intent_classifier": s.ENV_INTENT_CLASSIFIER,
    "store_prompt": s.ENV_STORE_PROMPT,
    "turn_ttl_days": s.ENV_TURN_TTL_DAYS,
    "keep_message_ids": s.ENV_KEEP_MESSAGE_IDS,
    "long_term_backend": s.ENV_LONG_TERM_BACKEND,
    "memory_path": s.ENV_MEMORY_PATH,
    "opensearch_endpoint": s.ENV_OPENSEARCH_ENDPOINT,
    "opensearch_serverless": s.ENV_OPENSEARCH_SERVERLESS,
    "opensearch_shards": s.ENV_OPENSEARCH_SHARDS,
    "opensearch_memory_indexes": s.ENV_OPENSEARCH_MEMORY_INDEXES,
    "opensearch_on_disk": s.ENV_OPENSEARCH_ON_DISK,
    "opensearch_memory_generation": s.ENV_OPENSEARCH_MEMORY_GENERATION,
    "opensearch_previous_memory_indexes": s.ENV_OPENSEARCH_PREVIOUS_MEMORY_INDEXES,
    "vector_bucket": s.ENV_VECTOR_BUCKET,
    "vector_buckets": s.ENV_VECTOR_BUCKETS,
    "vector_shared_index": s.ENV_VECTOR_SHARED_INDEX,
    "recall_weights": s.ENV_RECALL_WEIGHTS,
    "recency_half_life_days": s.ENV_RECENCY_HALF_LIFE_DAYS,
    "compact_after_turns": s.ENV_COMPACT_AFTER_TURNS,
    "idle_minutes": s.ENV_IDLE_MINUTES,
    "consolidation_retry_minutes": s.ENV_CONSOLIDATION_RETRY_MINUTES,
    "consolidation_retries_per_sweep": s.ENV_CONSOLIDATION_RETRIES_PER_SWEEP,
    "purge_settle_seconds": s.ENV_PURGE_SETTLE_SECONDS,
    "cors_origins": s.ENV_CORS_ORIGINS,
    "sentiment": s.ENV_SENTIMENT,
    "stack_messages": s.ENV_STACK_MESSAGES,
    "stack_wait_ms": s.ENV_STACK_WAIT_MS,
    "event_bus_name": s.ENV_EVENT_BUS,
    "events_file": s.ENV_EVENTS_FILE,
    "agent_group": s.ENV_AGENT_GROUP,
    "agent_role_arn": s.ENV_AGENT_ROLE_ARN,
    "end_user_role_arns": s.ENV_END_USER_ROLE_ARNS,
    "handoff_on_nothing_verified": s.ENV_HANDOFF_ON_NOTHING_VERIFIED,
    "handoff_negative_turns": s.ENV_HANDOFF_NEGATIVE_TURNS,
    "handoff_negative_score": s.ENV_HANDOFF_NEGATIVE_SCORE,
}
