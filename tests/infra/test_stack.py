"""The default deployment, property by property: what makes it safe and what keeps memories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Capture, Match

from chatmemory import schema
from stacks import sizing
from stacks.config import (
    CHAT_TIMEOUT_SECONDS,
    POWERTOOLS_LAYER_ACCOUNT,
    PURGE_TIMEOUT_SECONDS,
    Config,
)
from stacks.monitoring import CALLER_WATCHED
from tests.infra.synth import Synth, render, statements

# The defaults a synth resolves (the planned load's among them: stacks/sizing.py).
CONFIG = Config.from_mapping({})
# The only actions AWS offers no resource-level permissions for, among those the app uses.
STAR_ONLY_ACTIONS = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "dynamodb:ListStreams"}
# Each stream trigger of schema.py: the function that consumes it and its dead-letter queue.
TRIGGERS = {
    schema.CONSOLIDATION_TRIGGER.name: ("Consolidate", "ConsolidationDlq"),
    schema.COMPACTION_TRIGGER.name: ("Compact", "CompactionDlq"),
    schema.SESSION_PURGE_TRIGGER.name: ("Purge", "SessionPurgeDlq"),
    schema.USER_PURGE_TRIGGER.name: ("Purge", "UserPurgeDlq"),
    schema.RECORD_PURGE_TRIGGER.name: ("Purge", "RecordPurgeDlq"),
}
FUNCTIONS = {
    "Chat": "handlers.chat_api.handler",
    # The streamed message route's web server, behind the Lambda Web Adapter's layer.
    "Stream": "stream.sh",
    "Consolidate": "handlers.consolidate.handler",
    "Compact": "handlers.compact.handler",
    "Purge": "handlers.purge.handler",
    "SweepIdle": "handlers.sweep_idle.handler",
    "IndexSetup": "handlers.index_setup.on_event",
    "Ingest": "handlers.ingest.handler",
    "Redrive": "handlers.redrive.handler",
}
# The roles mapped to the runtime's OpenSearch role: every function that touches long-term memory.
LONG_TERM_ROLES = ("Chat", "Stream", "Consolidate", "Purge", "Ingest", "Redrive")


def _role_id(synth: Synth, function: Any) -> str:
    return synth.stack.get_logical_id(function.role.node.default_child)


def _functions(synth: Synth) -> dict[str, Any]:
    return dict(synth.stack.functions.functions)


def _table_of(synth: Synth, spec: schema.TableSpec) -> Any:
    return {
        schema.SESSIONS.logical_name: synth.stack.storage.sessions,
        schema.CONVERSATIONS.logical_name: synth.stack.storage.conversations,
        schema.USERS.logical_name: synth.stack.storage.users,
        schema.RECORDS.logical_name: synth.stack.storage.records,
        schema.CHECKPOINTS.logical_name: synth.stack.storage.checkpoints,
    }[spec.logical_name]


# --- stream processing ----------------------------------------------------------------------


@pytest.mark.parametrize("trigger", schema.STREAM_TRIGGERS, ids=lambda t: t.name)
def test_stream_mapping_isolates_poison_records_and_uses_the_schema_trigger(
    default: Synth, trigger: schema.StreamTrigger
) -> None:
    stack = default.stack
    function, dlq = TRIGGERS[trigger.name]
    function_id = default.logical_id(_functions(default)[function])
    table_id = default.logical_id(_table_of(default, trigger.table))
    queue_id = default.logical_id(stack.consolidation.dead_letter_queues[dlq])
    handler = default.json["Resources"][function_id]["Properties"]["Handler"]
    assert handler == trigger.handler
    filters = Capture()
    default.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionName": {"Ref": function_id},
            "EventSourceArn": {"Fn::GetAtt": [table_id, "StreamArn"]},
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BisectBatchOnFunctionError": True,
            "MaximumRetryAttempts": CONFIG.stream_retry_attempts,
            "MaximumRecordAgeInSeconds": Match.any_value(),
            "StartingPosition": "TRIM_HORIZON",
            "BatchSize": trigger.batch_size,
            "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [queue_id, "Arn"]}}},
            "FilterCriteria": {"Filters": filters},
        },
    )
    assert filters.as_array() == [{"Pattern": json.dumps(p)} for p in trigger.filters]
    assert [json.loads(f["Pattern"]) for f in filters.as_array()] == list(trigger.filters)


def test_every_schema_trigger_is_one_mapping_with_its_own_dead_letter_queue(
    default: Synth,
) -> None:
    mappings = default.resources("AWS::Lambda::EventSourceMapping").values()
    assert len(mappings) == len(schema.STREAM_TRIGGERS)
    destinations = [
        m["Properties"]["DestinationConfig"]["OnFailure"]["Destination"] for m in mappings
    ]
    assert len({json.dumps(d) for d in destinations}) == len(schema.STREAM_TRIGGERS)
    assert set(default.stack.consolidation.dead_letter_queues) == {
        dlq for _, dlq in TRIGGERS.values()
    }


def test_record_age_limits_are_bounded_and_within_the_stream_retention(default: Synth) -> None:
    ages = sorted(
        m["Properties"]["MaximumRecordAgeInSeconds"]
        for m in default.resources("AWS::Lambda::EventSourceMapping").values()
    )
    assert ages == sorted(
        [
            CONFIG.compaction_max_record_age_hours * 3600,
            CONFIG.consolidation_max_record_age_hours * 3600,
            CONFIG.purge_max_record_age_hours * 3600,  # a session's purge
            CONFIG.purge_max_record_age_hours * 3600,  # a user's forget
            CONFIG.purge_max_record_age_hours * 3600,  # a profile record's delete
        ]
    )
    assert all(age <= 24 * 3600 for age in ages)  # DynamoDB Streams keeps records 24 h


def test_consolidation_is_bounded_by_the_model_quota_not_the_shards_and_alarms_when_behind(
    default: Synth,
) -> None:
    """Consolidation runs at most what the text model's background share allows (its reserved
    concurrency, planned from textModelRequestsPerMinute), each shard of the sessions stream
    feeds several batches at once (the parallelization factor), and an alarm fires when the
    oldest ended session has waited unconsolidatedAlarmHours; the chat reserves nothing unless
    asked."""
    quota = sizing.ModelQuota(CONFIG.text_model_requests_per_minute, CONFIG.background_model_share)
    assert CONFIG.consolidation_concurrency == sizing.consolidation_concurrency(quota) > 1
    resources = default.json["Resources"]
    consolidate = resources[default.logical_id(default.stack.consolidation.consolidate)]
    assert (
        consolidate["Properties"]["ReservedConcurrentExecutions"]
        == CONFIG.consolidation_concurrency
    )
    compact = resources[default.logical_id(default.stack.consolidation.compact)]
    assert compact["Properties"]["ReservedConcurrentExecutions"] == CONFIG.compaction_concurrency
    chat = resources[default.logical_id(default.stack.api.handler)]
    assert "ReservedConcurrentExecutions" not in chat["Properties"]
    default.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionName": {"Ref": default.logical_id(default.stack.consolidation.consolidate)},
            "ParallelizationFactor": CONFIG.consolidation_parallelization,
        },
    )
    assert CONFIG.consolidation_parallelization == 10
    default.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": schema.OLDEST_UNCONSOLIDATED_METRIC,
            "Namespace": schema.METRICS_NAMESPACE,
            "Statistic": "Maximum",
            "Threshold": CONFIG.unconsolidated_alarm_hours * 3600,
        },
    )


def test_purge_waits_longer_than_a_chat_request_can_run_and_fits_its_timeout(
    default: Synth,
) -> None:
    resources = default.json["Resources"]
    purge = resources[default.logical_id(default.stack.consolidation.purge)]["Properties"]
    chat = resources[default.logical_id(default.stack.api.handler)]["Properties"]
    settle = float(purge["Environment"]["Variables"][schema.ENV_PURGE_SETTLE_SECONDS])
    assert settle == CONFIG.purge_settle_seconds
    assert chat["Timeout"] == CHAT_TIMEOUT_SECONDS
    assert settle > chat["Timeout"]
    assert purge["Timeout"] == PURGE_TIMEOUT_SECONDS == 5 * 60
    assert settle < purge["Timeout"] / 2
    assert purge["Handler"] == "handlers.purge.handler"


def test_dead_letter_queues_are_encrypted_and_refuse_plain_http(default: Synth) -> None:
    queues = default.resources("AWS::SQS::Queue")
    assert len(queues) == len(schema.STREAM_TRIGGERS)
    for queue_id, queue in queues.items():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
        assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
        default.template.has_resource_properties(
            "AWS::SQS::QueuePolicy",
            {
                "Queues": [{"Ref": queue_id}],
                "PolicyDocument": {
                    "Statement": Match.array_with(
                        [
                            Match.object_like(
                                {
                                    "Effect": "Deny",
                                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                                }
                            )
                        ]
                    )
                },
            },
        )


def test_idle_sweeper_runs_on_the_configured_schedule(default: Synth) -> None:
    sweep_id = default.logical_id(default.stack.consolidation.sweep)
    default.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": f"rate({CONFIG.sweep_minutes} minutes)",
            "State": "ENABLED",
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": [sweep_id, "Arn"]}})],
        },
    )
    env = default.json["Resources"][sweep_id]["Properties"]["Environment"]["Variables"]
    assert env[schema.ENV_IDLE_MINUTES] == str(CONFIG.idle_minutes)


# --- Lambda functions -----------------------------------------------------------------------


def test_every_function_uses_the_powertools_layer_arm64_tracing_and_json_logs(
    default: Synth,
) -> None:
    # Every function of the app; the other one is CDK's custom-resource framework (below).
    provider = default.logical_id(default.stack.long_term.provider_function)
    functions = {
        key: value
        for key, value in default.resources("AWS::Lambda::Function").items()
        if key != provider
    }
    assert len(functions) == len(FUNCTIONS)
    assert {
        name: functions[default.logical_id(f)]["Properties"]["Handler"]
        for name, f in _functions(default).items()
    } == FUNCTIONS
    layer = (
        f"arn:${{AWS::Partition}}:lambda:${{AWS::Region}}:{POWERTOOLS_LAYER_ACCOUNT}:layer:"
        f"AWSLambdaPowertoolsPythonV3-python312-arm64:{CONFIG.powertools_layer_version}"
    )
    keys = set()
    for function in functions.values():
        props = function["Properties"]
        layers = render(props["Layers"])
        # The stream function's other layer is the web adapter (test_stream_function.py).
        assert layer in layers and len(layers) == (2 if props["Handler"] == "stream.sh" else 1)
        assert props["Runtime"] == "python3.12"
        assert props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["LoggingConfig"]["LogFormat"] == "JSON"
        assert "Ref" in props["LoggingConfig"]["LogGroup"]
        # pydantic's search for plugins through every installed distribution is off
        assert props["Environment"]["Variables"]["PYDANTIC_DISABLE_PLUGINS"] == "__all__"
        keys.add(props["Code"]["S3Key"])
    # One asset for all of them.
    assert len(keys) == 1


def test_function_log_groups_expire(default: Synth) -> None:
    groups = default.resources("AWS::Logs::LogGroup")
    assert groups
    for group in groups.values():
        assert group["Properties"]["RetentionInDays"] == CONFIG.log_retention_days


def test_functions_get_table_names_and_settings_through_schema_env_vars(default: Synth) -> None:
    stack = default.stack
    chat_id = default.logical_id(stack.api.handler)
    env = default.json["Resources"][chat_id]["Properties"]["Environment"]["Variables"]
    assert env[schema.ENV_SESSIONS_TABLE] == {"Ref": default.logical_id(stack.storage.sessions)}
    assert env[schema.ENV_CONVERSATIONS_TABLE] == {
        "Ref": default.logical_id(stack.storage.conversations)
    }
    assert env[schema.ENV_USERS_TABLE] == {"Ref": default.logical_id(stack.storage.users)}
    assert env[schema.ENV_RECORDS_TABLE] == {"Ref": default.logical_id(stack.storage.records)}
    assert env[schema.ENV_CHECKPOINTS_TABLE] == {
        "Ref": default.logical_id(stack.storage.checkpoints)
    }
    assert env[schema.ENV_TEXT_BACKEND] == "sagemaker"
    assert env[schema.ENV_TEXT_ENDPOINT] == CONFIG.text_endpoint
    assert env[schema.ENV_EMBED_ENDPOINT] == CONFIG.embed_endpoint
    assert env[schema.ENV_EMBED_DIMENSION] == str(CONFIG.embed_dimension)
    assert env[schema.ENV_LONG_TERM_BACKEND] == "opensearch"
    assert env[schema.ENV_OPENSEARCH_SERVERLESS] == "false"
    assert env[schema.ENV_MAX_INPUT_CHARS] == str(CONFIG.max_input_chars)
    domain_id = default.logical_id(stack.long_term.domain)
    assert env[schema.ENV_OPENSEARCH_ENDPOINT] == {"Fn::GetAtt": [domain_id, "DomainEndpoint"]}


def test_each_function_is_told_the_names_of_exactly_the_tables_it_may_use(
    default: Synth,
) -> None:
    tables = {default.logical_id(_table_of(default, spec)): spec.env_var for spec in schema.TABLES}
    resources = default.json["Resources"]
    for name, function in _functions(default).items():
        variables = resources[default.logical_id(function)]["Properties"]["Environment"][
            "Variables"
        ]
        told = {key: value for key, value in variables.items() if key in tables.values()}
        granted = {
            tables[table_id]
            for statement in statements(default, _role_id(default, function))
            for resource in statement["Resource"]
            for table_id in tables
            if resource.startswith(f"${{{table_id}.Arn}}")
        }
        assert set(told) == granted, name
        for key, value in told.items():
            assert tables[value["Ref"]] == key, name


def test_no_function_uses_a_managed_policy(default: Synth) -> None:
    for function in _functions(default).values():
        role = default.json["Resources"][_role_id(default, function)]
        assert "ManagedPolicyArns" not in role["Properties"]


# --- least privilege ------------------------------------------------------------------------


def test_wildcard_resources_only_for_actions_without_resource_permissions(
    default: Synth,
) -> None:
    for name, function in _functions(default).items():
        for statement in statements(default, _role_id(default, function)):
            if "*" in statement["Resource"]:
                assert set(statement["Action"]) <= STAR_ONLY_ACTIONS, (name, statement)


def test_functions_may_invoke_only_the_configured_endpoints(default: Synth) -> None:
    prefix = "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:endpoint/"
    allowed = {prefix + CONFIG.text_endpoint.lower(), prefix + CONFIG.embed_endpoint.lower()}
    stack = default.stack
    invokes = {}
    for name, function in _functions(default).items():
        resources = {
            resource
            for statement in statements(default, _role_id(default, function))
            if "sagemaker:InvokeEndpoint" in statement["Action"]
            for resource in statement["Resource"]
        }
        assert not any(
            a.startswith("bedrock:")
            for s in statements(default, _role_id(default, function))
            for a in s["Action"]
        )
        invokes[name] = resources
    text, embed = (prefix + CONFIG.text_endpoint.lower(), prefix + CONFIG.embed_endpoint.lower())
    assert invokes == {
        "Chat": allowed,
        "Stream": allowed,
        "Consolidate": allowed,
        "Compact": {text},
        "Purge": {embed},
        "SweepIdle": set(),
        "IndexSetup": set(),
        "Ingest": {embed},
        "Redrive": allowed,
    }
    assert stack.long_term.setup_function.role is not None


def test_only_the_stream_consumers_read_streams_and_only_the_chat_writes_turns(
    default: Synth,
) -> None:
    conversations = default.logical_id(default.stack.storage.conversations)

    def actions_on_table(function: Any, table_id: str) -> set[str]:
        return {
            action
            for statement in statements(default, _role_id(default, function))
            for resource in statement["Resource"]
            if resource.startswith(f"${{{table_id}.")
            for action in statement["Action"]
        }

    functions = _functions(default)
    assert "dynamodb:PutItem" in actions_on_table(functions["Chat"], conversations)
    for name in ("Consolidate", "Compact"):
        on_turns = actions_on_table(functions[name], conversations)
        assert "dynamodb:Query" in on_turns
        assert not {"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:UpdateItem"} & on_turns
    assert actions_on_table(functions["SweepIdle"], conversations) == set()
    assert actions_on_table(functions["IndexSetup"], conversations) == set()


# --- long-term memory -----------------------------------------------------------------------


def test_search_domain_encrypts_everything_and_requires_signed_tls_requests(
    default: Synth,
) -> None:
    setup_role = _role_id(default, default.stack.long_term.setup_function)
    default.template.has_resource_properties(
        "AWS::OpenSearchService::Domain",
        {
            "EngineVersion": Match.string_like_regexp(r"^OpenSearch_2\."),
            "EncryptionAtRestOptions": {"Enabled": True},
            "NodeToNodeEncryptionOptions": {"Enabled": True},
            "DomainEndpointOptions": {
                "EnforceHTTPS": True,
                "TLSSecurityPolicy": "Policy-Min-TLS-1-2-2019-07",
            },
            "AdvancedSecurityOptions": {
                "Enabled": True,
                "InternalUserDatabaseEnabled": False,
                "MasterUserOptions": {"MasterUserARN": {"Fn::GetAtt": [setup_role, "Arn"]}},
            },
            "LogPublishingOptions": {
                kind: Match.object_like({"Enabled": True})
                for kind in (
                    "SEARCH_SLOW_LOGS",
                    "INDEX_SLOW_LOGS",
                    "ES_APPLICATION_LOGS",
                    "AUDIT_LOGS",
                )
            },
        },
    )


def test_search_domain_admits_only_the_app_roles(default: Synth) -> None:
    (domain,) = default.resources("AWS::OpenSearchService::Domain").values()
    policy = domain["Properties"]["AccessPolicies"]["Statement"]
    principals = {render(statement["Principal"]["AWS"]) for statement in policy}
    functions = _functions(default)
    expected = {
        f"${{{_role_id(default, functions[name])}.Arn}}"
        for name in ("IndexSetup", *LONG_TERM_ROLES)
    }
    assert principals == expected
    for statement in policy:
        assert statement["Effect"] == "Allow"
        assert "Condition" not in statement
        assert statement["Action"] in (
            "es:ESHttpPost",
            "es:ESHttpHead",
            "es:ESHttpGet",
            "es:ESHttpPut",
        )
        for resource in render(statement["Resource"]):
            assert "*" not in resource
            assert ":domain/chatmemory-dev/" in resource


def test_index_setup_runs_the_runtime_code_with_the_runtime_roles_to_map(default: Synth) -> None:
    """CDK's Provider framework answers CloudFormation and invokes the setup's on_event."""
    functions = _functions(default)
    setup_id = default.logical_id(functions["IndexSetup"])
    framework_id = default.logical_id(default.stack.long_term.provider_function)
    resource = default.template.find_resources("Custom::LongTermIndexes")
    (props,) = [r["Properties"] for r in resource.values()]
    assert props["ServiceToken"] == {"Fn::GetAtt": [framework_id, "Arn"]}
    assert sorted(render(props["RuntimeRoleArns"])) == sorted(
        f"${{{_role_id(default, functions[name])}.Arn}}" for name in LONG_TERM_ROLES
    )
    handler = default.json["Resources"][setup_id]["Properties"]["Handler"]
    assert handler == "handlers.index_setup.on_event"
    framework = default.json["Resources"][framework_id]["Properties"]
    assert framework["Environment"]["Variables"] == {
        "USER_ON_EVENT_FUNCTION_ARN": {"Fn::GetAtt": [setup_id, "Arn"]}
    }


def test_the_provider_framework_is_cdks_own_code_with_its_own_logs_and_role(
    default: Synth,
) -> None:
    """The framework function ships with aws-cdk-lib (an asset, no Docker, no bundling): one
    more function, not one of the factory's, with a log group that expires and a role of its
    own without managed policies (its exact permissions: test_permissions.py)."""
    framework = default.stack.long_term.provider_function
    props = default.json["Resources"][default.logical_id(framework)]["Properties"]
    assert props["Handler"] == "framework.onEvent"
    assert props["Runtime"].startswith("nodejs")
    assert set(props["Code"]) == {"S3Bucket", "S3Key"}
    log_group = props["LoggingConfig"]["LogGroup"]["Ref"]
    retention = default.json["Resources"][log_group]["Properties"]["RetentionInDays"]
    assert retention == CONFIG.log_retention_days
    role = default.json["Resources"][_role_id(default, framework)]
    assert "ManagedPolicyArns" not in role["Properties"]
    assert framework.role not in [f.role for f in _functions(default).values()]


# --- chat API -------------------------------------------------------------------------------


def test_every_api_method_requires_the_cognito_authorizer_except_cors_preflight(
    default: Synth,
) -> None:
    methods = default.resources("AWS::ApiGateway::Method")
    authorizer_id = default.logical_id(default.stack.api.auth.authorizer)
    # POST: the streamed message route (test_stream_function.py).
    assert {m["Properties"]["HttpMethod"] for m in methods.values()} == {"ANY", "OPTIONS", "POST"}
    for method in methods.values():
        props = method["Properties"]
        if props["HttpMethod"] == "OPTIONS":
            assert props["AuthorizationType"] == "NONE"
            assert props["Integration"]["Type"] == "MOCK"
        else:
            assert props["AuthorizationType"] == "COGNITO_USER_POOLS"
            assert props["AuthorizerId"] == {"Ref": authorizer_id}


def test_cors_preflight_allows_every_method_of_the_chat_routes(default: Synth) -> None:
    """A browser of another origin asks before each PATCH /memories/records/{id} and DELETE;
    API Gateway answers the preflight, so it must list every method of the API's contract
    (openapi.json, checked against the handler's routes by tests/unit/test_openapi.py)."""
    contract = json.loads((Path(__file__).resolve().parents[2] / "openapi.json").read_text())
    routed = {method.upper() for path in contract["paths"].values() for method in path}
    assert "PATCH" in routed
    preflights = [
        m["Properties"]["Integration"]["IntegrationResponses"][0]["ResponseParameters"]
        for m in default.resources("AWS::ApiGateway::Method").values()
        if m["Properties"]["HttpMethod"] == "OPTIONS"
    ]
    assert preflights
    for parameters in preflights:
        allowed = parameters["method.response.header.Access-Control-Allow-Methods"]
        assert set(allowed.strip("'").split(",")) >= routed | {"OPTIONS"}
        # The OpenAI-compatible route's session header is sent by pages too.
        headers = parameters["method.response.header.Access-Control-Allow-Headers"]
        assert "X-Session-Id" in headers.strip("'").split(",")


def test_the_stages_execution_logs_are_a_log_group_of_the_template_that_expires(
    default: Synth,
) -> None:
    """Failed before (issue 46): API Gateway created the execution-log group itself, on its
    first error log, outside the template and kept forever. Now the template makes it, with
    the stack's retention, before the stage that writes to it."""
    api = default.stack.api
    group_id = default.logical_id(api.execution_logs)
    group = default.json["Resources"][group_id]
    assert render(group["Properties"]["LogGroupName"]) == (
        f"API-Gateway-Execution-Logs_${{{default.logical_id(api.rest_api)}}}/v1"
    )
    assert group["Properties"]["RetentionInDays"] == CONFIG.log_retention_days
    stage = default.json["Resources"][default.logical_id(api.rest_api.deployment_stage)]
    assert stage["Properties"]["StageName"] == "v1"
    assert group_id in stage["DependsOn"]


def test_stage_throttles_and_writes_access_logs(default: Synth) -> None:
    default.template.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "AccessLogSetting": {
                "DestinationArn": {"Fn::GetAtt": [Match.string_like_regexp("AccessLogs"), "Arn"]},
                "Format": Match.string_like_regexp("requestId"),
            },
            "TracingEnabled": True,
            "MethodSettings": [
                Match.object_like(
                    {
                        "ThrottlingRateLimit": CONFIG.throttle_rate,
                        "ThrottlingBurstLimit": CONFIG.throttle_burst,
                        "LoggingLevel": "ERROR",
                        "DataTraceEnabled": False,
                    }
                )
            ],
        },
    )


