"""The default deployment, property by property: what makes it safe and what keeps memories."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Capture, Match

from chatmemory import schema
from stacks.config import POWERTOOLS_LAYER_ACCOUNT, Config
from tests.infra.synth import Synth, render, statements

CONFIG = Config()
# The only actions AWS offers no resource-level permissions for, among those the app uses.
STAR_ONLY_ACTIONS = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "dynamodb:ListStreams"}


def _role_id(synth: Synth, function: Any) -> str:
    return synth.stack.get_logical_id(function.role.node.default_child)


def _functions(synth: Synth) -> dict[str, Any]:
    return dict(synth.stack.functions.functions)


# --- stream processing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "trigger", "dlq"),
    [
        ("sessions", schema.CONSOLIDATION_TRIGGER, "ConsolidationDlq"),
        ("conversations", schema.COMPACTION_TRIGGER, "CompactionDlq"),
    ],
)
def test_stream_mapping_isolates_poison_records_and_uses_the_schema_trigger(
    default: Synth, table: str, trigger: schema.StreamTrigger, dlq: str
) -> None:
    pattern = trigger.filter
    stack = default.stack
    table_id = default.logical_id(getattr(stack.storage, table))
    queue_id = default.logical_id(stack.consolidation.dead_letter_queues[dlq])
    filters = Capture()
    default.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
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
    assert filters.as_array() == [{"Pattern": json.dumps(pattern)}]
    assert json.loads(filters.as_array()[0]["Pattern"]) == pattern


def test_record_age_limits_are_bounded_and_within_the_stream_retention(default: Synth) -> None:
    ages = sorted(
        m["Properties"]["MaximumRecordAgeInSeconds"]
        for m in default.resources("AWS::Lambda::EventSourceMapping").values()
    )
    assert ages == [
        CONFIG.compaction_max_record_age_hours * 3600,
        CONFIG.consolidation_max_record_age_hours * 3600,
    ]
    assert all(age <= 24 * 3600 for age in ages)  # DynamoDB Streams keeps records 24 h


def test_dead_letter_queues_are_encrypted_and_refuse_plain_http(default: Synth) -> None:
    queues = default.resources("AWS::SQS::Queue")
    assert len(queues) == 2
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
    functions = default.resources("AWS::Lambda::Function")
    assert len(functions) == 5
    layer = (
        f"arn:${{AWS::Partition}}:lambda:${{AWS::Region}}:{POWERTOOLS_LAYER_ACCOUNT}:layer:"
        f"AWSLambdaPowertoolsPythonV3-python312-arm64:{CONFIG.powertools_layer_version}"
    )
    keys = set()
    for function in functions.values():
        props = function["Properties"]
        assert render(props["Layers"]) == [layer]
        assert props["Runtime"] == "python3.12"
        assert props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["LoggingConfig"]["LogFormat"] == "JSON"
        assert "Ref" in props["LoggingConfig"]["LogGroup"]
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
    assert env[schema.ENV_TEXT_BACKEND] == "sagemaker"
    assert env[schema.ENV_TEXT_ENDPOINT] == CONFIG.text_endpoint
    assert env[schema.ENV_EMBED_ENDPOINT] == CONFIG.embed_endpoint
    assert env[schema.ENV_EMBED_DIMENSION] == str(CONFIG.embed_dimension)
    assert env[schema.ENV_LONG_TERM_BACKEND] == "opensearch"
    assert env[schema.ENV_OPENSEARCH_SERVERLESS] == "false"
    assert env[schema.ENV_MAX_INPUT_CHARS] == str(CONFIG.max_input_chars)
    domain_id = default.logical_id(stack.long_term.domain)
    assert env[schema.ENV_OPENSEARCH_ENDPOINT] == {"Fn::GetAtt": [domain_id, "DomainEndpoint"]}


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
    assert invokes["Chat"] == allowed
    assert invokes["Consolidate"] == allowed
    assert invokes["Compact"] == {prefix + CONFIG.text_endpoint.lower()}
    assert invokes["SweepIdle"] == set()
    assert invokes["IndexSetup"] == set()
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
    (statement,) = domain["Properties"]["AccessPolicies"]["Statement"]
    principals = set(render(statement["Principal"]["AWS"]))
    functions = _functions(default)
    expected = {
        f"${{{_role_id(default, functions[name])}.Arn}}"
        for name in ("IndexSetup", "Chat", "Consolidate")
    }
    assert principals == expected
    assert statement["Effect"] == "Allow"
    assert "Condition" not in statement


def test_index_setup_runs_the_runtime_code_with_the_runtime_roles_to_map(default: Synth) -> None:
    functions = _functions(default)
    setup_id = default.logical_id(functions["IndexSetup"])
    resource = default.template.find_resources("Custom::LongTermIndexes")
    (props,) = [r["Properties"] for r in resource.values()]
    assert props["ServiceToken"] == {"Fn::GetAtt": [setup_id, "Arn"]}
    assert set(render(props["RuntimeRoleArns"])) == {
        f"${{{_role_id(default, functions[name])}.Arn}}" for name in ("Chat", "Consolidate")
    }
    handler = default.json["Resources"][setup_id]["Properties"]["Handler"]
    assert handler == "handlers.index_setup.handler"


def test_only_consolidation_may_bulk_index(default: Synth) -> None:
    def paths(function: Any) -> set[str]:
        return {
            r.rsplit(".Arn}", 1)[-1]
            for s in statements(default, _role_id(default, function))
            for r in s["Resource"]
            if s["Action"][0].startswith("es:")
        }

    functions = _functions(default)
    indexes = {f"/{name}" for name in schema.LONG_TERM_INDEXES} | {
        f"/{name}/*" for name in schema.LONG_TERM_INDEXES
    }
    assert paths(functions["Consolidate"]) == indexes | {"/_bulk"}
    assert paths(functions["Chat"]) == indexes
    assert paths(functions["IndexSetup"]) == indexes | {
        f"/_plugins/_security/api/{kind}/{schema.OPENSEARCH_RUNTIME_ROLE}"
        for kind in ("roles", "rolesmapping")
    }


# --- chat API -------------------------------------------------------------------------------


def test_every_api_method_requires_the_cognito_authorizer_except_cors_preflight(
    default: Synth,
) -> None:
    methods = default.resources("AWS::ApiGateway::Method")
    authorizer_id = default.logical_id(default.stack.api.authorizer)
    assert {m["Properties"]["HttpMethod"] for m in methods.values()} == {"ANY", "OPTIONS"}
    for method in methods.values():
        props = method["Properties"]
        if props["HttpMethod"] == "OPTIONS":
            assert props["AuthorizationType"] == "NONE"
            assert props["Integration"]["Type"] == "MOCK"
        else:
            assert props["AuthorizationType"] == "COGNITO_USER_POOLS"
            assert props["AuthorizerId"] == {"Ref": authorizer_id}


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
    default.template.has_resource_properties(
        "AWS::Cognito::UserPoolClient",
        {
            "GenerateSecret": False,
            "ExplicitAuthFlows": Match.array_with(
                ["ALLOW_USER_PASSWORD_AUTH", "ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"]
            ),
            "PreventUserExistenceErrors": "ENABLED",
        },
    )


def test_outputs_tell_a_client_where_to_connect(default: Synth) -> None:
    outputs = default.json["Outputs"]
    assert {"ApiUrl", "UserPoolId", "UserPoolClientId", "Region"} <= set(outputs)


# --- operations -----------------------------------------------------------------------------


def test_alarms_cover_dlqs_iterator_age_errors_throttles_and_api_5xx(default: Synth) -> None:
    alarms = list(default.resources("AWS::CloudWatch::Alarm").values())
    by_metric: dict[str, int] = {}
    topic_id = default.logical_id(default.stack.monitoring.topic)
    for alarm in alarms:
        props = alarm["Properties"]
        by_metric[props["MetricName"]] = by_metric.get(props["MetricName"], 0) + 1
        assert props["AlarmActions"] == [{"Ref": topic_id}]
    functions = len(_functions(default))
    assert by_metric["ApproximateNumberOfMessagesVisible"] == 2
    assert by_metric["IteratorAge"] == 2
    assert by_metric["Errors"] == functions
    assert by_metric["Throttles"] == functions
    assert by_metric["5XXError"] == 1
    iterator = [a for a in alarms if a["Properties"]["MetricName"] == "IteratorAge"]
    assert {a["Properties"]["Threshold"] for a in iterator} == {
        CONFIG.iterator_age_alarm_seconds * 1000
    }


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


def test_dashboard_exists(default: Synth) -> None:
    default.template.resource_count_is("AWS::CloudWatch::Dashboard", 1)
