"""Fault injection on a real botocore client through its event hooks.

`DynamoFaults(client).fail("TransactWriteItems", throttled(), LOST, ...)` makes the next calls of
that operation answer what DynamoDB would answer under load (throttling, cancelled transactions,
a 500) or lose the answer of a request that DynamoDB did apply (LOST: the request is sent, then
the client sees a read timeout). Every attempt is recorded, so a test can tell how often
botocore's standard retries sent the request, and with which body.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError

_TYPE_PREFIX = "com.amazonaws.dynamodb.v20120810#"


@dataclass(frozen=True)
class Fault:
    """One injected answer: an error DynamoDB returns, or (lost=True) a lost answer."""

    status: int = 400
    body: dict[str, Any] = field(default_factory=dict)
    lost: bool = False


LOST = Fault(lost=True)


def error(code: str, message: str = "injected", status: int = 400, **extra: Any) -> Fault:
    """An error answer in DynamoDB's JSON protocol (the shape botocore parses)."""
    return Fault(status, {"__type": _TYPE_PREFIX + code, "message": message, **extra})


def throttled(code: str = "ProvisionedThroughputExceededException") -> Fault:
    return error(code, "The level of configured provisioned throughput for the table was exceeded")


def cancelled(*reasons: str) -> Fault:
    """TransactionCanceledException with one reason per item ("None" for an item that was fine)."""
    listed = ", ".join(reasons)
    return error(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{listed}]",
        CancellationReasons=[{"Code": r} for r in reasons],
    )


class _Raw:
    """The raw stream botocore reads an injected body from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


class DynamoFaults:
    """Injects queued faults into one DynamoDB client's requests; records every attempt."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._queued: dict[str, deque[Fault]] = defaultdict(deque)
        self._lock = threading.Lock()
        self.attempts: dict[str, list[dict[str, Any]]] = defaultdict(list)
        # First, so it answers before moto's or the real HTTP sender.
        client.meta.events.register_first("before-send.dynamodb", self._before_send)

    def fail(self, operation: str, *faults: Fault) -> DynamoFaults:
        with self._lock:
            self._queued[operation].extend(faults)
        return self

    def recover(self) -> None:
        """Drop every fault still queued: the table answers normally again."""
        with self._lock:
            self._queued.clear()

    def pending(self, operation: str) -> int:
        with self._lock:
            return len(self._queued[operation])

    def _before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        operation = request.headers.get("X-Amz-Target", b"")
        if isinstance(operation, bytes):
            operation = operation.decode()
        operation = operation.rpartition(".")[2]
        body = request.body.decode() if isinstance(request.body, bytes) else request.body
        with self._lock:
            self.attempts[operation].append(json.loads(body or "{}"))
            queue = self._queued.get(operation)
            fault = queue.popleft() if queue else None
        if fault is None:
            return None
        if fault.lost:
            # DynamoDB applies the request; its answer never reaches the client.
            self._client._endpoint.http_session.send(request)
            raise ReadTimeoutError(endpoint_url=request.url, error="injected: answer lost")
        headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "injected"}
        return AWSResponse(
            request.url, fault.status, headers, _Raw(json.dumps(fault.body).encode())
        )
