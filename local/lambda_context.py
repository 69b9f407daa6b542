"""A stand-in for what Lambda gives a handler: the handler loaded from its handler string, and
the LambdaContext object passed with each event."""

from __future__ import annotations

import importlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# A Lambda handler: (event, context) -> reply.
Handler = Callable[[dict[str, Any], Any], Any]


def import_object(dotted_path: str) -> Any:
    """`package.module.name` -> that module's `name`."""
    module_name, _, name = dotted_path.rpartition(".")
    if not module_name:
        raise ValueError(f"{dotted_path!r} is not a dotted path to a module attribute")
    return getattr(importlib.import_module(module_name), name)


def load_handler(dotted_path: str) -> Handler:
    """Import `package.module.function` (the Lambda handler string)."""
    handler: Handler = import_object(dotted_path)
    return handler


@dataclass
class LocalLambdaContext:
    """What Powertools reads from a context (name, ARN, memory, request id, time left)."""

    function_name: str
    timeout_seconds: float = 30.0
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = "local"
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        left = self.timeout_seconds - (time.monotonic() - self._started)
        return max(int(left * 1000), 0)


def started_now(event: dict[str, Any]) -> dict[str, Any]:
    """A proxy event as its handler takes it up: API Gateway's clock (requestTimeEpoch, from
    which the chat handler counts its 29 s) starts now. Here a request waits for a free
    handler process; Lambda would start another instance instead of making it wait."""
    context = event.get("requestContext")
    if isinstance(context, dict) and "requestTimeEpoch" in context:
        context["requestTimeEpoch"] = int(time.time() * 1000)
    return event
