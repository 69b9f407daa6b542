"""What the Lambda handlers load at import (their cold start): never the X-Ray SDK (in
maintenance; Lambda active tracing records the segments) nor OpenTelemetry (an ADOT layer
instruments from outside) nor VADER's lexicon (loaded by the first message that needs a
sentiment), and every handler module imports on its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import coldstart

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = sorted(
    p.stem for p in (ROOT / "lambdas" / "handlers").glob("*.py") if p.stem != "__init__"
)


def _fresh_interpreter(code: str, **env: str) -> Any:
    """What `code`, run by a fresh interpreter with the handlers importable (and `env`), prints
    as JSON on its last line."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT / 'lambdas'}", "AWS_DEFAULT_REGION": "us-east-1", **env},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _modules_after_importing(handlers: tuple[str, ...] | list[str]) -> set[str]:
    """Every module a fresh interpreter holds once it has imported these handlers."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(handlers)!r}:\n"
        "    importlib.import_module('handlers.' + name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    return set(_fresh_interpreter(code))


def test_no_handler_loads_the_xray_sdk_or_opentelemetry_at_import() -> None:
    loaded = {m.split(".")[0] for m in _modules_after_importing(HANDLERS)}
    assert "handlers" in loaded and len(HANDLERS) >= 8
    assert not loaded & {"aws_xray_sdk", "opentelemetry", "boto3", "vaderSentiment"}, loaded


STREAM_AND_SCHEDULED = (
    "compact",
    "consolidate",
    "purge",
    "redrive",
    "sweep_idle",
    "ingest",
    "migrate_memory",
)


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


# The modules a function's handler setting names (the others are their helpers).
ENTRY_POINTS = [
    name
    for name in HANDLERS
    if "\ndef handler(" in (ROOT / "lambdas" / "handlers" / f"{name}.py").read_text()
]

_COLLECTION = (
    "import gc, json, sys\n"
    "import handlers\n"
    "paused = not gc.isenabled()\n"
    "import handlers.{module}\n"
    "print(json.dumps([paused, gc.isenabled(), gc.get_freeze_count()]))\n"
)


def _collection_around_import(module: str, lambda_environment: bool) -> list[Any]:
    env = {"AWS_LAMBDA_FUNCTION_NAME": "test"} if lambda_environment else {}
    answer: list[Any] = _fresh_interpreter(_COLLECTION.format(module=module), **env)
    return answer


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_in_lambda_collection_waits_for_init_then_resumes_over_new_objects_only(
    module: str,
) -> None:
    # A handler module that forgot init_done() would leave its function without a collector.
    paused, enabled_after, frozen = _collection_around_import(module, lambda_environment=True)
    assert paused and enabled_after
    assert frozen > 10_000  # what init made: modules, classes, routes


def test_outside_lambda_importing_a_handler_leaves_collection_alone() -> None:
    paused, enabled_after, frozen = _collection_around_import("chat_api", lambda_environment=False)
    assert not paused and enabled_after and frozen == 0


_CHAT_INIT = """
import json
import handlers.chat_api
from chatmemory import wiring

class Context:
    function_name = "test"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:test"
    aws_request_id = "test"
    def get_remaining_time_in_millis(self):
        return 29000

built_at_init = wiring.chat_deps.cache_info().currsize
event = {"httpMethod": "GET", "path": "/sessions", "resource": "/sessions", "headers": {},
         "multiValueHeaders": {}, "queryStringParameters": None,
         "multiValueQueryStringParameters": None, "body": None,
         "requestContext": {"requestId": "r", "authorizer": {"claims": {"sub": "u"}}}}
