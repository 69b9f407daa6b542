"""Every AWS request the handlers send, recorded with the function that sent it.

boto3 requests are caught by botocore's own events on the default session (every client the
wiring creates afterwards inherits them): the parameters as the code passed them, whether they
pass botocore's validation against the service model, and the serialized body's size. Requests
to an OpenSearch endpoint are caught at the HTTP layer (urllib3), after opensearch-py has
serialized and signed them. Services with no stand-in here (the fakes of tests/aws/fakes.py)
answer through the same hooks; DynamoDB goes to DynamoDB Local over HTTP.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import boto3
import urllib3
from botocore.validate import ParamValidator


@dataclass
class Sent:
    """One request: who sent it, to which service, what it asked for and how big it was."""

    function: str  # the logical id of the sending Lambda function
    service: str  # botocore's service name, or "opensearch"
    operation: str  # the API operation ("TransactWriteItems"), or "POST /index/_bulk"
    params: dict[str, Any]  # the API parameters; for OpenSearch {"query", "body"}
    payload_bytes: int = 0  # the serialized request body
    invalid: str = ""  # botocore's validation report, when the parameters break the model
    host: str = ""
    # DynamoDB's answer of what the request consumed (its ConsumedCapacity, per table and
    # index), asked for by the recorder, not by the code (tests/aws/capacity.py reads it).
    consumed: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> str:
        text = json.dumps(_clip(self.params), default=str)
        return f"{self.function}: {self.service} {self.operation} {text[:600]}"


def _clip(value: Any) -> Any:
    """Parameters shortened for a report (vectors and long texts elided)."""
    if isinstance(value, list):
        if len(value) > 8 and all(isinstance(v, float) for v in value[:8]):
            return f"<{len(value)} floats>"
        return [_clip(v) for v in value[:20]] + (
            [f"<{len(value) - 20} more>"] if len(value) > 20 else []
        )
    if isinstance(value, dict):
        return {k: _clip(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, str) and len(value) > 200:
        return value[:200] + "..."
    return value


# Answers a request instead of the network: (service, operation, params, host) -> answer, or
# None to let it through. An answer is a botocore "parsed" dict (or raises a ClientError).
Responder = Callable[[str, str, dict[str, Any]], Any]


@dataclass
class Recorder:
    """Records while installed; `function` is whoever is running now (one at a time)."""

    sent: list[Sent] = field(default_factory=list)
    function: str | None = None
    responders: dict[str, Responder] = field(default_factory=dict)
    # OpenSearch hosts answered by a fake: host -> (method, path, query, body) -> (status, body)
    http_fakes: dict[str, Callable[[str, str, dict[str, str], bytes], tuple[int, Any]]] = field(
        default_factory=dict
    )
    _validator: ParamValidator = field(default_factory=ParamValidator)

    @contextmanager
    def as_function(self, logical_id: str) -> Iterator[None]:
        previous, self.function = self.function, logical_id
        try:
            yield
        finally:
            self.function = previous

    # --- botocore ------------------------------------------------------------------------------

    def _params(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        if self.function is None:
            return  # the test's own set-up and the event source mappings' stream reads
        report = self._validator.validate(params, model.input_shape)
        sent = Sent(
            function=self.function,
            service=model.service_model.service_name,
            operation=model.name,
            params=copy.deepcopy(params),
            invalid=report.generate_report() if report.has_errors() else "",
        )
        self.sent.append(sent)
        context["contract_sent"] = sent
        # What it consumed, from DynamoDB's answer (the request is judged as the code sent it:
        # `sent.params` was copied above, and the judge ignores this parameter).
        if sent.service == "dynamodb" and "ReturnConsumedCapacity" in model.input_shape.members:
            params.setdefault("ReturnConsumedCapacity", "INDEXES")

    def _call(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> Any:
        sent: Sent | None = context.get("contract_sent")
        body = params.get("body") or b""
        if sent is not None:
            sent.payload_bytes = len(body if isinstance(body, bytes) else str(body).encode())
        responder = self.responders.get(model.service_model.service_name)
        if responder is None:
            return None
        parsed = responder(model.name, sent.params if sent else {}, body)
        status = parsed.get("ResponseMetadata", {}).get("HTTPStatusCode", 200)
        return _Http(status), parsed

    def _answered(self, parsed: Any, context: dict[str, Any], **_: Any) -> None:
        sent: Sent | None = context.get("contract_sent")
        if sent is None or not isinstance(parsed, dict):
            return
        consumed = parsed.get("ConsumedCapacity")
        if isinstance(consumed, dict):
            consumed = [consumed]
        if isinstance(consumed, list):
            sent.consumed = [c for c in consumed if isinstance(c, dict)]

    # --- urllib3 (OpenSearch) ------------------------------------------------------------------

    def _urlopen(self, original: Callable[..., Any]) -> Callable[..., Any]:
        recorder = self

        def urlopen(
            pool: Any, method: str, url: str, body: Any = None, *args: Any, **kwargs: Any
        ) -> Any:
            fake = recorder.http_fakes.get(pool.host)
            if fake is None:
                return original(pool, method, url, body, *args, **kwargs)
            split = urlsplit(url)
            raw = body if isinstance(body, bytes) else (body or "").encode()
            query = dict(parse_qsl(split.query, keep_blank_values=True))
            if recorder.function is not None:
                recorder.sent.append(
                    Sent(
                        function=recorder.function,
                        service="opensearch",
                        operation=f"{method} {split.path}",
                        params={"query": query, "body": raw.decode(errors="replace")},
                        payload_bytes=len(raw),
                        host=pool.host,
                    )
                )
            status, answer = fake(method, split.path, query, raw)
            data = b"" if answer is None else json.dumps(answer).encode()
            return urllib3.HTTPResponse(
                body=io.BytesIO(data),
                status=status,
                headers={"content-type": "application/json; charset=UTF-8"},
                preload_content=True,
            )

        return urlopen

    @contextmanager
    def installed(self) -> Iterator[Recorder]:
        session = boto3.DEFAULT_SESSION or boto3.setup_default_session() or boto3.DEFAULT_SESSION
        assert session is not None
        events = session.events
        events.register("provide-client-params", self._params, unique_id="contract-params")
        events.register("before-call", self._call, unique_id="contract-call")
        events.register("after-call", self._answered, unique_id="contract-answered")
        original = urllib3.connectionpool.HTTPConnectionPool.urlopen
        urllib3.connectionpool.HTTPConnectionPool.urlopen = self._urlopen(original)  # type: ignore[method-assign]
        try:
            yield self
        finally:
            urllib3.connectionpool.HTTPConnectionPool.urlopen = original  # type: ignore[method-assign]
            events.unregister("provide-client-params", unique_id="contract-params")
            events.unregister("before-call", unique_id="contract-call")
            events.unregister("after-call", unique_id="contract-answered")


class _Http:
    """The HTTP response half of a before-call answer (botocore reads its status)."""

    def __init__(self, status: int) -> None:
        self.status_code = status
        self.headers: dict[str, str] = {}
        self.content = b""
        self.raw = None
