"""Chat API Lambda (API Gateway REST, proxy integration): the function's entry.

A chat message (POST /sessions/{session_id}/messages, the route a conversation calls most and
so the one most cold starts serve) is answered by handlers/messages.py, which reads the request
and writes the answer without Powertools' resolver and pydantic; every other request, and a
message that path does not take as it is (a malformed body, a missing identity: anything that
is answered with an error before the route runs), goes to the API's Powertools routes
(handlers/chat_routes.py), imported on the first such request. Both answer a message alike
(tests/unit/test_message_route.py holds them to it); what they share is in
handlers/chat_shared.py.
"""

from __future__ import annotations

import time
from functools import cache
from types import ModuleType
from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from chatmemory import deadline, wiring
from handlers import init_done, initializing
from handlers import messages as message_route
from handlers.chat_shared import cors_origins, logger, metrics


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    with deadline.within(request_deadline(event, context)):
        message = message_route.accepted(event)
        if message is not None:
            return message_route.answer(message, cors_origins())
        return routes().api(cors_origins()).resolve(event, context)


@cache
def routes() -> ModuleType:
    """The API's Powertools routes, imported (and their resolver built) on first use, as
    init's own work: collection paused, and what it made frozen (handlers/__init__.py)."""
    with initializing():
        from handlers import chat_routes

        chat_routes.api(cors_origins())
    return chat_routes


def request_deadline(event: dict[str, Any], context: Any) -> deadline.Deadline:
    """When this request must be answered: before API Gateway's 29 s run out (counted from
    when it received the request) and before the function's own timeout."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    received = (event.get("requestContext") or {}).get("requestTimeEpoch")
    return deadline.of_request(
        remaining_ms=remaining() if callable(remaining) else None,
        received_epoch_ms=received if isinstance(received, int) else None,
        now_epoch_ms=time.time() * 1000,
    )


def _ahead() -> None:
    """With SnapStart, what a first request would otherwise build, built before the snapshot:
    the routes, every model's validators and each route's parameters."""
    routes().ahead()


# The end of init: build what invocations use, then resume collection (handlers/__init__.py).
init_done(wiring.chat_deps, ahead=_ahead)
