"""Timeouts, retries and error mapping shared by the model adapters.

A model call, retries included, has to end well before API Gateway gives up (29 s), and every
failure has to reach the chat API as one of two answers: ModelUnavailable (503: unreachable,
throttled past our retries, too slow; worth retrying later) or ModelError (502: the model
refused the request; retrying the same request will not help).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    ParamValidationError,
    ReadTimeoutError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import ReadTimeoutError as Urllib3ReadTimeout

from chatmemory import deadline
from chatmemory.errors import ChatMemoryError, ModelError, ModelUnavailable

# A model server that does not accept a connection within this is down, however slow the
# model itself is allowed to be.
CONNECT_TIMEOUT_SECONDS = 3.0
# What an HTTP client may retry: throttling and the server-side statuses that mean "not now".
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
# Never wait longer than this between two attempts, whatever a Retry-After header asks.
MAX_BACKOFF_SECONDS = 5.0

_THROTTLING_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "ServiceQuotaExceededException",
        "RequestLimitExceeded",
    }
)
_UNAVAILABLE_CODES = frozenset(
    {
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalFailure",
        "InternalServerException",
        "InternalDependencyException",
        "ModelNotReadyException",
        "ModelTimeoutException",
        # Failures of a streamed answer while it was sent (AWS: "retry your request").
        "ModelStreamErrorException",
        "ModelStreamError",
        "InternalStreamFailure",
    }
)
_MISSING_CODES = frozenset({"ResourceNotFoundException", "AccessDeniedException"})
# SageMaker answers ValidationError "Endpoint x of account y not found." for a missing endpoint
# (also while it is still being created); Bedrock a ValidationException for an unknown model id.
_MISSING_MESSAGE = re.compile(
    r"not found|could not find|does not exist|model identifier is invalid", re.IGNORECASE
)
_NO_RETRY_HANDLER_ID = "chatmemory-no-retry-after-read-timeout"


def model_client_config(timeout: float, attempts: int) -> Config:
    """botocore settings for a model runtime client: a short connect timeout, `timeout` to read
    the answer, and `attempts` tries in total with standard retries (exponential backoff with
    jitter, longer on throttling)."""
    return Config(
        connect_timeout=min(CONNECT_TIMEOUT_SECONDS, timeout),
        read_timeout=timeout,
        retries={"mode": "standard", "total_max_attempts": max(1, attempts)},
    )


class DeadlineClients:
    """A model runtime client whose calls fit the current request's deadline
    (chatmemory/deadline.py): the configured client while the deadline leaves it its whole
    timeout, else one whose read timeout is the whole seconds left, with a single attempt; no
    call starts with less than deadline.MIN_CALL_SECONDS left (DeadlineExceeded). Clients come
    from `make(timeout, attempts)`, which caches them; adapters use this like the client."""

    def __init__(self, make: Callable[[float, int], Any], timeout: float, attempts: int) -> None:
        self._make = make
        self._timeout = timeout
        self._base = make(timeout, attempts)

    @property
    def meta(self) -> Any:
        return self._base.meta

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client(), name)

    def _client(self) -> Any:
        left = deadline.current().require(deadline.MIN_CALL_SECONDS, "call the model")
        if left >= self._timeout:
            return self._base
        client = self._make(float(math.floor(left)), 1)
        stop_retrying_read_timeouts(client)
        return client


def stop_retrying_read_timeouts(client: Any) -> None:
    """Make `client` give up after a read timeout instead of retrying it.

    botocore retries read timeouts like any transient error, so a model that is merely slow
    would cost `attempts` x `timeout` seconds, far past API Gateway's limit. Throttling, 5xx and
    connection failures answer fast and keep their retries. Idempotent per client.
    """
    service = client.meta.service_model.service_id.hyphenize()
    # Registered on the same node as botocore's own retry handler and before it: the first
    # non-None answer wins and False means "do not retry".
    client.meta.events.register_first(
        f"needs-retry.{service}", _no_retry_after_read_timeout, unique_id=_NO_RETRY_HANDLER_ID
    )


def _no_retry_after_read_timeout(
    caught_exception: Exception | None = None, **_: Any
) -> bool | None:
    return False if isinstance(caught_exception, ReadTimeoutError) else None


def classify(
    target: str, *, status: int | None, code: str = "", message: str = "", missing: str
) -> ChatMemoryError:
    """The project error for a failed model request, from its HTTP status and error code.

    `target` names what was called ("SageMaker endpoint 'x'"); `missing` completes the sentence
    for a model that does not exist ("does not exist or is not InService").
    """
    detail = message or code or f"HTTP {status}"
    if code in _THROTTLING_CODES or status == 429:
        return ModelUnavailable(f"{target} is throttling requests and retries ran out: {detail}")
    if (
        code in _MISSING_CODES
        or status == 404
        or (code.startswith("Validation") and _MISSING_MESSAGE.search(message))
    ):
        return ModelUnavailable(f"{target} {missing}: {detail}")
    if code in _UNAVAILABLE_CODES or (status is not None and status >= 500):
        return ModelUnavailable(f"{target} is unavailable: {detail}")
    return ModelError(f"{target} answered with an error: {detail}")


@contextmanager
def model_errors(target: str, *, missing: str) -> Iterator[None]:
    """Turn what botocore raises during a model call (and while reading its answer, a streamed
    one included) into ModelUnavailable or ModelError naming `target`."""
    try:
        yield
    except ClientError as error:  # an event stream's error events too (EventStreamError)
        raise _from_client_error(error, target, missing) from error
    except (ReadTimeoutError, Urllib3ReadTimeout) as error:
        raise ModelUnavailable(f"{target} did not answer in time ({error})") from error
    except (BotoConnectionError, HTTPClientError) as error:
        raise ModelUnavailable(f"{target} is unreachable ({error})") from error
    except Urllib3Error as error:  # an event stream's connection broke while it was read
        raise ModelUnavailable(
            f"{target}: the connection broke while answering ({error!r})"
        ) from error
    except ParamValidationError as error:
        raise ModelError(f"invalid request to {target}: {error}") from error
    except BotoCoreError as error:  # no credentials, no region: this deployment cannot call it
        raise ModelUnavailable(f"cannot call {target}: {error}") from error


def _from_client_error(error: ClientError, target: str, missing: str) -> ChatMemoryError:
    info = error.response.get("Error", {})
    code, message = info.get("Code", ""), info.get("Message", "")
    # An event stream names its error events in camel case ("throttlingException").
    code = code[:1].upper() + code[1:]
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code == "ModelError":
        # SageMaker: the model container itself answered with an error status.
        original = error.response.get("OriginalStatusCode")
        text = error.response.get("OriginalMessage") or message
        if original in (429, 503) or "timed out" in message.lower():
            return ModelUnavailable(f"{target} is overloaded or too slow: {text}")
        return ModelError(f"{target} answered with an error ({original}): {text}")
    return classify(target, status=status, code=code, message=message, missing=missing)


def backoff_delay(
    attempt: int,
    retry_after: float | None = None,
    *,
    base: float = 0.25,
    rand: Callable[[], float] = random.random,
) -> float | None:
    """Seconds to wait before attempt `attempt + 1`: full jitter on an exponential ceiling, or
    the server's Retry-After. None when the server asks for longer than we may wait."""
    if retry_after is not None:
        return retry_after if retry_after <= MAX_BACKOFF_SECONDS else None
    return rand() * min(MAX_BACKOFF_SECONDS, base * 2 ** (attempt - 1))


def parse_retry_after(value: str | None) -> float | None:
    """A Retry-After header (seconds or an HTTP date) in seconds, or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
