"""The other settings, one synth each: deployed models, Bedrock, OpenSearch Serverless, S3
Vectors, the serverless profile, IAM auth and the production stage. Lighter checks than
test_stack.py: what each option changes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match

from chatmemory import schema
from scripts.cost import prices
from scripts.cost.estimate import domain_items, domain_of
from stacks import sizing
from stacks.config import Config
from stacks.models import DEFAULT_MODEL_GEOGRAPHY, DEFAULT_MODELS_RULE
from tests.infra.synth import VARIANTS, Synth, render, statements

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


def test_bedrock_mode_invokes_the_region_s_default_models_only(synth_cache: Synthesize) -> None:
    """Nova Micro is on demand in us-east-1 only: elsewhere it is the inference profile of the
    region's geography, chosen by CloudFormation from a mapping; the role may invoke that
    profile in its region and the model in the regions the profile routes to. Failed before:
    amazon.nova-micro-v1:0 in every region, and every turn answered 502 outside us-east-1."""
    bedrock = synth_cache(**BEDROCK)
    (mapping_id,) = bedrock.json["Mappings"]
    mapping = bedrock.json["Mappings"][mapping_id]
    assert {region: entry["prefix"] for region, entry in mapping.items()} == (
        DEFAULT_MODEL_GEOGRAPHY
    )
    chat = bedrock.stack.api.handler
    geography = f"${{{mapping_id}[${{AWS::Region}}].prefix}}"
    bedrock_arn = "arn:${AWS::Partition}:bedrock:"
    assert _invoked(bedrock, chat, "bedrock:InvokeModel") == {
        f"{bedrock_arn}${{AWS::Region}}:${{AWS::AccountId}}:inference-profile/"
        f"{geography}.amazon.nova-micro-v1:0",
        f"{bedrock_arn}*::foundation-model/amazon.nova-micro-v1:0",
        f"{bedrock_arn}${{AWS::Region}}::foundation-model/amazon.titan-embed-text-v2:0",
    }
    assert _invoked(bedrock, chat, "sagemaker:InvokeEndpoint") == set()
    bedrock.template.resource_count_is("AWS::SageMaker::Endpoint", 0)
    env = _env(bedrock, chat)
    assert env[schema.ENV_TEXT_BACKEND] == "bedrock"
    assert render(env[schema.ENV_TEXT_MODEL_ID]) == f"{geography}.amazon.nova-micro-v1:0"
    assert env[schema.ENV_EMBED_DIMENSION] == "1024"
    # A deployment to a region without the defaults stops before creating anything, saying
    # what to set.
    (assertion,) = bedrock.json["Rules"][DEFAULT_MODELS_RULE]["Assertions"]
    assert assertion["Assert"] == {
        "Fn::Contains": [sorted(DEFAULT_MODEL_GEOGRAPHY), {"Ref": "AWS::Region"}]
    }
    assert "chatmemory:textModelId" in assertion["AssertDescription"]


def _bedrock_models(region: str | None = None, **settings: str) -> Any:
    from aws_cdk import App, Environment, Stack

    from stacks.models import Models

    config = Config.from_mapping({"model_mode": "bedrock", **settings})
    env = Environment(account="123456789012", region=region) if region else None
    return Models(Stack(App(), "S", env=env), "Models", config=config)


def test_an_inference_profile_id_is_granted_with_its_model_in_every_destination() -> None:
    models = _bedrock_models(text_model_id="eu.anthropic.claude-3-haiku-20240307-v1:0")
    stack = models.node.scope
    assert models.environment[schema.ENV_TEXT_MODEL_ID] == (
        "eu.anthropic.claude-3-haiku-20240307-v1:0"
    )
    arns = [stack.resolve(arn) for arn in models.text.resources]
    assert [render(a) for a in arns] == [
        "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/"
        "eu.anthropic.claude-3-haiku-20240307-v1:0",
        "arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
    ]


def test_a_stack_in_a_known_region_gets_its_geography_s_profile_at_synth() -> None:
    models = _bedrock_models("ap-south-1")
    assert models.environment[schema.ENV_TEXT_MODEL_ID] == "apac.amazon.nova-micro-v1:0"


def test_a_stack_in_a_region_without_the_default_models_is_refused_at_synth() -> None:
    with pytest.raises(ValueError, match="chatmemory:textModelId and chatmemory:embedModelId"):
        _bedrock_models("sa-east-1")
    # Naming the models works anywhere.
    named = _bedrock_models("sa-east-1", text_model_id="amazon.nova-lite-v1:0")
    assert named.environment[schema.ENV_TEXT_MODEL_ID] == "amazon.nova-lite-v1:0"


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
        # The stream function's other layer is the web adapter's (test_stream_function.py).
        assert {"Ref": name} in props["Layers"]
        assert len(props["Layers"]) == (2 if props["Handler"] == "stream.sh" else 1)


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

    runtime = ("Chat", "Stream", "Consolidate", "Purge", "Ingest", "Redrive")
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


# --- long-term memory: S3 Vectors ------------------------------------------------------------

# The functions that touch long-term memory (OPENSEARCH_ENDPOINT in the other search modes).
LONG_TERM_FUNCTIONS = {"Chat", "Stream", "Consolidate", "Purge", "Ingest", "Redrive"}
# S3 Vectors only, while the stack keeps a shared memory index to migrate.
VECTOR_FUNCTIONS = LONG_TERM_FUNCTIONS | {"MigrateMemory"}
OPENSEARCH_TYPES = (
    "AWS::OpenSearchService::Domain",
    "AWS::OpenSearchServerless::Collection",
    "AWS::OpenSearchServerless::SecurityPolicy",
    "AWS::OpenSearchServerless::AccessPolicy",
)


@pytest.fixture(scope="module")
def vectors(synth_cache: Synthesize) -> Synth:
    return synth_cache(searchMode="s3vectors")


def test_s3_vectors_search_uses_a_vector_bucket_instead_of_opensearch(vectors: Synth) -> None:
    for kind in OPENSEARCH_TYPES:
        vectors.template.resource_count_is(kind, 0)
    # CloudFormation creates the indexes: no index-setup function, Provider or custom resource.
    vectors.template.resource_count_is("Custom::LongTermIndexes", 0)
    assert "IndexSetup" not in vectors.stack.functions.functions
    assert vectors.stack.long_term.provider is None
    (bucket,) = vectors.resources("AWS::S3Vectors::VectorBucket").values()
    # SSE-S3, stated (the default, but the encryption of a vector bucket never changes).
    assert bucket["Properties"] == {
        "VectorBucketName": "chatmemory-dev-vectors",
        "EncryptionConfiguration": {"SseType": "AES256"},
    }


def test_s3_vectors_indexes_are_the_runtimes_definition(vectors: Synth) -> None:
    """One index per schema.LONG_TERM_INDEXES name with exactly schema.s3vectors_index_spec
    (what the adapter's ensure_indexes creates and checks locally): cosine on float32 vectors
    of the configured embedding dimension, and the metadata the adapter stores but never
    filters on declared non-filterable (an index cannot change them later)."""
    bucket_id = vectors.logical_id(vectors.stack.long_term.vector_bucket)
    config = vectors.stack.config
    spec = schema.s3vectors_index_spec(config.embed_dimension)
    indexes = {
        index["Properties"]["IndexName"]: index["Properties"]
        for index in vectors.resources("AWS::S3Vectors::Index").values()
    }
    assert set(indexes) == set(schema.LONG_TERM_INDEXES)
    for name, properties in indexes.items():
        assert properties == {
            "IndexName": name,
            "VectorBucketArn": {"Fn::GetAtt": [bucket_id, "VectorBucketArn"]},
            "DataType": spec["dataType"],
            "DistanceMetric": spec["distanceMetric"],
            "Dimension": spec["dimension"],
            "MetadataConfiguration": {
                "NonFilterableMetadataKeys": spec["metadataConfiguration"][
                    "nonFilterableMetadataKeys"
                ]
            },
        }
    assert (spec["dataType"], spec["distanceMetric"]) == ("float32", "cosine")
    assert config.embed_dimension == spec["dimension"] == 4096  # the default GPT-J embeddings
    # The keys every query filters on stay filterable.
    non_filterable = set(spec["metadataConfiguration"]["nonFilterableMetadataKeys"])
    assert not non_filterable & set(schema.S3VECTORS_FILTERABLE_KEYS)


def test_s3_vectors_functions_are_told_the_vector_bucket_and_nothing_of_opensearch(
    vectors: Synth,
) -> None:
    for name, function in vectors.stack.functions.functions.items():
        env = _env(vectors, function)
        assert schema.ENV_OPENSEARCH_ENDPOINT not in env, name
        assert schema.ENV_OPENSEARCH_SERVERLESS not in env, name
        if name in VECTOR_FUNCTIONS:
            assert env[schema.ENV_LONG_TERM_BACKEND] == "s3vectors", name
            assert env[schema.ENV_VECTOR_BUCKET] == "chatmemory-dev-vectors", name
            # Every user an index of their own at a million daily users (stacks/sizing.py).
            assert env[schema.ENV_VECTOR_BUCKETS] == "316", name
            assert env[schema.ENV_VECTOR_SHARED_INDEX] == "true", name
            assert env[schema.ENV_EMBED_DIMENSION] == "4096", name
        else:
            assert schema.ENV_LONG_TERM_BACKEND not in env, name
            assert schema.ENV_VECTOR_BUCKET not in env, name
    assert set(vectors.stack.functions.functions) > VECTOR_FUNCTIONS


def test_s3_vectors_monitoring_has_no_search_cluster_alarms(vectors: Synth) -> None:
    names = {
        a["Properties"]["MetricName"] for a in vectors.resources("AWS::CloudWatch::Alarm").values()
    }
    assert not names & {"ClusterStatus.red", "ClusterIndexWritesBlocked", "FreeStorageSpace"}


def test_end_user_roles_reach_the_chat_function(synth_cache: Synthesize) -> None:
    role = "arn:aws:iam::123456789012:role/apps/Backend"
    synth = synth_cache(auth="iam", endUserRoleArns=role)
    env = _env(synth, synth.stack.functions.functions["Chat"])
    assert env[schema.ENV_END_USER_ROLE_ARNS] == role
    default = synth_cache(auth="iam")
    assert schema.ENV_END_USER_ROLE_ARNS not in _env(
        default, default.stack.functions.functions["Chat"]
    )


def test_without_a_shared_memory_index_a_deployment_has_only_owners_indexes(
    synth_cache: Synthesize,
) -> None:
    """sharedMemoryIndex=false (a new deployment, or one migrated): no shared index, no
    migration function, and nothing is granted on a shared index any more."""
    synth = synth_cache(profile="serverless", sharedMemoryIndex="false", vectorBuckets="120")
    (index,) = synth.resources("AWS::S3Vectors::Index").values()
    assert index["Properties"]["IndexName"] == schema.PASSAGE_INDEX
    assert "MigrateMemory" not in synth.stack.functions.functions
    assert "MigrateMemoryFunctionName" not in synth.json["Outputs"]
    for name in LONG_TERM_FUNCTIONS:
        env = _env(synth, synth.stack.functions.functions[name])
        assert schema.ENV_VECTOR_SHARED_INDEX not in env and env[schema.ENV_VECTOR_BUCKETS] == "120"
    granted = json.dumps(synth.resources("AWS::IAM::Policy"))
    assert "ConversationMemoriesIndex" not in granted


def test_the_vector_bucket_leaves_room_for_the_owners_buckets_names(
    synth_cache: Synthesize,
) -> None:
    """A vector bucket's name has at most 63 characters; the owners' buckets add "-u<n>"."""
    synth = synth_cache(profile="serverless", stage="a-rather-long-stage-name-for-a-test-stack")
    name = synth.stack.long_term.bucket_name
    assert len(f"{name}-u9999") <= 63 and name.endswith("-vectors")


def test_development_vector_bucket_goes_with_the_stack(vectors: Synth) -> None:
    for kind in ("AWS::S3Vectors::VectorBucket", "AWS::S3Vectors::Index"):
        for resource in vectors.resources(kind).values():
            assert resource["DeletionPolicy"] == "Delete"


# --- the serverless profile ------------------------------------------------------------------

# Every resource type of the serverless profile and what it bills while nobody calls the API
# (docs/cost.md lists the same). Anything else fails here until it is listed.
IDLE_BILLING: dict[str, str] = {
    "AWS::DynamoDB::Table": "storage and point-in-time recovery per GB",
    "AWS::S3Vectors::VectorBucket": "storage per GB (its indexes)",
    "AWS::S3Vectors::Index": "storage per GB",
    "AWS::Logs::LogGroup": "stored logs per GB",
    "AWS::Lambda::Function": "nothing (the sweeper's runs every sweepMinutes: cents)",
    "AWS::Lambda::EventSourceMapping": "nothing (Lambda reads DynamoDB streams for free)",
    "AWS::Lambda::Permission": "nothing",
    "AWS::Events::Rule": "nothing (scheduled rules are free)",
    "AWS::IAM::Role": "nothing",
    "AWS::IAM::Policy": "nothing",
    "AWS::SQS::Queue": "nothing",
    "AWS::SQS::QueuePolicy": "nothing",
    "AWS::ApiGateway::RestApi": "nothing",
    "AWS::ApiGateway::Account": "nothing",
    "AWS::ApiGateway::Deployment": "nothing",
    "AWS::ApiGateway::Stage": "nothing",
    "AWS::ApiGateway::Resource": "nothing",
    "AWS::ApiGateway::Method": "nothing",
    "AWS::ApiGateway::GatewayResponse": "nothing",
    "AWS::ApiGateway::Authorizer": "nothing",
    "AWS::Cognito::UserPool": "nothing (Essentials: per monthly active user beyond the free tier)",
    "AWS::Cognito::UserPoolClient": "nothing",
    "AWS::Cognito::UserPoolGroup": "nothing (the agents)",
    "AWS::Events::EventBus": "nothing (hand-off events: $1 per million published)",
    "AWS::SNS::Topic": "nothing",
    "AWS::SNS::TopicPolicy": "nothing",
    # The fixed monthly fees, and the switch that drops each.
    "AWS::CloudWatch::Alarm": "$0.10 each beyond the account's 10 free (alarms=false)",
    "AWS::CloudWatch::Dashboard": "$3 beyond the account's 3 free (dashboard=false)",
}
FIXED_FEES = {"AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard"}


@pytest.fixture(scope="module")
def serverless_profile(synth_cache: Synthesize) -> Synth:
    return synth_cache(profile="serverless")


def _types(synth: Synth) -> set[str]:
    return {resource["Type"] for resource in synth.json["Resources"].values()}


def test_serverless_profile_deploys_only_what_bills_per_request_or_stored_byte(
    serverless_profile: Synth,
) -> None:
    assert _types(serverless_profile) == set(IDLE_BILLING)
    for kind in ("AWS::Lambda::Version", "AWS::Lambda::Alias", "AWS::EC2::NatGateway"):
        assert kind not in _types(serverless_profile)
    for function in serverless_profile.resources("AWS::Lambda::Function").values():
        assert "VpcConfig" not in function["Properties"]
    for mapping in serverless_profile.resources("AWS::Lambda::EventSourceMapping").values():
        assert "ProvisionedPollerConfig" not in mapping["Properties"]
    (pool,) = serverless_profile.resources("AWS::Cognito::UserPool").values()
    assert pool["Properties"]["UserPoolTier"] == "ESSENTIALS"
    assert "UserPoolAddOns" not in pool["Properties"]


def test_serverless_profile_models_are_bedrocks_and_the_indexes_fit_them(
    serverless_profile: Synth,
) -> None:
    config = serverless_profile.stack.config
    chat = _env(serverless_profile, serverless_profile.stack.api.handler)
    assert chat[schema.ENV_TEXT_BACKEND] == chat[schema.ENV_EMBED_BACKEND] == "bedrock"
    assert render(chat[schema.ENV_TEXT_MODEL_ID]).endswith("].prefix}.amazon.nova-micro-v1:0")
    assert config.text_model_id == ""  # the region's default
    assert chat[schema.ENV_EMBED_MODEL_ID] == config.embed_model_id
    assert chat[schema.ENV_EMBED_DIMENSION] == "1024"
    assert chat[schema.ENV_LONG_TERM_BACKEND] == "s3vectors"
    dimensions = {
        index["Properties"]["Dimension"]
        for index in serverless_profile.resources("AWS::S3Vectors::Index").values()
    }
    assert dimensions == {1024}


def test_serverless_profile_keeps_alarms_and_dashboard_unless_switched_off(
    serverless_profile: Synth, synth_cache: Synthesize
) -> None:
    assert len(serverless_profile.resources("AWS::CloudWatch::Alarm")) == 17
    assert "AlarmTopicArn" in serverless_profile.json["Outputs"]
    # No key of the topic's own ($1 a month; alarms carry no user data) unless asked for.
    (topic,) = serverless_profile.resources("AWS::SNS::Topic").values()
    assert "KmsMasterKeyId" not in topic.get("Properties", {})
    keyed = synth_cache(profile="serverless", alarmTopicKey="true")
    assert set(keyed.resources("AWS::KMS::Key")) == {keyed.logical_id(keyed.stack.monitoring.key)}
    quiet = synth_cache(profile="serverless", alarms="false", dashboard="false")
    assert _types(quiet) == set(IDLE_BILLING) - FIXED_FEES - {
        "AWS::SNS::Topic",
        "AWS::SNS::TopicPolicy",
    }
    assert "AlarmTopicArn" not in quiet.json["Outputs"]
    assert quiet.stack.monitoring.topic is None and quiet.stack.monitoring.key is None


def test_a_dashboard_without_alarms_has_no_alarm_widget(synth_cache: Synthesize) -> None:
    """alarms=false alone (no profile): the dashboard stays, without the alarm status row."""
    synth = synth_cache(profile="serverless", alarms="false")
    synth.template.resource_count_is("AWS::CloudWatch::Alarm", 0)
    (dashboard,) = synth.resources("AWS::CloudWatch::Dashboard").values()
    widgets = json.loads(render(dashboard["Properties"]["DashboardBody"]))["widgets"]
    titles = {widget["properties"].get("title") for widget in widgets}
    assert "Lambda errors" in titles and "Alarms" not in titles
    assert {widget["type"] for widget in widgets} == {"metric"}


@pytest.fixture(scope="module")
def serverless_production(synth_cache: Synthesize) -> Synth:
    return synth_cache(profile="serverless", stage="prod")


def test_serverless_profile_in_production_retains_vectors_without_fixed_fees(
    serverless_production: Synth,
) -> None:
    for kind in ("AWS::S3Vectors::VectorBucket", "AWS::S3Vectors::Index"):
        resources = serverless_production.resources(kind).values()
        assert resources
        for resource in resources:
            assert resource["DeletionPolicy"] == "Retain"
            assert resource["UpdateReplacePolicy"] == "Retain"
    serverless_production.template.resource_count_is("AWS::WAFv2::WebACL", 0)
    (pool,) = serverless_production.resources("AWS::Cognito::UserPool").values()
    assert pool["Properties"]["UserPoolTier"] == "ESSENTIALS"
    assert pool["Properties"]["DeletionProtection"] == "ACTIVE"
    assert _types(serverless_production) == set(IDLE_BILLING)


# --- chat API: IAM authorization -------------------------------------------------------------


def test_iam_auth_signs_every_method_and_deploys_no_user_pool(synth_cache: Synthesize) -> None:
    iam = synth_cache(auth="iam")
    iam.template.resource_count_is("AWS::Cognito::UserPool", 0)
    for method in iam.resources("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        expected = "NONE" if props["HttpMethod"] == "OPTIONS" else "AWS_IAM"
        assert props["AuthorizationType"] == expected
    assert "UserPoolId" not in iam.json["Outputs"]


def test_iam_auth_agents_are_the_sessions_of_a_role_the_chat_function_knows(
    synth_cache: Synthesize,
) -> None:
    """The agents assume AgentRole (its Invoke scope: test_permissions.py); the function compares
    the caller's assumed-role ARN with AGENT_ROLE_ARN. No Cognito group, so no AGENT_GROUP."""
    iam = synth_cache(auth="iam")
    auth = iam.stack.api.auth
    role_id = iam.logical_id(auth.agent_role)
    env = _env(iam, iam.stack.api.handler)
    assert env[schema.ENV_AGENT_ROLE_ARN] == {"Fn::GetAtt": [role_id, "Arn"]}
    assert schema.ENV_AGENT_GROUP not in env
    iam.template.resource_count_is("AWS::Cognito::UserPoolGroup", 0)
    outputs = iam.json["Outputs"]
    assert outputs["AgentRoleArn"]["Value"] == {"Fn::GetAtt": [role_id, "Arn"]}
    assert outputs["UserPolicyArn"]["Value"] == {"Ref": iam.logical_id(auth.user_policy)}
    assert "AgentGroupName" not in outputs
    # The hand-off bus does not depend on how callers authenticate.
    assert env[schema.ENV_EVENT_BUS] == {"Ref": iam.logical_id(iam.stack.handoff.bus)}


# --- hand-off to a person: settings ----------------------------------------------------------


@pytest.fixture(scope="module")
def handoff_rules(synth_cache: Synthesize) -> Synth:
    return synth_cache(**VARIANTS["handoff-rules"])


def test_hand_off_settings_reach_the_chat_function(handoff_rules: Synth) -> None:
    env = _env(handoff_rules, handoff_rules.stack.api.handler)
    assert env[schema.ENV_HANDOFF_ON_NOTHING_VERIFIED] == "true"
    assert env[schema.ENV_HANDOFF_NEGATIVE_TURNS] == "3"
    assert env[schema.ENV_HANDOFF_NEGATIVE_SCORE] == "-0.25"
    assert env[schema.ENV_AGENT_GROUP] == "support"
    (group,) = handoff_rules.resources("AWS::Cognito::UserPoolGroup").values()
    assert group["Properties"]["GroupName"] == "support"


def test_without_handoff_events_there_is_no_bus_and_nothing_to_publish_to(
    handoff_rules: Synth,
) -> None:
    assert handoff_rules.stack.handoff.bus is None
    handoff_rules.template.resource_count_is("AWS::Events::EventBus", 0)
    assert not {"HandoffEventBusName", "HandoffEventBusArn"} & set(handoff_rules.json["Outputs"])
    for function in handoff_rules.stack.functions.functions.values():
        assert schema.ENV_EVENT_BUS not in _env(handoff_rules, function)


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
                    "ZoneAwarenessEnabled": True,
                    "DedicatedMasterEnabled": True,
                    "DedicatedMasterCount": 3,
                }
            )
        },
    )
    (domain,) = production.resources("AWS::OpenSearchService::Domain").values()
    assert domain["DeletionPolicy"] == "Retain"
    count = domain["Properties"]["ClusterConfig"]["InstanceCount"]
    assert count >= 2 and count % 2 == 0  # as many in each of the two AZs