def test_gateway_errors_use_the_api_error_envelope_with_cors(default: Synth) -> None:
    responses = default.resources("AWS::ApiGateway::GatewayResponse")
    assert {r["Properties"]["ResponseType"] for r in responses.values()} == {
        "DEFAULT_4XX",
        "DEFAULT_5XX",
    }
    for response in responses.values():
        props = response["Properties"]
        assert props["ResponseParameters"] == {
            "gatewayresponse.header.Access-Control-Allow-Origin": "'*'"
        }
        assert '"error"' in props["ResponseTemplates"]["application/json"]


def test_the_chat_function_knows_the_cors_origins_for_its_answers(default: Synth) -> None:
    default.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "handlers.chat_api.handler",
            "Environment": {"Variables": Match.object_like({"CORS_ALLOW_ORIGINS": "*"})},
        },
    )


def test_user_pool_has_a_strong_password_policy_and_a_public_cli_client(default: Synth) -> None:
    """The client signs in as the docs' CLI example does (USER_PASSWORD_AUTH, then refresh
    tokens): no SRP, and no OAuth flows, scopes or callback URLs (no hosted UI uses them)."""
    default.template.has_resource_properties(
        "AWS::Cognito::UserPool",
        {
            "Policies": {
                "PasswordPolicy": {
                    "MinimumLength": 12,
                    "RequireLowercase": True,
                    "RequireUppercase": True,
                    "RequireNumbers": True,
                    "RequireSymbols": True,
                    "TemporaryPasswordValidityDays": 3,
                }
            },
            "AdminCreateUserConfig": {"AllowAdminCreateUserOnly": True},
            "MfaConfiguration": "OPTIONAL",
        },
    )
    (client,) = default.resources("AWS::Cognito::UserPoolClient").values()
    props = client["Properties"]
    assert props["GenerateSecret"] is False
    assert props["PreventUserExistenceErrors"] == "ENABLED"
    assert props["EnableTokenRevocation"] is True
    assert sorted(props["ExplicitAuthFlows"]) == [
        "ALLOW_REFRESH_TOKEN_AUTH",
        "ALLOW_USER_PASSWORD_AUTH",
    ]
    assert props["AllowedOAuthFlowsUserPoolClient"] is False
    for key in ("AllowedOAuthFlows", "AllowedOAuthScopes", "CallbackURLs", "LogoutURLs"):
        assert key not in props, key


