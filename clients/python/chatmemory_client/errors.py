"""Errors of the chat memory API as exceptions: one class per kind of failure, all under
ChatMemoryError, built from the API's `{"error": {"code", "message"}}` body or from whatever a
gateway in front of it answered (API Gateway's `{"message": ...}`, an HTML page, nothing)."""

from __future__ import annotations

import json
from typing import Any


class ChatMemoryError(Exception):
    """A request the API refused or could not complete: HTTP `status` (0 when no answer came),
    the API's error `code` and its `message`."""

    retryable = False

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(status, code, message)
        self.status = status
        self.code = code
        self.message = message

    def __str__(self) -> str:
        where = f"HTTP {self.status}" if self.status else "no answer"
        return f"{self.message} ({where}, {self.code})"


class BadRequest(ChatMemoryError):
    """400 (and 415): the request is malformed or a field is invalid; fix it, do not retry."""


class InvalidId(BadRequest, ValueError):
    """An identifier the API would refuse (a session or record id, a client_message_id, a turn
    number), refused before anything is sent: an id such as ".." would otherwise be collapsed
    by the URL into another route (DELETE /memories/records/.. is DELETE /memories)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "invalid_id", message)

    def __str__(self) -> str:
        return f"{self.message} (not sent)"


class Unauthorized(ChatMemoryError):
    """401 or 403: no valid token or signature, or the caller may not do this."""


class NotFound(ChatMemoryError):
    """404: no such session, turn, record or route for this caller."""


class Conflict(ChatMemoryError):
    """409: the request clashes with what is stored (a turn's other response, a reused
    client_message_id with other content, a session too busy to take a message)."""


class SessionEnded(Conflict):
    """409 session_ended: the session is no longer open; start a new one."""


class PayloadTooLarge(ChatMemoryError):
    """413: the content is over the server's limit."""


class ServerError(ChatMemoryError):
    """5xx: the server or the model failed (502 model_error, 500 internal_error...)."""


class Unavailable(ChatMemoryError):
    """503 or 429: a model or store is unavailable or the API is throttled; the client retried
    it already (max_retries) and it may succeed later."""

    retryable = True


class ConnectionFailed(Unavailable):
    """No HTTP answer: the connection failed or timed out (status 0)."""


# Codes for answers that did not come from the API itself (API Gateway, a proxy).
_DEFAULT_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "throttled",
    500: "internal_error",
    502: "bad_gateway",
    503: "unavailable",
    504: "gateway_timeout",
}

_MAX_MESSAGE_CHARS = 500


def error_class(status: int, code: str) -> type[ChatMemoryError]:
    """The exception class for an HTTP status and error code."""
    if status in (400, 415):
        return BadRequest
    if status in (401, 403):
        return Unauthorized
    if status == 404:
        return NotFound
    if status == 409:
        return SessionEnded if code == "session_ended" else Conflict
    if status == 413:
        return PayloadTooLarge
    if status in (429, 503):
        return Unavailable
    if status >= 500:
        return ServerError
    return ChatMemoryError


def error_from_response(status: int, body: bytes, reason: str = "") -> ChatMemoryError:
    """The exception for an error answer, whatever its body holds."""
    code = _DEFAULT_CODES.get(status, f"http_{status}")
    message = reason or code.replace("_", " ")
    parsed = _json_or_none(body)
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict):
            code = str(error.get("code") or code)
            message = str(error.get("message") or message)
        elif isinstance(parsed.get("message") or parsed.get("Message"), str):
            # API Gateway's own answers: {"message": "Forbidden"}, {"message": null} for 429.
            message = parsed.get("message") or parsed["Message"]
    elif body.strip():
        message = body.decode("utf-8", "replace").strip()
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[:_MAX_MESSAGE_CHARS] + "..."
    return error_class(status, code)(status, code, message)


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None
