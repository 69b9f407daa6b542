"""The DynamoDB client as the adapter uses it: outages reported as such, conditions checked."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from chatmemory.errors import ShortTermMemoryUnavailable

# What DynamoDB answers when it cannot serve a request now. botocore's standard retries have
# already retried these; what is left is an outage to report as such (503), not a bug (500).
_UNAVAILABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TransactionInProgressException",
        "InternalServerError",
        "ServiceUnavailable",
    }
)


@contextmanager
def _outages() -> Iterator[None]:
    """Throttling and outages that outlast botocore's retries become ShortTermMemoryUnavailable."""
    try:
        yield
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if _index_not_there_yet(error):
            # A deployment being upgraded gets one new index per update (docs/operations.md):
            # until the next one, what reads that index degrades instead of failing the turn.
            raise ShortTermMemoryUnavailable(
                "an index this version reads is not on the table yet; finish the upgrade"
            ) from error
        if code not in _UNAVAILABLE_CODES:
            raise
        raise ShortTermMemoryUnavailable(
            f"DynamoDB is throttling or unavailable ({code}); retry the request"
        ) from error
    except (BotoConnectionError, HTTPClientError) as error:
        raise ShortTermMemoryUnavailable(
            f"DynamoDB did not answer ({type(error).__name__}); retry the request"
        ) from error


def _index_not_there_yet(error: ClientError) -> bool:
    details = error.response.get("Error", {})
    return details.get("Code") == "ValidationException" and "specified index" in str(
        details.get("Message", "")
    )


class Guarded:
    """A DynamoDB client (or paginator) whose calls, and pages, report outages via _outages."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with _outages():
                answer = attr(*args, **kwargs)
            if name == "get_paginator":
                return Guarded(answer)
            if name == "paginate":
                return _pages(answer)
            return answer

        return call


def _pages(pages: Any) -> Iterator[Any]:
    with _outages():
        yield from pages


def is_conditional_failure(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


@contextmanager
def suppress_conditional() -> Iterator[None]:
    """A conditional write whose condition no longer holds is expected here: nothing to do."""
    try:
        yield
    except ClientError as error:
        if not is_conditional_failure(error):
            raise