def test_outputs_tell_a_client_where_to_connect(default: Synth) -> None:
    outputs = default.json["Outputs"]
    assert {"ApiUrl", "UserPoolId", "UserPoolClientId", "Region", "HandoffEventBusName"} <= set(
        outputs
    )
    storage = default.stack.storage
    for key, table in (
        ("SessionsTableName", storage.sessions),
        ("ConversationsTableName", storage.conversations),
        ("UsersTableName", storage.users),
        ("RecordsTableName", storage.records),
    ):
        assert outputs[key]["Value"] == {"Ref": default.logical_id(table)}


# --- hand-off to a person (issue 16) ---------------------------------------------------------

# What only the chat function is told: who the agents are, the automatic rules, the bus.
HANDOFF_ENV = {
    schema.ENV_AGENT_GROUP,
    schema.ENV_AGENT_ROLE_ARN,
    schema.ENV_EVENT_BUS,
    schema.ENV_HANDOFF_ON_NOTHING_VERIFIED,
    schema.ENV_HANDOFF_NEGATIVE_TURNS,
    schema.ENV_HANDOFF_NEGATIVE_SCORE,
}


def _env(synth: Synth, function: Any) -> dict[str, Any]:
    return synth.json["Resources"][synth.logical_id(function)]["Properties"]["Environment"][
        "Variables"
    ]


