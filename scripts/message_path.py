"""The modules a chat message passes from the handler to the store (`python -m
scripts.message_path`), measured on one buffered POST /sessions/{id}/messages answered in this
process: the chat function's handler (handlers/chat_api.py) on moto's DynamoDB with the
project's tables, the offline responder as the model, no long-term memory.

Two measures, both over the project's own modules (lambdas/):
- the path: the call stack at the moment the store sends the turn (the first AWS request
  whose parameters hold the message's text), from the handler down; its modules, in order,
  and how many times the stack comes back to a module it had left;
- the text's calls: every call of a project function that receives the message's text (an
  argument equal to it, or holding it in a field, an item or a value), in call order; how
  many, in how many modules, and how many times they come back to a module already left.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LAMBDAS = ROOT / "lambdas"
TEXT = "I moved to Lisbon last spring; what should I see there first?"
_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    "POWERTOOLS_METRICS_NAMESPACE": "ChatMemoryPath",
    "POWERTOOLS_METRICS_DISABLED": "true",
}


@dataclass
class Trace:
    calls: list[tuple[str, str]] = field(default_factory=list)  # (module, function) of the text
    path: list[tuple[str, str]] = field(default_factory=list)  # the stack at the store's write


def _module(filename: str) -> str | None:
    """The project module a frame runs in (lambdas/handlers/chat_api.py: handlers/chat_api.py),
    or None outside lambdas/."""
    try:
        return Path(filename).resolve().relative_to(LAMBDAS).as_posix()
    except ValueError:
        return None


def _holds(value: Any, depth: int = 0, deepest: int = 3) -> bool:
    """Whether VALUE is the text or holds it (DEEPEST levels into fields, items and values)."""
    if isinstance(value, str):
        return TEXT in value
    if depth >= deepest:
        return False
    if isinstance(value, dict):
        return any(_holds(v, depth + 1, deepest) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds(v, depth + 1, deepest) for v in value[:50])
    if is_dataclass(value) and not isinstance(value, type):
        return any(_holds(getattr(value, f.name, None), depth + 1, deepest) for f in fields(value))
    return False


def _arguments(frame: FrameType) -> list[Any]:
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    names = code.co_varnames[:count]
    return [frame.f_locals.get(name) for name in names if name != "self"]


def _stack(frame: FrameType | None) -> list[tuple[str, str]]:
    found = []
    while frame is not None:
        module = _module(frame.f_code.co_filename)
        if module is not None:
            found.append((module, frame.f_code.co_qualname))
        frame = frame.f_back
    return found[::-1]


@contextmanager
def traced(trace: Trace) -> Iterator[None]:
    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        module = _module(code.co_filename)
        if module is not None:
            if any(_holds(a) for a in _arguments(frame)):
                trace.calls.append((module, code.co_qualname))
        elif not trace.path and code.co_name == "_make_api_call":
            operation = frame.f_locals.get("operation_name")
            params = frame.f_locals.get("api_params")
            if _holds(params, deepest=10):  # an item's attribute, in a transaction
                trace.path = _stack(frame)
                trace.path.append(("(AWS)", str(operation)))

    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(None)


def returns(sequence: list[str]) -> int:
    """How many times SEQUENCE comes back to an item it had left."""
    left: set[str] = set()
    count, previous = 0, None
    for item in sequence:
        if item != previous:
            if item in left:
                count += 1
            if previous is not None:
                left.add(previous)
            previous = item
    return count


def modules_in(pairs: list[tuple[str, str]]) -> list[str]:
    """The modules of PAIRS in order, each run of one module once."""
    ordered: list[str] = []
    for module, _ in pairs:
        if not ordered or ordered[-1] != module:
            ordered.append(module)
    return ordered


def measure() -> Trace:
    """One message sent to a new session, the send traced (the environment, the wiring and the
    caches as they were after)."""
    import boto3
    from moto import mock_aws

    from chatmemory import schema, wiring
    from chatmemory.adapters.offline.responder import OfflineResponder
    from chatmemory.services.conversation.chat import ChatDeps
    from handlers import chat_api
    from local.gateway import load_routes, proxy_event

    routes = load_routes()

    def call(method: str, target: str, body: dict[str, Any]) -> dict[str, Any]:
        event = proxy_event(
            method=method,
            target=target,
            headers=[("Content-Type", "application/json")],
            body=json.dumps(body),
            user_id="path-user",
            routes=routes,
        )
        answer: dict[str, Any] = chat_api.handler(event, _Context())
        return answer

    trace = Trace()
    saved_env, saved_deps = dict(os.environ), wiring.chat_deps
    os.environ.update(_ENV)
    try:
        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1")
            for spec in schema.TABLES:
                client.create_table(**spec.create_table_kwargs(spec.logical_name))
            wiring.clear_caches()
            deps = ChatDeps(memory=wiring.short_term_memory(), generator=OfflineResponder())
            wiring.chat_deps = lambda: deps  # type: ignore[assignment]
            created = call("POST", "/sessions", {"name": "path"})
            session = json.loads(created["body"])["session"]["session_id"]
            call("POST", f"/sessions/{session}/messages", {"content": "hello there"})  # warm
            with traced(trace):
                answer = call("POST", f"/sessions/{session}/messages", {"content": TEXT})
            assert answer["statusCode"] == 200, answer
    finally:
        wiring.chat_deps = saved_deps  # type: ignore[method-assign]
        wiring.clear_caches()
        os.environ.clear()
        os.environ.update(saved_env)
    return trace


class _Context:
    function_name = "chat-api"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:chat-api"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        # A function's longest time: the measure is of modules, and a traced request on a busy
        # machine can take longer than the API's 29 s (the turn then refused it for time).
        return 900_000


def to_store(path: list[str]) -> list[str]:
    """The modules of PATH down to the store's adapter (the first module under adapters/),
    each once."""
    found: list[str] = []
    for module in path:
        if module not in found:
            found.append(module)
        if module.startswith("chatmemory/adapters/"):
            break
    return found


def main() -> None:
    trace = measure()
    path = modules_in([p for p in trace.path if p[0] != "(AWS)"])
    store = to_store(path)
    from_messages = to_store(path[path.index("handlers/messages.py") :])
    print(
        f"modules from the handler to the store: {len(store)} from handlers/chat_api.py, "
        f"{len(from_messages)} from handlers/messages.py; {len(set(path))} with the store's "
        f"own below it; the stack comes back to a module it had left {returns(path)} times"
    )
    for module, function in trace.path:
        print(f"  {module}  {function}")
    called = [module for module, _ in trace.calls]
    print(
        f"calls that receive the message's text: {len(trace.calls)} in {len(set(called))} "
        f"modules, back to a module already left {returns(called)} times"
    )
    for module in sorted(set(called)):
        print(f"  {called.count(module):3d}  {module}")


if __name__ == "__main__":
    main()
