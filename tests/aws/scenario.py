"""The deployed system on a laptop, as its template defines it, run through a full scenario.

Every Lambda function of a synthesized template runs here with the environment its template
gives it (table names, endpoints, model ids, bus name, all resolved for one account and
region), its stream triggers are the template's event source mappings (filters, batch sizes,
retries) fed from DynamoDB Local's streams, and every AWS request it sends is recorded with the
function that sent it, for tests/aws/judge.py to check.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3

from chatmemory import schema, wiring
from local.gateway.events import http_reply, load_routes, proxy_event
from local.lambda_context import load_handler
from local.poller import StreamPoller
from local.poller.mappings import StreamMapping
from tests.aws import fakes
from tests.aws.recorder import Recorder, Sent
from tests.aws.template import Deployment, Function
from tests.s3vectors_fake import FakeS3Vectors, Index


@dataclass
class Context:
    """The LambdaContext of one invocation of a deployed function."""

    function: Function
    region: str
    account: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 1024
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = "contract"
    _started: float = field(default_factory=time.monotonic)

    @property
    def function_name(self) -> str:
        return self.function.name

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{self.function.name}"

    def get_remaining_time_in_millis(self) -> int:
        left = self.function.timeout_seconds - (time.monotonic() - self._started)
        return max(int(left * 1000), 0)


@dataclass
class Answer:
    status: int
    body: Any


class DeployedWorld:
    """One deployment of the template on DynamoDB Local and the fakes, recording every request."""

    def __init__(self, deployment: Deployment, dynamodb_endpoint: str, state: Path) -> None:
        self.deployment = deployment
        self.region = deployment.region
        self.functions = deployment.functions()
        self.recorder = Recorder()
        self.dynamodb_endpoint = dynamodb_endpoint
        self.state = state
        self.opensearch: fakes.FakeOpenSearch | None = None
        self.vectors: FakeS3Vectors | None = None
        # Which function's model calls fail (a model outage), or None.
        self.models_down_for: str | None = None
        self.routes = load_routes()
        self._active: str | None = None
        self._env_keys: set[str] = set()
        chat = self.by_handler("handlers.chat_api.handler")
        env = chat.environment
        self.models = fakes.Models(
            text_endpoint=env.get(schema.ENV_TEXT_ENDPOINT, ""),
            text_format=env.get(schema.ENV_TEXT_FORMAT, ""),
            embed_endpoint=env.get(schema.ENV_EMBED_ENDPOINT, ""),
            embed_format=env.get(schema.ENV_EMBED_FORMAT, ""),
            dimension=int(env[schema.ENV_EMBED_DIMENSION]),
            fail=lambda text: self.models_down_for == self.recorder.function,
        )
        self.table_names = self._table_names()

    # --- functions --------------------------------------------------------------------------

    def by_handler(self, handler: str) -> Function:
        (found,) = [f for f in self.functions.values() if f.handler == handler]
        return found

    def _table_names(self) -> dict[str, str]:
        names: dict[str, str] = {}
        for function in self.functions.values():
            for spec in schema.TABLES:
                if spec.env_var in function.environment:
                    names[spec.logical_name] = function.environment[spec.env_var]
        return names

    @contextmanager
    def running(self, function: Function) -> Iterator[Context]:
        """`function`'s environment and identity while it runs (caches rebuilt per function,
        as each Lambda function has its own)."""
        if self._active != function.logical_id:
            for key in self._env_keys:
                os.environ.pop(key, None)
            env = {
                **function.environment,
                # Not the template's: the purge's wait for the user index to settle (30 s) is
                # time, not a request; DynamoDB Local instead of DynamoDB's endpoint.
                **(
                    {schema.ENV_PURGE_SETTLE_SECONDS: "0"}
                    if schema.ENV_PURGE_SETTLE_SECONDS in function.environment
                    else {}
                ),
                schema.ENV_DYNAMODB_ENDPOINT: self.dynamodb_endpoint,
                "AWS_REGION": self.region,
                "AWS_DEFAULT_REGION": self.region,
                "AWS_LAMBDA_FUNCTION_NAME": function.name,
            }
            os.environ.update(env)
            self._env_keys = set(env)
            wiring.clear_caches()
            self._active = function.logical_id
        with self.recorder.as_function(function.logical_id):
            yield Context(function, self.region, self.deployment.account)

    def invoke(self, function: Function, event: dict[str, Any]) -> Any:
        """Run `function` on `event` as Lambda would; the invocation itself is recorded (its
        request and response payloads have Lambda's limits)."""
        handler = load_handler(function.handler)
        with self.running(function) as context:
            reply = handler(event, context)
        self.recorder.sent.append(
            Sent(
                function=function.logical_id,
                service="lambda",
                operation="Invoke",
                params={"response_bytes": len(json.dumps(reply, default=str).encode())},
                # API Gateway sends the body as the client did: UTF-8, not JSON-escaped.
                payload_bytes=len(json.dumps(event, ensure_ascii=False).encode()),
            )
        )
        return reply

    # --- set-up -----------------------------------------------------------------------------

    @contextmanager
    def started(self) -> Iterator[DeployedWorld]:
        with self.recorder.installed():
            self._tables()
            self._long_term()
            self.recorder.responders.update(
                {
                    "sagemaker-runtime": self.models.sagemaker,
                    "bedrock-runtime": self.models.bedrock,
                    "events": fakes.events,
                }
            )
            self.poller = self._poller()
            try:
                yield self
            finally:
                for key in self._env_keys:
                    os.environ.pop(key, None)
                wiring.clear_caches()
                if self.vectors is not None:  # off the default session: later clients are real
                    self._session_events().unregister("before-send.s3vectors", self.vectors.answer)

    def stored_record(self, owner: str, record_id: str) -> dict[str, Any]:
        """A record item as stored (DynamoDB JSON), read outside every function."""
        return self._client("dynamodb").get_item(
            TableName=self.table_names[schema.RECORDS.logical_name],
            Key={"user_id": {"S": owner}, "record_id": {"S": record_id}},
            ConsistentRead=True,
        )["Item"]

    def _client(self, service: str) -> Any:
        return boto3.client(service, endpoint_url=self.dynamodb_endpoint, region_name=self.region)

    def _tables(self) -> None:
        client = self._client("dynamodb")
        for spec in schema.TABLES:
            client.create_table(**spec.create_table_kwargs(self.table_names[spec.logical_name]))

    def _long_term(self) -> None:
        d = self.deployment
        for logical in d.of_type("AWS::OpenSearchService::Domain"):
            self.opensearch = fakes.FakeOpenSearch()
            self.recorder.http_fakes[d.get_att(logical, "DomainEndpoint")] = self.opensearch
            (setup,) = [
                f for f in self.functions.values() if f.handler == "handlers.index_setup.on_event"
            ]
            (resource,) = d.of_type("Custom::LongTermIndexes").values()
            properties = d.resolve(resource["Properties"])
            self.invoke(setup, _custom_resource_create(properties))
        buckets = d.of_type("AWS::S3Vectors::VectorBucket")
        if buckets:
            ((logical, bucket),) = buckets.items()
            shim = SimpleNamespace(meta=SimpleNamespace(events=self._session_events()))
            self.vectors = FakeS3Vectors(
                shim, str(d.resolve(bucket["Properties"]["VectorBucketName"]))
            )
            for index in d.of_type("AWS::S3Vectors::Index").values():
                props = d.resolve(index["Properties"])
                self.vectors.indexes[props["IndexName"]] = Index(
                    {
                        "dataType": props["DataType"],
                        "dimension": int(props["Dimension"]),
                        "distanceMetric": props["DistanceMetric"],
                        "metadataConfiguration": {
                            "nonFilterableMetadataKeys": props["MetadataConfiguration"][
                                "NonFilterableMetadataKeys"
                            ]
                        },
                    }
                )

    @staticmethod
    def _session_events() -> Any:
        """The events of boto3's default session, which every client made later copies."""
        session = boto3.DEFAULT_SESSION
        assert session is not None
        return session.events

    def _poller(self) -> StreamPoller:
        """The template's event source mappings, each invoking its function as deployed."""
        d = self.deployment
        physical_to_logical = {v: k for k, v in self.table_names.items()}
        mappings, handlers = [], {}
        for logical, esm in d.of_type("AWS::Lambda::EventSourceMapping").items():
            props = esm["Properties"]
            table_logical = props["EventSourceArn"]["Fn::GetAtt"][0]
            table = physical_to_logical[d.ref(table_logical)]
            function = next(
                f for f in self.functions.values() if f.name == d.resolve(props["FunctionName"])
            )
            mappings.append(
                StreamMapping(
                    name=logical,
                    table=table,
                    handler=function.handler,
                    filters=tuple(
                        json.loads(f["Pattern"])
                        for f in props.get("FilterCriteria", {}).get("Filters", [])
                    ),
                    batch_size=int(props["BatchSize"]),
                    max_retry_attempts=int(props["MaximumRetryAttempts"]),
                    bisect_batch_on_error=bool(props.get("BisectBatchOnFunctionError")),
                    report_batch_item_failures="ReportBatchItemFailures"
                    in props.get("FunctionResponseTypes", []),
                    timeout_seconds=function.timeout_seconds,
                )
            )
            handlers[logical] = self._stream_handler(function)
        return StreamPoller(
            self._client("dynamodb"),
            self._client("dynamodbstreams"),
            checkpoint_path=self.state / "checkpoints.json",
            dead_letter_path=self.state / "dead-letters.jsonl",
            mappings=mappings,
            table_names=self.table_names,
            handlers=handlers,
        )

    def _stream_handler(self, function: Function) -> Any:
        def invoke(event: dict[str, Any], _context: Any) -> Any:
            return self.invoke(function, event)

        return invoke

    # --- the API ----------------------------------------------------------------------------

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        user: str = "alice",
        agent: bool = False,
        request_time: float | None = None,
    ) -> Answer:
        chat = self.by_handler("handlers.chat_api.handler")
        groups = chat.environment.get(schema.ENV_AGENT_GROUP) if agent else None
        event = proxy_event(
            method=method,
            target=path,
            headers=[("Content-Type", "application/json")],
            # As the Python client sends it: UTF-8, not JSON-escaped.
            body=None if body is None else json.dumps(body, ensure_ascii=False),
            user_id=user,
            routes=self.routes,
            groups=groups,
        )
        if request_time is not None:
            event["requestContext"]["requestTimeEpoch"] = int(request_time * 1000)
        status, _, payload = http_reply(self.invoke(chat, event))
        return Answer(status, json.loads(payload) if payload else None)

    def stream(self, path: str, body: Any, *, user: str = "alice") -> tuple[int, list[Any]]:
        """POST `body` to a streamed route as the stream function answers it (its web server
        behind the Lambda Web Adapter hands handlers/stream.py the same proxy event): the
        status and the events, (name, data) each; a JSON error is one ("json", data)."""
        from chatmemory import deadline
        from handlers import stream

        function = self.by_handler("stream.sh")
        event = proxy_event(
            method="POST",
            target=path,
            headers=[("Content-Type", "application/json")],
            body=json.dumps(body, ensure_ascii=False),
            user_id=user,
            routes=self.routes,
        )
        with self.running(function) as context:
            remaining = stream.request_deadline(context.get_remaining_time_in_millis())
            with deadline.within(remaining):
                answer = stream.answer(event, wiring.settings().cors_origins)
                raw = b"".join(answer.body)
        self.recorder.sent.append(
            Sent(
                function=function.logical_id,
                service="lambda",
                operation="InvokeWithResponseStream",
                params={"response_bytes": len(raw)},
                payload_bytes=len(json.dumps(event, ensure_ascii=False).encode()),
            )
        )
        if raw.startswith(b"data:"):  # OpenAI's chunks (POST /v1/chat/completions)
            blocks = raw.decode().strip().split("\n\n")
            data = [block.removeprefix("data: ") for block in blocks]
            return answer.status, [("data", d if d == "[DONE]" else json.loads(d)) for d in data]
        if not raw.startswith(b"event:"):
            return answer.status, [("json", json.loads(raw))]
        events = []
        for block in raw.decode().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if "event" in fields:
                events.append((fields["event"], json.loads(fields["data"])))
        return answer.status, events

    def ok(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        answer = self.call(method, path, body, **kwargs)
        assert 200 <= answer.status < 300, (method, path, answer)
        return answer.body

    def drain(self) -> None:
        self.poller.drain(timeout=120)


def _custom_resource_create(properties: dict[str, Any]) -> dict[str, Any]:
    """What CDK's Provider framework sends the index setup on a stack's creation."""
    return {
        "RequestType": "Create",
        "ServiceToken": "arn:aws:lambda:framework",
        "ResponseURL": "...",
        "StackId": "arn:aws:cloudformation:stack",
        "RequestId": str(uuid.uuid4()),
        "LogicalResourceId": "LongTermIndexes",
        "ResourceType": "Custom::LongTermIndexes",
        "ResourceProperties": properties,
    }