def test_agents_are_the_members_of_a_cognito_group_the_chat_function_knows(
    default: Synth,
) -> None:
    group = default.stack.api.auth.agent_group
    pool_id = default.logical_id(default.stack.api.auth.user_pool)
    (props,) = [g["Properties"] for g in default.resources("AWS::Cognito::UserPoolGroup").values()]
    assert props["GroupName"] == CONFIG.agent_group == "agents"
    assert props["UserPoolId"] == {"Ref": pool_id}
    assert "/agent routes" in props["Description"]
    # No IAM role of its own: the group only names the agents (the function checks the claim).
    assert "RoleArn" not in props
    assert default.json["Outputs"]["AgentGroupName"]["Value"] == {"Ref": default.logical_id(group)}
    env = _env(default, default.stack.api.handler)
    assert env[schema.ENV_AGENT_GROUP] == "agents"
    assert schema.ENV_AGENT_ROLE_ARN not in env
    assert not {"AgentRoleArn", "UserPolicyArn"} & set(default.json["Outputs"])


def test_hand_offs_are_published_on_a_bus_of_the_stack_without_an_archive(default: Synth) -> None:
    bus = default.stack.handoff.bus
    bus_id = default.logical_id(bus)
    (props,) = [b["Properties"] for b in default.resources("AWS::Events::EventBus").values()]
    assert props["Name"] == "chatmemory-dev-handoff"
    # No archive (it would keep hand-off notes beyond a delete or forget), no policy letting
    # other accounts publish, no log delivery (each bills by the GB).
    for kind in ("AWS::Events::Archive", "AWS::Events::EventBusPolicy"):
        default.template.resource_count_is(kind, 0)
    assert "LogConfig" not in props and "KmsKeyIdentifier" not in props
    outputs = default.json["Outputs"]
    assert outputs["HandoffEventBusName"]["Value"] == {"Ref": bus_id}
    assert outputs["HandoffEventBusArn"]["Value"] == {"Fn::GetAtt": [bus_id, "Arn"]}
    env = _env(default, default.stack.api.handler)
    assert env[schema.ENV_EVENT_BUS] == {"Ref": bus_id}


