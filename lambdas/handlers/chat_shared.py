"""What the chat function's ways of answering (handlers/messages.py, the chat message without
Powertools' resolver; handlers/stream.py, its answer streamed; handlers/chat_routes.py, every
route) share: its logger and metrics, what a stored turn tells them, and how a failed request
is answered."""

from __future__ import annotations

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit

from chatmemory import wiring
from chatmemory.errors import ChatMemoryError, ConfigurationError
from chatmemory.services.conversation import chat
from handlers.metrics import metrics_of

logger = Logger(service="chat-api")
metrics = metrics_of("chat-api")


def cors_origins() -> tuple[str, ...]:
    """CORS_ALLOW_ORIGINS; none while the settings are invalid (the request is then answered
    with the configuration error, without CORS headers)."""
    try:
        return wiring.settings().cors_origins
    except ConfigurationError:
        return ()


def settled(result: chat.TurnResult) -> None:
    """What a message's turn stored tells the log and the metrics (buffered or streamed)."""
    log_sentiment_error(result.sentiment_error)
    log_event_error(result.event_error)
    if not result.replayed:
        metrics.add_metric(name="TurnsStored", unit=MetricUnit.Count, value=1)


def log_sentiment_error(reason: str) -> None:
    """The analyzer failed: the turn was stored without a sentiment, and this says why."""
    if reason:
        logger.warning("sentiment failed", extra={"reason": reason})


def log_event_error(reason: str) -> None:
    """A hand-off or hand-back is stored, but its event could not be published."""
    if reason:
        logger.warning("hand-off event not published", extra={"reason": reason})
        metrics.add_metric(name="HandoffEventsFailed", unit=MetricUnit.Count, value=1)


def known_error(error: ChatMemoryError) -> tuple[int, str, str]:
    """The status, code and message a request that failed with ERROR is answered with."""
    if isinstance(error, ConfigurationError):
        # The operator's to fix: the details (setting names and values) go to the log only.
        logger.error("configuration error", extra={"reason": str(error)})
        return 500, error.code, "the service is misconfigured; see its logs"
    if error.status >= 500:
        logger.warning("request failed", extra={"code": error.code, "reason": str(error)})
    return error.status, error.code, str(error)


def unexpected_error() -> tuple[int, str, str]:
    """The answer to a request that failed unexpectedly (logged with its traceback)."""
    logger.exception("unhandled error")
    return 500, "internal_error", "internal error; the request was not completed"
