"""The chat API: API Gateway REST API -> chat Lambda (proxy), with access logs, throttling, CORS
and the error envelope; who may call it is stacks/auth.py, its firewall stacks/waf.py."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, Fn, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from chatmemory import schema
from chatmemory.schema import OPENAI_CHAT_PATH, STREAM_HEALTH_PATH
from stacks import nag
from stacks.auth import ApiAuth
from stacks.config import (
    CHAT_TIMEOUT_SECONDS,
    STREAM_TIMEOUT_SECONDS,
    WEB_ADAPTER_LAYER,
    WEB_ADAPTER_LAYER_ACCOUNT,
    WEB_ADAPTER_LAYER_VERSION,
    Config,
)
from stacks.functions import LambdaFactory, retention
from stacks.handoff import Handoff
from stacks.long_term import LongTermMemory
from stacks.models import Models
from stacks.storage import Storage
from stacks.waf import ApiWaf

# The error envelope of the Lambda ({"error": {"code", "message"}}) for answers the gateway
# gives itself (401, 403, 429, 413, 5xx...), so clients parse one shape.
_GATEWAY_ERROR = (
    '{"error": {"code": "$context.error.responseType", "message": $context.error.messageString}}'
)


# The API's one stage (its URL ends with it; API Gateway names its execution logs after it).
STAGE = "v1"


class ChatApi(Construct):
    """REST API and chat Lambda, access logs, throttling, CORS; `auth` (Cognito or IAM) and,
    when configured, `waf` are built in this construct's scope (their ids predate the split)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: Config,
        factory: LambdaFactory,
        storage: Storage,
        models: Models,
        long_term: LongTermMemory,
        handoff: Handoff,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        # What a chat message's functions read (the chat function and the stream function).
        self._chat_environment = {
            **storage.environment(
                storage.sessions,
                storage.conversations,
                storage.users,
                storage.records,
                storage.checkpoints,
            ),
            **models.environment,
            **long_term.environment,
            **handoff.environment,
            schema.ENV_MAX_INPUT_CHARS: str(config.max_input_chars),
            schema.ENV_TURN_TTL_DAYS: str(config.turn_ttl_days),
            # API Gateway answers preflights; the Lambda adds the header to each answer.
            schema.ENV_CORS_ORIGINS: ",".join(config.cors_origins),
        }
        self.handler = factory.function(
            self,
            "Chat",
            handler="handlers.chat_api.handler",
            description="Chat API: sessions, messages, recall",
            environment=self._chat_environment,
            # API Gateway stops waiting after 29 s; model calls are budgeted below that.
            timeout=Duration.seconds(CHAT_TIMEOUT_SECONDS),
            memory_mb=1024,
            snap_start=config.chat_snap_start,
            # Kept out of the account's pool for the chat alone (0: none), so background work
            # can never take the chat's concurrency (docs/cost.md#capacity).
            reserved_concurrency=config.chat_reserved_concurrency,
        )
        # What API Gateway calls: the function, or with SnapStart the alias of its newest
        # version (only published versions are snapshotted).
        self.target: lambda_.IFunction = self.handler
        if config.chat_snap_start:
            self.target = lambda_.Alias(
                self, "ChatLive", alias_name="live", version=self.handler.current_version
            )
        self._grant_chat(self.handler, storage, models, long_term, handoff)
        self.stream_handler = self._stream_function(
            config, factory, storage, models, long_term, handoff
        )

        self.auth = ApiAuth(self, config=config)

        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=retention(config.log_retention_days),
            removal_policy=RemovalPolicy.RETAIN if config.production else RemovalPolicy.DESTROY,
        )
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            # Named after the stack (unique in the account and region): API Gateway's metrics
            # are per API name, and CDK's default name ("RestApi") is every default-named API's.
            rest_api_name=Stack.of(self).stack_name,
            description="Chat memory API",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # The account-level role that lets API Gateway write access and execution logs.
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name=STAGE,
                throttling_rate_limit=config.throttle_rate,
                throttling_burst_limit=config.throttle_burst,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                metrics_enabled=True,
                tracing_enabled=True,
            ),
            default_cors_preflight_options=apigw.CorsOptions(
                allow_origins=list(config.cors_origins),
                # The chat handler's methods (PATCH: correcting a profile record; PUT: a turn's
                # feedback in the store-only API).
                allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
                allow_headers=[
                    "Authorization",
                    "Content-Type",
                    "X-Amz-Date",
                    "X-Amz-Security-Token",
                    # The OpenAI-compatible route's session (docs/openai.md).
                    "X-Session-Id",
                ],
                max_age=Duration.hours(1),
            ),
            default_method_options=self.auth.method_options,
        )
        self.execution_logs = self._execution_logs(config)
        integration = apigw.LambdaIntegration(self.target, proxy=True, allow_test_invoke=False)
        # The chat function's integration: what a route made for the stream function gives
        # its resources' other requests (streamed_route).
        self.chat_integration = integration
        # Every route goes to the Lambda, which answers 404 for unknown paths; the routes are
        # defined once, in the handler.
        self.rest_api.root.add_proxy(default_integration=integration, any_method=True)
        # The stream function's integration (API Gateway streams its answer as written), for
        # the streamed message route and any other route answered by it.
        self.stream_integration = apigw.LambdaIntegration(
            self.stream_handler,
            proxy=True,
            allow_test_invoke=False,
            response_transfer_mode=apigw.ResponseTransferMode.STREAM,
            timeout=Duration.seconds(STREAM_TIMEOUT_SECONDS),
        )
        self.streamed_route("POST", "sessions", "{session_id}", "messages", "stream")
        # The OpenAI-compatible chat route streams with `stream: true` and answers one JSON body
        # without (handlers/routes/openai.py); GET /v1/models stays the chat function's.
        self.streamed_route("POST", *OPENAI_CHAT_PATH.strip("/").split("/"))
        self._gateway_errors()
        self._acknowledge()
        self.auth.authorize_agents(self.rest_api, self.handler, self.stream_handler)
        self.auth.acknowledge(self.rest_api)
        self.waf = ApiWaf(self, stage=self.rest_api.deployment_stage) if config.waf else None

        stack = Stack.of(self)
        CfnOutput(stack, "ApiUrl", value=self.rest_api.url, description="Base URL of the chat API")
        CfnOutput(stack, "Region", value=stack.region)

    def _grant_chat(
        self,
        function: lambda_.Function,
        storage: Storage,
        models: Models,
        long_term: LongTermMemory,
        handoff: Handoff,
        *,
        stream: bool = False,
    ) -> None:
        """What a chat message may do (the chat function's routes; the stream function answers
        a message on the same pipeline, so the same), with the models' streaming calls for
        `stream`."""
        # Exactly the calls of the chat routes (chatmemory/adapters/dynamodb.py): BatchGetItem
        # reads a session with its caller's state; a new session's transaction checks the
        # caller's generation (ConditionCheckItem); an import writes turns in batches. Every
        # chat answer's transaction (complete_stack) and a hand-off's (mark_for_agent) check
        # the session in one of their items (ConditionCheckItem on sessions). Auto-recall's
        # small-talk vectors are one item of the sessions table (adapters/dynamodb/
        # vector_cache.py): read by each cold start (GetItem), written by the first (PutItem).
        storage.grant(
            function,
            storage.sessions,
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:ConditionCheckItem",
            # A caller's sessions (user index: listing, end_previous, GET /deletions) and the
            # agents' queue (hand-off index); the sweeper's open-sessions index is not read.
            indexes=(schema.USER_SESSIONS_INDEX.name, schema.HANDOFF_SESSIONS_INDEX.name),
        )
        storage.grant(
            function,
            storage.conversations,
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:BatchWriteItem",
        )
        storage.grant(
            function,
            storage.users,
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
            "dynamodb:UpdateItem",
            "dynamodb:ConditionCheckItem",
        )
        # The caller's profile (services/profile/profile.py): get_record (GetItem: a record, and
        # each hit of GET /memories/records?q=), list_records and records_of_owner (Query of the
        # caller's partition), put_record and save_record (conditional PutItem: POST and PATCH
        # /memories/records, /remember), mark_record_deleting (UpdateItem: DELETE) with the purge
        # done in the request (remove_deleted_record: a conditional DeleteItem, so the id is
        # free at once), and live (auto-recall and record search: one BatchGetItem over the
        # sessions and records). POST /memories/namespaces reads the record-keys index
        # (record_keys: a Query of the caller's keys and namespaces), and every chat turn the
        # profile-records index (profile_records: the profile block's candidates). A statement
        # is written with its claim (put_stated_record: a transaction of two PutItems).
        storage.grant(
            function,
            storage.records,
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:BatchGetItem",
            indexes=(schema.RECORD_KEYS_INDEX.name, schema.PROFILE_RECORDS_INDEX.name),
        )
        # LangGraph checkpoints (adapters/dynamodb/checkpoints.py): a checkpoint by id (GetItem)
        # or the newest and a listing (Query), the values of its channels and the sizes of the
        # carried-over ones (BatchGetItem), its writes (Query); a put writes values in batches
        # (BatchWriteItem) and then the checkpoint (PutItem), a pending write conditionally.
        storage.grant(
            function,
            storage.checkpoints,
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:BatchGetItem",
            "dynamodb:PutItem",
            "dynamodb:BatchWriteItem",
        )
        models.grant_text(function, stream=stream)
        models.grant_embed(function)
        # Every search of the chat (auto-recall, /past, /verified, the records search) is one
        # hybrid _msearch of the index it reads; a record the caller states is compared with
        # the nearest ones first (a _search of the memory index). It is indexed at once (bulk),
        # and a correction that lost to a delete takes its entry back (delete by query).
        # Deleting sessions and forgetting stay the purge's work.
        long_term.grant(
            function,
            search=[schema.MEMORY_INDEX],
            msearch=schema.LONG_TERM_INDEXES,
            bulk=[schema.MEMORY_INDEX],
            delete_by_query=[schema.MEMORY_INDEX],
        )
        # A hand-off and a hand-back each publish one event (services: the hand-off's events).
        handoff.grant_publish(function)

    def _stream_function(
        self,
        config: Config,
        factory: LambdaFactory,
        storage: Storage,
        models: Models,
        long_term: LongTermMemory,
        handoff: Handoff,
    ) -> lambda_.Function:
        """The stream function (POST /sessions/{id}/messages/stream): the chat's environment and
        grants, and the models' streaming calls; its web server (handlers/stream_server.py, run
        by stream.sh) behind the AWS Lambda Web Adapter's layer in response_stream mode, which
        streams the answer to API Gateway as it is written (docs/decisions.md). Its own timeout:
        a streamed answer is not bound by API Gateway's 29 s."""
        stack = Stack.of(self)
        adapter = lambda_.LayerVersion.from_layer_version_arn(
            self,
            "WebAdapterLayer",
            f"arn:{stack.partition}:lambda:{stack.region}:{WEB_ADAPTER_LAYER_ACCOUNT}:layer:"
            f"{WEB_ADAPTER_LAYER}:{WEB_ADAPTER_LAYER_VERSION}",
        )
        function = factory.function(
            self,
            "Stream",
            handler="stream.sh",
            description="Chat API: a message's answer streamed as server-sent events",
            environment={
                **self._chat_environment,
                # The adapter runs stream.sh (the web server) and streams its answers.
                "AWS_LAMBDA_EXEC_WRAPPER": "/opt/bootstrap",
                "AWS_LWA_INVOKE_MODE": "response_stream",
                "AWS_LWA_READINESS_CHECK_PATH": STREAM_HEALTH_PATH,
            },
            timeout=Duration.seconds(STREAM_TIMEOUT_SECONDS),
            memory_mb=1024,
            layers=[adapter],
        )
        self._grant_chat(function, storage, models, long_term, handoff, stream=True)
        return function

    def streamed_route(self, method: str, *parts: str) -> apigw.Method:
        """`method` on the path `parts` answered by the stream function (with the API's
        authorizer, as every method). The resources made on the way answer every other request
        as the root's proxy does (the chat function): each takes ANY, and one without a
        path-variable child a {proxy+} below it, so that no path the proxy answered before is
        taken from it."""
        chat = self.chat_integration
        resource = self.rest_api.root
        for part in parts:
            child = resource.get_resource(part)
            if child is None:
                child = resource.add_resource(part)
                child.add_method("ANY", chat)
            resource = child
        for parent in _ancestors(resource):
            variable = [c for c in parent.node.children if _is_variable(c)]
            if not variable:
                parent.add_proxy(default_integration=chat, any_method=True)
        return resource.add_method(method, self.stream_integration)

    def _execution_logs(self, config: Config) -> logs.LogGroup:
        """The stage's execution-log group (logging_level ERROR), made here with the stack's
        retention: API Gateway would otherwise create it on its first error log, outside the
        template, kept forever. The stage waits for it, so API Gateway never makes it first."""
        stage = self.rest_api.deployment_stage
        group = logs.LogGroup(
            self,
            "ExecutionLogs",
            log_group_name=Fn.join(
                "", ["API-Gateway-Execution-Logs_", self.rest_api.rest_api_id, f"/{STAGE}"]
            ),
            retention=retention(config.log_retention_days),
            removal_policy=RemovalPolicy.RETAIN if config.production else RemovalPolicy.DESTROY,
        )
        stage.node.add_dependency(group)
        return group

    def _gateway_errors(self) -> None:
        origin = self._config.cors_origins[0]
        headers = {"Access-Control-Allow-Origin": f"'{origin}'"}
        for construct_id, kind in (
            ("Default4xx", apigw.ResponseType.DEFAULT_4_XX),
            ("Default5xx", apigw.ResponseType.DEFAULT_5_XX),
        ):
            self.rest_api.add_gateway_response(
                construct_id,
                type=kind,
                response_headers=headers,
                templates={"application/json": _GATEWAY_ERROR},
            )

    def _acknowledge(self) -> None:
        api = self.rest_api
        nag.acknowledge(
            api,
            "AwsSolutions-APIG2",
            "One proxy route carries every request to the chat Lambda, which validates paths, "
            "query strings and JSON bodies against the API's pydantic models (the OpenAPI "
            "contract) and answers 400 with a JSON error; a gateway validator would have no "
            "models to check.",
        )
        nag.acknowledge(
            api.node.find_child("CloudWatchRole"),
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonAPIGatewayPushToCloudWatchLogs]",
            "API Gateway's account-level logging role (needed for access and execution logs) "
            "uses the AWS managed policy that AWS documents for it.",
        )
        if not self._config.waf:
            nag.acknowledge(
                api,
                "AwsSolutions-APIG3",
                "WAF costs a monthly fee per web ACL and rule; it is on for chatmemory:stage=prod "
                "or chatmemory:waf=true. Throttling and the Lambda's input limits stay on.",
            )


def _ancestors(resource: apigw.IResource) -> list[apigw.IResource]:
    """The resources from below the root down to `resource`'s parent."""
    found: list[apigw.IResource] = []
    parent = resource.parent_resource
    while parent is not None and parent.parent_resource is not None:
        found.append(parent)
        parent = parent.parent_resource
    return found[::-1]


def _is_variable(child: object) -> bool:
    """A path-variable resource ({id} or {proxy+}): a resource has at most one."""
    return isinstance(child, apigw.ResourceBase) and child.path.rsplit("/", 1)[-1].startswith("{")