def test_the_automatic_hand_off_rules_are_off_by_default(default: Synth) -> None:
    env = _env(default, default.stack.api.handler)
    assert env[schema.ENV_HANDOFF_ON_NOTHING_VERIFIED] == "false"
    assert env[schema.ENV_HANDOFF_NEGATIVE_TURNS] == "0"
    assert env[schema.ENV_HANDOFF_NEGATIVE_SCORE] == "-0.5"


def test_only_the_chat_function_is_told_the_hand_off_settings(default: Synth) -> None:
    """The sweeper leaves handed-off sessions alone by their state in the table, not by a
    setting; no other function hands off."""
    for name, function in _functions(default).items():
        told = HANDOFF_ENV & set(_env(default, function))
        chat = name in ("Chat", "Stream")  # a streamed message may hand off too
        assert told == (HANDOFF_ENV - {schema.ENV_AGENT_ROLE_ARN} if chat else set())


# --- operations -----------------------------------------------------------------------------


def test_alarms_cover_dlqs_iterator_age_errors_throttles_and_api_5xx(default: Synth) -> None:
    """Each alarm is a monthly fee, so each says what no other does: errors of the functions
    that run by themselves (whose errors no caller sees), throttles of the chat function only (a
    throttled stream function shows as its iterator's age)."""
    alarms = list(default.resources("AWS::CloudWatch::Alarm").values())
    by_metric: dict[str, int] = {}
    topic_id = default.logical_id(default.stack.monitoring.topic)
    for alarm in alarms:
        props = alarm["Properties"]
        by_metric[props["MetricName"]] = by_metric.get(props["MetricName"], 0) + 1
        assert props["AlarmActions"] == [{"Ref": topic_id}]
    unwatched = set(_functions(default)) - CALLER_WATCHED
    assert unwatched == {"Chat", "Stream", "Consolidate", "Compact", "Purge", "SweepIdle"}
    assert by_metric["ApproximateNumberOfMessagesVisible"] == len(schema.STREAM_TRIGGERS)
    assert by_metric["IteratorAge"] == 3  # Consolidate, Compact, Purge (all three streams)
    assert by_metric["Errors"] == len(unwatched)
    assert by_metric["Throttles"] == 1  # the chat function's
    assert by_metric["5XXError"] == 1
    iterator = [a for a in alarms if a["Properties"]["MetricName"] == "IteratorAge"]
    assert {a["Properties"]["Threshold"] for a in iterator} == {
        CONFIG.iterator_age_alarm_seconds * 1000
    }


