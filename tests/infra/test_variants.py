"""The other settings, one synth each: deployed models, Bedrock, OpenSearch Serverless, IAM auth
and the production stage. Lighter checks than test_stack.py: what each option changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk.assertions import Match

from chatmemory import schema
from stacks.config import Config
from tests.infra.synth import Synth, render, statements

Synthesize = Callable[..., Synth]


def _invoked(synth: Synth, function: Any, action: str) -> set[str]:
    role = synth.stack.get_logical_id(function.role.node.default_child)
    return {
        resource
        for statement in statements(synth, role)
        if action in statement["Action"]
        for resource in statement["Resource"]
    }


def _env(synth: Synth, function: Any) -> dict[str, Any]:
    return synth.json["Resources"][synth.logical_id(function)]["Properties"]["Environment"][
        "Variables"
    ]


# --- models: deployed Hugging Face containers -------------------------------------------------


@pytest.fixture(scope="module")
def deployed(synth_cache: Synthesize) -> Synth:
    return synth_cache(modelMode="deploy")


def test_deploy_mode_serves_embeddings_from_a_serverless_endpoint(deployed: Synth) -> None:
    config = Config.from_mapping({"model_mode": "deploy"})
    deployed.template.resource_count_is("AWS::SageMaker::Endpoint", 2)
    deployed.template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "ServerlessConfig": {
                            "MemorySizeInMB": config.deploy_embed_memory_mb,
                            "MaxConcurrency": config.deploy_embed_max_concurrency,
                        }
                    }
                )
            ]
        },
    )
    deployed.template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {"InstanceType": config.deploy_text_instance_type, "InitialInstanceCount": 1}
                )
            ]
        },
    )
    models = deployed.resources("AWS::SageMaker::Model").values()
    images = {
        str(render(m["Properties"]["PrimaryContainer"]["Image"])).rsplit("/", 1)[-1] for m in models
    }
    assert images == {
        f"huggingface-pytorch-tgi-inference:{config.tgi_image_tag}",
        f"tei-cpu:{config.tei_image_tag}",
    }
    hub_ids = {m["Properties"]["PrimaryContainer"]["Environment"]["HF_MODEL_ID"] for m in models}
    assert hub_ids == {config.deploy_text_model, config.deploy_embed_model}


def test_deploy_mode_invokes_only_the_endpoints_it_deploys(deployed: Synth) -> None:
    endpoints = {f"${{{key}}}" for key in deployed.resources("AWS::SageMaker::Endpoint")}
    chat = deployed.stack.api.handler
    assert _invoked(deployed, chat, "sagemaker:InvokeEndpoint") == endpoints
    env = _env(deployed, chat)
    assert env[schema.ENV_TEXT_FORMAT] == "tgi"
    assert env[schema.ENV_EMBED_FORMAT] == "tei"
    assert env[schema.ENV_EMBED_DIMENSION] == "384"


def test_deploy_mode_endpoint_role_pulls_only_the_two_images(deployed: Synth) -> None:
    (role_id,) = [
        key
        for key, role in deployed.resources("AWS::IAM::Role").items()
        if "sagemaker.amazonaws.com" in json.dumps(role["Properties"]["AssumeRolePolicyDocument"])
    ]
    pulls = {
        resource.rsplit("/", 1)[-1]
        for statement in statements(deployed, role_id)
        if "ecr:BatchGetImage" in statement["Action"]
        for resource in statement["Resource"]
    }
    assert pulls == {"huggingface-pytorch-tgi-inference", "tei-cpu"}
    for statement in statements(deployed, role_id):
        if "*" in statement["Resource"]:
            assert set(statement["Action"]) <= {
                "ecr:GetAuthorizationToken",
                "cloudwatch:PutMetricData",
            }


# --- models: Bedrock ------------------------------------------------------------------------


BEDROCK = {"modelMode": "bedrock", "powertoolsLayerVersion": "latest"}


def test_bedrock_mode_invokes_only_the_configured_foundation_models(
    synth_cache: Synthesize,
) -> None:
    bedrock = synth_cache(**BEDROCK)
    config = Config.from_mapping({"model_mode": "bedrock"})
    prefix = "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/"
    chat = bedrock.stack.api.handler
    assert _invoked(bedrock, chat, "bedrock:InvokeModel") == {
        prefix + config.text_model_id,
        prefix + config.embed_model_id,
    }
    assert _invoked(bedrock, chat, "sagemaker:InvokeEndpoint") == set()
    bedrock.template.resource_count_is("AWS::SageMaker::Endpoint", 0)
    env = _env(bedrock, chat)
    assert env[schema.ENV_TEXT_BACKEND] == "bedrock"
    assert env[schema.ENV_TEXT_MODEL_ID] == config.text_model_id
    assert env[schema.ENV_EMBED_DIMENSION] == "1024"


def test_latest_powertools_layer_is_resolved_from_aws_public_parameter(
    synth_cache: Synthesize,
) -> None:
    bedrock = synth_cache(**BEDROCK)
    (name,) = [
        key
        for key, p in bedrock.json["Parameters"].items()
        if p["Type"] == "AWS::SSM::Parameter::Value<String>"
        and p["Default"] == "/aws/service/powertools/python/arm64/python3.12/latest"
    ]
    for function in bedrock.stack.functions.functions.values():
        props = bedrock.json["Resources"][bedrock.logical_id(function)]["Properties"]
        assert props["Layers"] == [{"Ref": name}]


def test_cross_region_inference_profiles_are_refused_with_a_clear_message() -> None:
    from aws_cdk import App, Stack

    from stacks.models import Models

    config = Config.from_mapping(
        {"model_mode": "bedrock", "text_model_id": "us.amazon.nova-micro-v1:0"}
    )
    with pytest.raises(ValueError, match="inference profile"):
        Models(Stack(App(), "S"), "Models", config=config)


# --- long-term memory: OpenSearch Serverless -------------------------------------------------


@pytest.fixture(scope="module")
def serverless(synth_cache: Synthesize) -> Synth:
    return synth_cache(searchMode="serverless")


def test_serverless_search_uses_a_vector_collection_instead_of_a_domain(
    serverless: Synth,
) -> None:
    serverless.template.resource_count_is("AWS::OpenSearchService::Domain", 0)
    serverless.template.has_resource_properties(
        "AWS::OpenSearchServerless::Collection", {"Type": "VECTORSEARCH"}
    )
    serverless.template.has_resource_properties(
        "AWS::OpenSearchServerless::SecurityPolicy",
        {"Type": "encryption", "Policy": Match.string_like_regexp('"AWSOwnedKey": true')},
    )
    env = _env(serverless, serverless.stack.api.handler)
    assert env[schema.ENV_OPENSEARCH_SERVERLESS] == "true"
    collection_id = serverless.logical_id(serverless.stack.long_term.collection)
    assert env[schema.ENV_OPENSEARCH_ENDPOINT] == {
        "Fn::GetAtt": [collection_id, "CollectionEndpoint"]
    }


def test_serverless_data_access_is_granted_only_to_the_app_roles(serverless: Synth) -> None:
    (policy,) = serverless.resources("AWS::OpenSearchServerless::AccessPolicy").values()
    text = render(policy["Properties"]["Policy"])
    rules = json.loads(text)
    functions = serverless.stack.functions.functions

    def role(name: str) -> str:
        return (
            f"${{{serverless.stack.get_logical_id(functions[name].role.node.default_child)}.Arn}}"
        )

    runtime = ("Chat", "Consolidate", "Purge", "Ingest", "Redrive")
    assert [rule["Principal"] for rule in rules] == [
        *([role(name)] for name in runtime),
        [role("IndexSetup")],
    ]
    for rule in rules[:-1]:
        assert not {"aoss:CreateIndex", "aoss:UpdateIndex", "aoss:DeleteIndex"} & {
            p for r in rule["Rules"] for p in r["Permission"]
        }
    for rule in rules:
        assert {r["ResourceType"] for r in rule["Rules"]} == {"index"}
        assert all(
            r.rsplit("/", 1)[-1] in schema.LONG_TERM_INDEXES
            for each in rule["Rules"]
            for r in each["Resource"]
        )
    collection_arn = f"${{{serverless.logical_id(serverless.stack.long_term.collection)}.Arn}}"
    for name in (*runtime, "IndexSetup"):
        assert _invoked(serverless, functions[name], "aoss:APIAccessAll") == {collection_arn}
    for name in ("Compact", "SweepIdle"):
        assert _invoked(serverless, functions[name], "aoss:APIAccessAll") == set()


# --- chat API: IAM authorization -------------------------------------------------------------


def test_iam_auth_signs_every_method_and_deploys_no_user_pool(synth_cache: Synthesize) -> None:
    iam = synth_cache(auth="iam")
    iam.template.resource_count_is("AWS::Cognito::UserPool", 0)
    for method in iam.resources("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        expected = "NONE" if props["HttpMethod"] == "OPTIONS" else "AWS_IAM"
        assert props["AuthorizationType"] == expected
    assert "UserPoolId" not in iam.json["Outputs"]


# --- production stage -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def production(synth_cache: Synthesize) -> Synth:
    return synth_cache(stage="prod")


def test_production_search_domain_is_highly_available(production: Synth) -> None:
    production.template.has_resource_properties(
        "AWS::OpenSearchService::Domain",
        {
            "ClusterConfig": Match.object_like(
                {
                    "InstanceCount": 2,
                    "ZoneAwarenessEnabled": True,
                    "DedicatedMasterEnabled": True,
                    "DedicatedMasterCount": 3,
                }
            )
        },
    )
    (domain,) = production.resources("AWS::OpenSearchService::Domain").values()
    assert domain["DeletionPolicy"] == "Retain"


def test_production_api_has_a_waf_and_users_get_threat_protection(production: Synth) -> None:
    production.template.resource_count_is("AWS::WAFv2::WebACL", 1)
    production.template.has_resource_properties(
        "AWS::WAFv2::WebACLAssociation",
        {"ResourceArn": Match.any_value(), "WebACLArn": Match.any_value()},
    )
    production.template.has_resource_properties(
        "AWS::Cognito::UserPool",
        {
            "UserPoolTier": "PLUS",
            "UserPoolAddOns": {"AdvancedSecurityMode": "ENFORCED"},
            "DeletionProtection": "ACTIVE",
        },
    )


def test_production_keeps_logs_a_year(production: Synth) -> None:
    for group in production.resources("AWS::Logs::LogGroup").values():
        assert group["Properties"]["RetentionInDays"] == 365
        assert group["DeletionPolicy"] == "Retain"


def test_development_keeps_waf_off_and_cheap_search(synth_cache: Synthesize) -> None:
    default = synth_cache()
    default.template.resource_count_is("AWS::WAFv2::WebACL", 0)
    default.template.has_resource_properties(
        "AWS::OpenSearchService::Domain",
        {
            "ClusterConfig": Match.object_like(
                {
                    "InstanceCount": 1,
                    "InstanceType": "t3.small.search",
                    "ZoneAwarenessEnabled": False,
                    "DedicatedMasterEnabled": False,
                }
            )
        },
    )