def _domain_size(synth: Synth) -> tuple[str, int, int, str]:
    """A domain's instance type and count, its volume (GiB) and the shards its setup creates."""
    (domain,) = synth.resources("AWS::OpenSearchService::Domain").values()
    props = domain["Properties"]
    setup = synth.stack.long_term.setup_function
    assert setup is not None
    return (
        props["ClusterConfig"]["InstanceType"],
        props["ClusterConfig"]["InstanceCount"],
        props["EBSOptions"]["VolumeSize"],
        _env(synth, setup)[schema.ENV_OPENSEARCH_SHARDS],
    )


def test_the_domain_in_the_template_grows_with_the_daily_users_it_is_planned_for(
    default: Synth, production: Synth
) -> None:
    """A plain synth's domain is a trial's (one small node, stacks/sizing.TRIAL_DAILY_USERS);
    production's is sized for the default load (a million daily users: as many large nodes,
    volume and shards as a year of its memories need, stacks/sizing.search_domain)."""
    trial = _domain_size(default)
    assert trial == ("t3.small.search", 1, 10, "1")
    kind, nodes, volume, shards = _domain_size(production)
    planned = sizing.search_domain(
        sizing.Load(daily_users=1_000_000), dimension=4096, on_disk=True, production=True
    )
    assert (kind, nodes, volume, int(shards)) == planned[:4]
    assert nodes > trial[1] and volume > trial[2] and int(shards) > int(trial[3])
    # Past an index's 1,024 shards, owners are spread over several memory indexes, each made
    # by the setup, named to the runtime and granted by name (not by a pattern).
    assert planned.memory_indexes > 1
    names = schema.memory_index_names(planned.memory_indexes)
    chat = _env(production, production.stack.api.handler)
    assert chat[schema.ENV_OPENSEARCH_MEMORY_INDEXES] == str(planned.memory_indexes)
    granted = json.dumps(production.json)
    for name in names:
        assert f"/{name}/_msearch" in granted and f"/{name}/_bulk" in granted
    role = production.stack.long_term.runtime_role_body
    assert role is not None
    assert role["index_permissions"][0]["index_patterns"] == [*names, schema.PASSAGE_INDEX]
    assert schema.ENV_OPENSEARCH_MEMORY_INDEXES not in _env(default, default.stack.api.handler)
    memory = sizing.instance(kind)
    assert memory is not None and memory.memory_gib > 2  # not a t3.small


