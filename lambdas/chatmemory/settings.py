"""Typed runtime settings, read from environment variables named in schema.py.

Local mode changes the endpoint URL, the model backends and the long-term backend; everything
else has the same defaults in AWS, locally and in tests.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from chatmemory import schema as s


def _int(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(key)
    return default if raw in (None, "") else int(raw)


def _float(env: Mapping[str, str], key: str, default: float) -> float:
    raw = env.get(key)
    return default if raw in (None, "") else float(raw)


def _bool(env: Mapping[str, str], key: str, default: bool) -> bool:
    raw = env.get(key)
    if raw in (None, ""):
        return default
    return raw.strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    sessions_table: str = "sessions"
    conversations_table: str = "conversations"
    users_table: str = "users"
    dynamodb_endpoint: str | None = None
    # Model backends: "offline" | "sagemaker" | "bedrock" | "openai"
    text_backend: str = "offline"
    embed_backend: str = "offline"
    text_endpoint: str = ""
    # SageMaker payload formats: "jumpstart-flan-t5" | "tgi" (text),
    # "jumpstart-gpt-j" | "tei" (embeddings)
    text_format: str = "jumpstart-flan-t5"
    embed_endpoint: str = ""
    embed_format: str = "jumpstart-gpt-j"
    embed_dimension: int = 384
    text_model_id: str = ""
    embed_model_id: str = ""
    openai_base_url: str = "http://127.0.0.1:11434/v1"
    openai_api_key: str = ""
    # API Gateway gives up after 29 s: a model call with its retries must finish well before.
    model_timeout_seconds: float = 20.0
    model_max_attempts: int = 3
    window_turns: int = 6
    max_window_turns: int = 50
    prompt_token_budget: int = 512
    max_new_tokens: int = 256
    max_input_chars: int = 4000
    user_role: str = "User"
    assistant_role: str = "Assistant"
    system_prompt: str = (
        "You are a helpful assistant. Answer the user's last message using the conversation."
    )
    intent_classifier: bool = False
    store_prompt: bool = False
    turn_ttl_days: int = 0
    # How many recent client_message_ids a session remembers for idempotent retries.
    keep_message_ids: int = 50
    # "none" | "embedded" (SQLite file at memory_path) | "opensearch"
    long_term_backend: str = "none"
    memory_path: str = ".local/memory.sqlite3"
    opensearch_endpoint: str = ""
    opensearch_serverless: bool = False
    # "vector,lexical,recency,time" weights of /past ranking, and the recency half-life.
    recall_weights: str = "1.0,1.0,0.05,0.5"
    recency_half_life_days: float = 30.0
    compact_after_turns: int = 12
    idle_minutes: int = 30
    # How long a purge waits after a forget before trusting the user index (its lag).
    purge_settle_seconds: float = 30.0
    # Origins a browser page may call the API from ("*": any); none by default.
    cors_origins: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        d = cls()
        return cls(
            sessions_table=env.get(s.ENV_SESSIONS_TABLE, d.sessions_table),
            conversations_table=env.get(s.ENV_CONVERSATIONS_TABLE, d.conversations_table),
            users_table=env.get(s.ENV_USERS_TABLE, d.users_table),
            dynamodb_endpoint=env.get(s.ENV_DYNAMODB_ENDPOINT) or None,
            text_backend=env.get(s.ENV_TEXT_BACKEND, d.text_backend),
            embed_backend=env.get(s.ENV_EMBED_BACKEND, d.embed_backend),
            text_endpoint=env.get(s.ENV_TEXT_ENDPOINT, d.text_endpoint),
            text_format=env.get(s.ENV_TEXT_FORMAT, d.text_format),
            embed_endpoint=env.get(s.ENV_EMBED_ENDPOINT, d.embed_endpoint),
            embed_format=env.get(s.ENV_EMBED_FORMAT, d.embed_format),
            embed_dimension=_int(env, s.ENV_EMBED_DIMENSION, d.embed_dimension),
            text_model_id=env.get(s.ENV_TEXT_MODEL_ID, d.text_model_id),
            embed_model_id=env.get(s.ENV_EMBED_MODEL_ID, d.embed_model_id),
            openai_base_url=env.get(s.ENV_OPENAI_BASE_URL, d.openai_base_url),
            openai_api_key=env.get(s.ENV_OPENAI_API_KEY, d.openai_api_key),
            model_timeout_seconds=_float(env, s.ENV_MODEL_TIMEOUT, d.model_timeout_seconds),
            model_max_attempts=_int(env, s.ENV_MODEL_MAX_ATTEMPTS, d.model_max_attempts),
            window_turns=_int(env, s.ENV_WINDOW_TURNS, d.window_turns),
            max_window_turns=_int(env, s.ENV_MAX_WINDOW_TURNS, d.max_window_turns),
            prompt_token_budget=_int(env, s.ENV_PROMPT_TOKEN_BUDGET, d.prompt_token_budget),
            max_new_tokens=_int(env, s.ENV_MAX_NEW_TOKENS, d.max_new_tokens),
            max_input_chars=_int(env, s.ENV_MAX_INPUT_CHARS, d.max_input_chars),
            user_role=env.get(s.ENV_USER_ROLE, d.user_role),
            assistant_role=env.get(s.ENV_ASSISTANT_ROLE, d.assistant_role),
            system_prompt=env.get(s.ENV_SYSTEM_PROMPT, d.system_prompt),
            intent_classifier=_bool(env, s.ENV_INTENT_CLASSIFIER, d.intent_classifier),
            store_prompt=_bool(env, s.ENV_STORE_PROMPT, d.store_prompt),
            turn_ttl_days=_int(env, s.ENV_TURN_TTL_DAYS, d.turn_ttl_days),
            long_term_backend=env.get(s.ENV_LONG_TERM_BACKEND, d.long_term_backend),
            memory_path=env.get(s.ENV_MEMORY_PATH, d.memory_path),
            opensearch_endpoint=env.get(s.ENV_OPENSEARCH_ENDPOINT, d.opensearch_endpoint),
            opensearch_serverless=_bool(env, s.ENV_OPENSEARCH_SERVERLESS, d.opensearch_serverless),
            recall_weights=env.get(s.ENV_RECALL_WEIGHTS, d.recall_weights),
            recency_half_life_days=_float(
                env, s.ENV_RECENCY_HALF_LIFE_DAYS, d.recency_half_life_days
            ),
            compact_after_turns=_int(env, s.ENV_COMPACT_AFTER_TURNS, d.compact_after_turns),
            idle_minutes=_int(env, s.ENV_IDLE_MINUTES, d.idle_minutes),
            purge_settle_seconds=_float(env, s.ENV_PURGE_SETTLE_SECONDS, d.purge_settle_seconds),
            cors_origins=tuple(
                o.strip() for o in env.get(s.ENV_CORS_ORIGINS, "").split(",") if o.strip()
            ),
        )
