"""The project's own exceptions; the chat API maps each to one HTTP answer in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmemory.domain import Session


class ChatMemoryError(Exception):
    """Base class. `code` is the machine-readable error code sent to clients."""

    code = "internal_error"
    status = 500


class ConfigurationError(ChatMemoryError):
    """The deployment's settings are wrong (a variable that does not parse, a backend that does
    not exist): not the caller's fault, so a 500, logged with what to fix."""

    code = "configuration_error"
    status = 500


class BadRequest(ChatMemoryError):
    code = "bad_request"
    status = 400


class SessionNotFound(ChatMemoryError):
    code = "session_not_found"
    status = 404


class RecordNotFound(ChatMemoryError):
    code = "record_not_found"
    status = 404


class TurnNotFound(ChatMemoryError):
    code = "turn_not_found"
    status = 404


class SessionEnded(ChatMemoryError):
    code = "session_ended"
    status = 409


class Conflict(ChatMemoryError):
    code = "conflict"
    status = 409


class PayloadTooLarge(ChatMemoryError):
    code = "payload_too_large"
    status = 413


class ModelError(ChatMemoryError):
    """A model answered with an error we cannot recover from (bad gateway)."""

    code = "model_error"
    status = 502


class ModelUnavailable(ChatMemoryError):
    """A model is unreachable, throttled past our retries or timed out."""

    code = "model_unavailable"
    status = 503


class DeadlineExceeded(ChatMemoryError):
    """The request ran out of time (chatmemory/deadline.py) before it could finish: answered
    as a 503 before API Gateway gives up, with the user's message kept for the retry."""

    code = "deadline_exceeded"
    status = 503


class ShortTermMemoryUnavailable(ChatMemoryError):
    """DynamoDB kept throttling or failing after the SDK's retries: worth retrying later."""

    code = "short_term_memory_unavailable"
    status = 503


class LongTermMemoryUnavailable(ChatMemoryError):
    code = "long_term_memory_unavailable"
    status = 503


class LongTermMemoryError(ChatMemoryError):
    """The long-term index refused a request (a 4xx answer of OpenSearch): a bad gateway."""

    code = "long_term_memory_error"
    status = 502


class EventsUnavailable(ChatMemoryError):
    """An event could not be published (the hand-off itself is stored: this is only logged)."""

    code = "events_unavailable"
    status = 503


class HandoffChanged(Conflict):
    """A turn's write found the session handed to a person, or handed back, since it was read
    (services/conversation/handoff.py decides what becomes of the turn); `session` is the session as
    read again."""

    def __init__(self, message: str, session: Session) -> None:
        super().__init__(message)
        self.session = session


class CheckpointNotFound(ChatMemoryError):
    """No checkpoint of that id (or none at all) in the session's namespace."""

    code = "checkpoint_not_found"
    status = 404