def test_the_domain_s_indexes_keep_no_vector_in_their_source_and_serverless_s_do(
    default: Synth, serverless: Synth
) -> None:
    """The mapping the index setup creates a domain's indexes with (its digest is the custom
    resource's IndexBodySha256, so a change re-runs the setup) excludes the vector from the
    stored _source; a Serverless collection's mapping has no _source setting."""
    body = default.stack.long_term.index_body
    assert body is not None and body["mappings"]["_source"] == {"excludes": ["embedding"]}
    assert body["settings"]["index"]["number_of_shards"] == int(_domain_size(default)[3])
    role = default.stack.long_term.runtime_role_body
    assert role is not None
    digest = hashlib.sha256(json.dumps([body, role], sort_keys=True).encode()).hexdigest()
    default.template.has_resource_properties("Custom::LongTermIndexes", {"IndexBodySha256": digest})
    collection = serverless.stack.long_term.index_body
    assert collection is not None and "_source" not in collection["mappings"]


def test_a_domain_sized_like_a_cluster_says_at_synth_what_it_costs_a_month(
    default: Synth, production: Synth, synth_cache: Synthesize
) -> None:
    """A domain of more than two data nodes (production's default, or a dailyUsers given in
    development) is a warning at every synth with its monthly cost at the price table's list
    prices and the setting that sizes it; a plain synth's trial domain says nothing."""
    Annotations.from_stack(default.stack).has_no_warning("*", Match.string_like_regexp("domain"))
    sized = synth_cache(dailyUsers="1000000")
    for synth in (production, sized):
        config = synth.stack.config
        month = sum(item.usd for item in domain_items(domain_of(config), prices.table()))
        assert month > 200_000  # 60 r6g.12xlarge.search and their volumes
        Annotations.from_stack(synth.stack).has_warning(
            "*",
            Match.string_like_regexp(
                rf"60 x r6g\.12xlarge\.search .*about \${month:,.0f} a month.*chatmemory:dailyUsers"
            ),
        )


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