answer = handlers.chat_api.handler(event, Context())
print(json.dumps([built_at_init, answer["statusCode"], json.loads(answer["body"])]))
"""


def _chat_cold_start(**settings: str) -> list[Any]:
    answer: list[Any] = _fresh_interpreter(_CHAT_INIT, AWS_LAMBDA_FUNCTION_NAME="test", **settings)
    return answer


def test_a_chat_init_that_cannot_build_its_dependencies_still_answers_the_error_as_json() -> None:
    # Built at init when they can be (so they are frozen with the rest of init)...
    built, _, _ = _chat_cold_start()
    assert built == 1
    # ...and when they cannot, init still succeeds and the request answers the configuration
    # error as the API does (a JSON 500), not API Gateway's bare 502 for a failed init.
    built, status, body = _chat_cold_start(TEXT_BACKEND="no-such-backend")
    assert built == 0
    assert status == 500 and body["error"]["code"] == "configuration_error", body


# --- Lambda SnapStart (the stack's chatSnapStart) ----------------------------------------------

_SNAP_START = {"AWS_LAMBDA_FUNCTION_NAME": "test", "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}

_MODELS_AFTER_INIT = """
import json
import handlers.chat_api
import snapshot_restore_py
from chatmemory import api_models
models = api_models.models()
hooks = [getattr(f, "__qualname__", repr(f)) for f, _, _ in snapshot_restore_py.get_after_restore()]
print(json.dumps([sum(not m.__pydantic_complete__ for m in models), len(models), hooks]))
"""


def test_with_snap_start_init_builds_every_validator_before_the_snapshot() -> None:
    # The models' validators are deferred to their first use, which with SnapStart would fall
    # on a restored environment's first request; its init (run when the version is published)
    # builds them all, and registers the after-restore hook.
    waiting, models, hooks = _fresh_interpreter(_MODELS_AFTER_INIT, **_SNAP_START)
    assert models > 40 and waiting == 0
    assert hooks == ["Random.seed"]


def test_without_snap_start_init_leaves_the_validators_to_their_first_use() -> None:
    # An on-demand cold start is on a request's path: it builds only what that request uses.
    waiting, models, hooks = _fresh_interpreter(_MODELS_AFTER_INIT, AWS_LAMBDA_FUNCTION_NAME="test")
    assert waiting > models // 2
    assert hooks == []


# A restore brings back the memory of init, the random module's state with it (unlike a fork,
# after which CPython reseeds the child itself): two environments restored from one snapshot.
_RESTORED_TWICE = """
import json, random
import snapshot_restore_py
from handlers import init_done
init_done()
snapshot = random.getstate()
draws = []
for _ in range(2):
    random.setstate(snapshot)
    if {run_hooks}:
        for hook, args, kwargs in snapshot_restore_py.get_after_restore():
            hook(*args, **kwargs)
    draws.append(random.random())
print(json.dumps(draws))
"""


def test_environments_restored_from_one_snapshot_draw_different_retry_jitter() -> None:
    # Without the after-restore hook two environments restored from one snapshot draw the same
    # numbers (retries backing off in step); with it, each its own.
    same = _fresh_interpreter(_RESTORED_TWICE.format(run_hooks=False), **_SNAP_START)
    assert same[0] == same[1]
    own = _fresh_interpreter(_RESTORED_TWICE.format(run_hooks=True), **_SNAP_START)
    assert own[0] != own[1]


# bench.coldstart's recorder notes every client a process creates and every call it makes.
_CALLS_DURING_INIT = (
    coldstart._RECORDER
    + """
import json
import handlers.chat_api
from chatmemory import wiring
calls = [what[0] for kind, _, what in RECORDED if kind == "call"]
print(json.dumps([calls, wiring.chat_deps.cache_info().currsize]))
"""
)


def test_a_snapshot_of_the_chat_init_holds_no_users_data() -> None:
    # With SnapStart the memory of init is kept (encrypted) as long as the version lives, out
    # of a delete's reach: init builds the clients, validators and routes and reads nothing.
    calls, built = _fresh_interpreter(_CALLS_DURING_INIT, **_SNAP_START)
    assert built == 1
    assert calls == []


def test_the_functions_off_the_request_path_do_not_load_pydantic() -> None:
    """Their settings are read without it: building a pydantic model at cold start cost each of
    them about a third of `import boto3` plus one client (docs/measured/coldstart.md)."""
    # (The ingest function, which operators invoke with documents, reads them with pydantic.)
    off_the_request_path = (
        "compact",
        "consolidate",
        "purge",
        "redrive",
        "sweep_idle",
        "index_setup",
        "migrate_memory",
    )
    loaded = {m.split(".")[0] for m in _modules_after_importing(off_the_request_path)}
    assert "chatmemory" in loaded and not loaded & {"pydantic", "pydantic_core"}


def test_the_chat_functions_init_loads_neither_pydantic_nor_powertools_routing() -> None:
    """A cold start whose first request is a message (handlers/messages.py) loads neither; the
    routes' module comes with the first request that needs it."""
    loaded = _modules_after_importing(["chat_api"])
    assert "handlers.messages" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("pydantic", "pydantic_core")}
    assert "aws_lambda_powertools.event_handler" not in loaded
    assert "chatmemory.api_models" not in loaded and "handlers.chat_routes" not in loaded