def test_the_api_5xx_alarm_watches_this_stack_s_stage_only(default: Synth) -> None:
    """API Gateway's metrics are per API name (and stage): CDK's default name "RestApi" is that
    of every default-named API of the account, so the alarm counted their errors too (failed
    before: ApiName=RestApi, no stage)."""
    (alarm,) = [
        a["Properties"]
        for a in default.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["MetricName"] == "5XXError"
    ]
    dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
    (api,) = default.resources("AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["Name"] == default.stack.stack_name == dimensions["ApiName"]
    stage = default.logical_id(default.stack.api.rest_api.deployment_stage)
    assert dimensions["Stage"] == {"Ref": stage}


def test_every_dead_letter_queue_and_stream_function_has_its_alarm(default: Synth) -> None:
    alarms = [a["Properties"] for a in default.resources("AWS::CloudWatch::Alarm").values()]

    def watched(metric: str, dimension: str) -> list[Any]:
        return [
            d["Value"]
            for a in alarms
            if a["MetricName"] == metric
            for d in a["Dimensions"]
            if d["Name"] == dimension
        ]

    queues = default.stack.consolidation.dead_letter_queues.values()
    assert sorted(map(json.dumps, watched("ApproximateNumberOfMessagesVisible", "QueueName"))) == (
        sorted(json.dumps({"Fn::GetAtt": [default.logical_id(q), "QueueName"]}) for q in queues)
    )
    functions = _functions(default)
    assert sorted(map(json.dumps, watched("IteratorAge", "FunctionName"))) == sorted(
        json.dumps({"Ref": default.logical_id(functions[name])})
        for name in ("Consolidate", "Compact", "Purge")
    )
    assert sorted(map(json.dumps, watched("Errors", "FunctionName"))) == sorted(
        json.dumps({"Ref": default.logical_id(f)})
        for name, f in functions.items()
        if name not in CALLER_WATCHED
    )


def test_alarm_topic_is_encrypted_with_a_rotating_key_cloudwatch_may_use(default: Synth) -> None:
    key_id = default.logical_id(default.stack.monitoring.key)
    topic = default.json["Resources"][default.logical_id(default.stack.monitoring.topic)]
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    default.template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "EnableKeyRotation": True,
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [Match.object_like({"Principal": {"Service": "cloudwatch.amazonaws.com"}})]
                )
            },
        },
    )
    default.template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )


def test_cloudwatch_may_use_the_alarm_topics_key_for_this_accounts_alarms_only(
    default: Synth,
) -> None:
    """Failed before (issue 46): the key policy let CloudWatch use the key with no
    aws:SourceAccount or aws:SourceArn condition (the confused deputy AWS's own key policy
    for alarm topics guards against)."""
    key = default.json["Resources"][default.logical_id(default.stack.monitoring.key)]
    (statement,) = [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert sorted(statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert statement["Condition"]["StringEquals"] == {
        "aws:SourceAccount": {"Ref": "AWS::AccountId"}
    }
    assert render(statement["Condition"]["ArnLike"]["aws:SourceArn"]) == (
        "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:*"
    )


def test_dashboard_exists(default: Synth) -> None:
    default.template.resource_count_is("AWS::CloudWatch::Dashboard", 1)


def test_the_docs_count_the_resources_of_the_default_template(default: Synth) -> None:
    """The number the deploy documentation gives is the template's (it said 103 when the
    template had 105)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    said = [
        int(found)
        for page in pages
        for found in re.findall(r"(\d+) resources in the default template", page.read_text())
    ]
    assert said == [len(default.json["Resources"])]
