"""What the Lambda handlers load at import (their cold start): never the X-Ray SDK (in
maintenance; Lambda active tracing records the segments) nor OpenTelemetry (an ADOT layer
instruments from outside) nor VADER's lexicon (loaded by the first message that needs a
sentiment), and every handler module imports on its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = sorted(
    p.stem for p in (ROOT / "lambdas" / "handlers").glob("*.py") if p.stem != "__init__"
)


def _modules_after_importing(handlers: tuple[str, ...] | list[str]) -> set[str]:
    """Every module a fresh interpreter holds once it has imported these handlers."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(handlers)!r}:\n"
        "    importlib.import_module('handlers.' + name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT / 'lambdas'}", "AWS_DEFAULT_REGION": "us-east-1"},
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_no_handler_loads_the_xray_sdk_or_opentelemetry_at_import() -> None:
    loaded = {m.split(".")[0] for m in _modules_after_importing(HANDLERS)}
    assert "handlers" in loaded and len(HANDLERS) >= 8
    assert not loaded & {"aws_xray_sdk", "opentelemetry", "boto3", "vaderSentiment"}, loaded


STREAM_AND_SCHEDULED = ("compact", "consolidate", "purge", "redrive", "sweep_idle", "ingest")


def test_stream_and_scheduled_handlers_do_not_load_the_chat_service_at_import() -> None:
    # wiring imports each service where it is used, so these cold starts skip the chat
    # service's modules (chat, auto-recall, hand-off, stacking, recall).
    loaded = {
        m for m in _modules_after_importing(STREAM_AND_SCHEDULED) if m.startswith("chatmemory")
    }
    chat_only = {
        "chatmemory.services.conversation.chat",
        "chatmemory.services.longterm.auto_recall",
        "chatmemory.services.conversation.handoff",
        "chatmemory.services.conversation.stacking",
    }
    assert not loaded & chat_only, loaded & chat_only
    # Nor any other module of the conversation (sessions, turns, routing, sentiment...): the
    # functions off the request path need only services.background and what it builds on.
    conversation = {m for m in loaded if m.startswith("chatmemory.services.conversation")}
    assert not conversation, conversation