def test_development_keeps_waf_off_and_cheap_search_for_a_trial_load(
    synth_cache: Synthesize,
) -> None:
    trial = synth_cache()
    trial.template.resource_count_is("AWS::WAFv2::WebACL", 0)
    trial.template.has_resource_properties(
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


# --- Lambda SnapStart on the chat function (chatSnapStart) ------------------------------------


@pytest.fixture(scope="module")
def snap_start(synth_cache: Synthesize) -> Synth:
    return synth_cache(**VARIANTS["serverless-snapstart"])


def test_snap_start_snapshots_the_chat_functions_published_versions_only(
    snap_start: Synth, synth_cache: Synthesize
) -> None:
    functions = snap_start.resources("AWS::Lambda::Function")
    chat = snap_start.logical_id(snap_start.stack.api.handler)
    assert functions[chat]["Properties"]["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    others = [f for name, f in functions.items() if name != chat]
    assert others and not any("SnapStart" in f["Properties"] for f in others)
    # Off unless asked for: no snapshot, no alias, no version.
    plain = synth_cache(**VARIANTS["serverless-profile"])
    assert not plain.resources("AWS::Lambda::Alias")
    assert not plain.resources("AWS::Lambda::Version")
    assert not any(
        "SnapStart" in f["Properties"] for f in plain.resources("AWS::Lambda::Function").values()
    )


def test_with_snap_start_the_api_calls_the_alias_of_the_newest_version(snap_start: Synth) -> None:
    chat = snap_start.logical_id(snap_start.stack.api.handler)
    ((version_id, version),) = snap_start.resources("AWS::Lambda::Version").items()
    assert render(version["Properties"]["FunctionName"]) == f"${{{chat}}}"
    # A replaced version is deleted, so no old snapshot stays cached (and billed).
    assert version["DeletionPolicy"] == "Delete"
    ((alias_id, alias),) = snap_start.resources("AWS::Lambda::Alias").items()
    assert alias["Properties"]["Name"] == "live"
    assert render(alias["Properties"]["FunctionVersion"]) == f"${{{version_id}.Version}}"
    # Every method API Gateway proxies to the chat function invokes the alias (the streamed
    # route goes to the stream function, which is not snapshotted), and only the alias of the
    # chat function may be invoked by it.
    stream = snap_start.logical_id(snap_start.stack.api.stream_handler)
    uris = [
        json.dumps(method["Properties"]["Integration"]["Uri"])
        for method in snap_start.resources("AWS::ApiGateway::Method").values()
        if method["Properties"].get("Integration", {}).get("Type") == "AWS_PROXY"
        and stream not in json.dumps(method["Properties"]["Integration"]["Uri"])
    ]
    assert uris and all(alias_id in uri and chat not in uri for uri in uris)
    invokers = [
        render(permission["Properties"]["FunctionName"])
        for permission in snap_start.resources("AWS::Lambda::Permission").values()
        if permission["Properties"]["Principal"] == "apigateway.amazonaws.com"
    ]
    assert invokers and set(invokers) == {f"${{{alias_id}}}", f"${{{stream}.Arn}}"}
