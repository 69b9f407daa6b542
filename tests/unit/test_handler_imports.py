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


def test_no_handler_loads_the_xray_sdk_or_opentelemetry_at_import() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {HANDLERS!r}:\n"
        "    importlib.import_module('handlers.' + name)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT / 'lambdas'}", "AWS_DEFAULT_REGION": "us-east-1"},
    )
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "handlers" in loaded and len(HANDLERS) >= 8
    assert not loaded & {"aws_xray_sdk", "opentelemetry", "boto3", "vaderSentiment"}, loaded


STREAM_AND_SCHEDULED = ("compact", "consolidate", "purge", "redrive", "sweep_idle", "ingest")


def test_stream_and_scheduled_handlers_do_not_load_the_chat_service_at_import() -> None:
    # wiring imports each service where it is used, so these cold starts skip the chat
    # service's modules (chat, auto-recall, hand-off, stacking, recall).
    code = (
        "import importlib, json, sys\n"
        "loaded = {}\n"
        f"for name in {STREAM_AND_SCHEDULED!r}:\n"
        "    importlib.import_module('handlers.' + name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('chatmemory'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT / 'lambdas'}", "AWS_DEFAULT_REGION": "us-east-1"},
    )
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
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
