"""The contract check's judge catches each class of defect it exists for, on requests built
here (the scenario of test_contract.py shows that the real handlers send none of them)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ParamValidationError

from chatmemory import limits
from tests.aws.judge import Judge
from tests.aws.recorder import Recorder, Sent
from tests.aws.template import deployment_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def judges(synth_cache: Any) -> dict[str, Judge]:
    found = {}
    for name, settings, region in (
        ("default", {}, "us-east-1"),
        ("serverless", {"profile": "serverless"}, "eu-central-1"),
    ):
        synth = synth_cache(**settings)
        deployment = deployment_of(synth.json, region=region, stack_name="ChatMemory-dev")
        found[name] = Judge(deployment, deployment.functions())
    return found


def _function(judge: Judge, handler: str) -> str:
    (found,) = [f.logical_id for f in judge.functions.values() if f.handler == handler]
    return found


def _table(judge: Judge, env: str) -> str:
    return judge.functions[_function(judge, "handlers.chat_api.handler")].environment[env]


def _kinds(judge: Judge, sent: Sent) -> list[tuple[str, str]]:
    return [(p.kind, p.detail) for p in judge.check(sent)]


def test_a_transaction_item_the_role_may_not_write_is_an_iam_problem(judges: Any) -> None:
    judge = judges["default"]
    sweeper = _function(judge, "handlers.sweep_idle.handler")
    sessions = _table(judge, "SESSIONS_TABLE")
    sent = Sent(
        sweeper,
        "dynamodb",
        "TransactWriteItems",
        {
            "TransactItems": [
                {"ConditionCheck": {"TableName": sessions, "Key": {}, "ConditionExpression": "x"}}
            ]
        },
    )
    ((kind, detail),) = _kinds(judge, sent)
    assert kind == "iam" and detail.startswith("dynamodb:ConditionCheckItem on arn:aws:dynamodb")


def test_a_bulk_request_over_the_domain_s_limit_is_a_limit_problem(judges: Any) -> None:
    judge = judges["default"]
    consolidate = _function(judge, "handlers.consolidate.handler")
    (domain,) = judge.deployment.of_type("AWS::OpenSearchService::Domain")
    host = judge.deployment.get_att(domain, "DomainEndpoint")
    # One byte over what the domain's instance type accepts (10 MiB on t3, 100 MiB others).
    instance = judge.deployment.resources[domain]["Properties"]["ClusterConfig"]
    sent = Sent(
        consolidate,
        "opensearch",
        "POST /conversation-memories/_bulk",
        {"query": {}, "body": ""},
        payload_bytes=limits.opensearch_payload_limit(instance["InstanceType"]) + 1,
        host=host,
    )
    problems = _kinds(judge, sent)
    assert ("limit", problems[0][1]) == problems[0] and "413" in problems[0][1]


def test_a_model_not_on_demand_in_the_region_is_a_problem(judges: Any) -> None:
    judge = judges["serverless"]
    chat = _function(judge, "handlers.chat_api.handler")
    sent = Sent(chat, "bedrock-runtime", "Converse", {"modelId": "amazon.nova-micro-v1:0"})
    details = [detail for kind, detail in _kinds(judge, sent) if kind == "limit"]
    assert details == ["amazon.nova-micro-v1:0 is not on demand in eu-central-1 (only us-east-1)"]


def test_an_oversize_lambda_answer_and_a_key_range_upside_down_are_problems(judges: Any) -> None:
    judge = judges["default"]
    chat = _function(judge, "handlers.chat_api.handler")
    answer = Sent(chat, "lambda", "Invoke", {"response_bytes": 7_000_000}, payload_bytes=10)
    assert [k for k, _ in _kinds(judge, answer)] == ["limit"]
    query = Sent(
        chat,
        "dynamodb",
        "Query",
        {
            "TableName": _table(judge, "CONVERSATIONS_TABLE"),
            "KeyConditionExpression": "session_id = :s AND #t BETWEEN :a AND :b",
            "ExpressionAttributeValues": {":s": {"S": "x"}, ":a": {"N": "5"}, ":b": {"N": "4"}},
        },
    )
    assert [k for k, _ in _kinds(judge, query)] == ["limit"]


def test_parameters_botocore_refuses_are_recorded_and_judged_invalid(judges: Any) -> None:
    judge = judges["default"]
    recorder = Recorder()
    with recorder.installed(), recorder.as_function(_function(judge, "handlers.chat_api.handler")):
        client = boto3.client("dynamodb", region_name="us-east-1")
        with pytest.raises(ParamValidationError):
            client.get_item(TableName=_table(judge, "SESSIONS_TABLE"), Key="not a map")
    (sent,) = recorder.sent
    assert [k for k, _ in _kinds(judge, sent)] == ["invalid"]
    assert "Key" in json.dumps(sent.invalid)


def test_a_call_the_judge_does_not_know_is_reported_not_passed(judges: Any) -> None:
    judge = judges["default"]
    chat = _function(judge, "handlers.chat_api.handler")
    sent = Sent(chat, "dynamodb", "DeleteTable", {"TableName": "x"})
    assert [k for k, _ in _kinds(judge, sent)] == ["unmapped"]


@pytest.mark.parametrize(
    "handler",
    [
        "handlers.chat_api.handler",
        "handlers.consolidate.handler",
        "handlers.compact.handler",
        "handlers.redrive.handler",
    ],
)
def test_the_text_model_is_invoked_only_through_its_inference_profile(
    judges: Any, handler: str
) -> None:
    """Failed before (issue 46): every role that calls the default text model could invoke it
    on demand in any region (foundation-model/* on bedrock:*), outside the inference profile's
    geography; the grant is now conditioned on bedrock:InferenceProfileArn."""
    judge = judges["serverless"]
    function = _function(judge, handler)
    direct = Sent(function, "bedrock-runtime", "Converse", {"modelId": "amazon.nova-micro-v1:0"})
    refused = [detail for kind, detail in _kinds(judge, direct) if kind == "iam"]
    assert refused and refused[0].startswith(
        "bedrock:InvokeModel on arn:aws:bedrock:eu-central-1::foundation-model/"
    )
    through = Sent(
        function, "bedrock-runtime", "Converse", {"modelId": "eu.amazon.nova-micro-v1:0"}
    )
    assert _kinds(judge, through) == []
