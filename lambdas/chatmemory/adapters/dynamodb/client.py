"""The DynamoDB client as the adapter uses it: outages reported as such, conditions checked."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from chatmemory.errors import ShortTermMemoryUnavailable
from chatmemory.limits import DYNAMODB_BATCH_WRITE

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


def applied(request: Callable[..., object], **params: Any) -> bool:
    """Whether a conditional write took effect: False when its condition no longer held."""
    try:
        request(**params)
    except ClientError as error:
        if is_conditional_failure(error):
            return False
        raise
    return True


def batch_write(db: Any, table: str, requests: Iterable[dict[str, Any]]) -> None:
    """BatchWriteItem of `requests` to `table` in batches of 25, unprocessed items sent again
    (backing off); items DynamoDB keeps unprocessed are an outage to retry, not a conflict."""
    batch: list[dict[str, Any]] = []
    for request in requests:
        batch.append(request)
        if len(batch) == DYNAMODB_BATCH_WRITE.count:
            _flush(db, table, batch)
            batch = []
    if batch:
        _flush(db, table, batch)


def _flush(db: Any, table: str, batch: list[dict[str, Any]]) -> None:
    pending: dict[str, Any] = {table: batch}
    for attempt in range(8):
        answer = db.batch_write_item(RequestItems=pending)
        pending = answer.get("UnprocessedItems") or {}
        if not pending:
            return
        time.sleep(min(0.05 * 2**attempt, 1.0))
    raise ShortTermMemoryUnavailable("DynamoDB kept items unprocessed; retry the request")


@contextmanager
def suppress_conditional() -> Iterator[None]:
    """A conditional write whose condition no longer holds is expected here: nothing to do."""
    try:
        yield
    except ClientError as error:
        if not is_conditional_failure(error):
            raise
