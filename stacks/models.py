"""Models: the text and embedding models of the configured providers (existing SageMaker
endpoints by default, endpoints deployed here from Hugging Face containers, or Amazon Bedrock:
stacks/model_providers.py), and what the providers' entries need of CDK. Functions may invoke
only the configured endpoints or models."""

from __future__ import annotations

from aws_cdk import ArnFormat, Aws, CfnMapping, CfnRule, CfnRuleAssertion, Fn, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from chatmemory import schema
from chatmemory.schema import inference_profile
from stacks import nag
from stacks.config import Config
from stacks.model_providers import EMBED_PROVIDERS, TEXT_PROVIDERS, DeployedModel

# ECR registries of AWS's Hugging Face inference containers, by region (from the SageMaker
# Python SDK's image_uri_config: huggingface-llm.json for TGI, huggingface-tei-cpu.json for TEI).
_TGI_REPOSITORY = "huggingface-pytorch-tgi-inference"
_TEI_REPOSITORY = "tei-cpu"
_DLC = "763104351884"
TGI_REGISTRIES = {
    "us-east-1": _DLC, "us-east-2": _DLC, "us-west-1": _DLC, "us-west-2": _DLC,
    "ca-central-1": _DLC, "sa-east-1": _DLC, "eu-central-1": _DLC, "eu-north-1": _DLC,
    "eu-west-1": _DLC, "eu-west-2": _DLC, "eu-west-3": _DLC, "ap-northeast-1": _DLC,
    "ap-northeast-2": _DLC, "ap-south-1": _DLC, "ap-southeast-1": _DLC, "ap-southeast-2": _DLC,
}  # fmt: skip
TEI_REGISTRIES = {
    "us-east-1": "683313688378", "us-east-2": "257758044811", "us-west-1": "746614075791",
    "us-west-2": "246618743249", "ca-central-1": "341280168497", "sa-east-1": "737474898029",
    "eu-central-1": "492215442770", "eu-north-1": "662702820516", "eu-west-1": "141502667606",
    "eu-west-2": "764974769150", "eu-west-3": "659782779980", "ap-northeast-1": "354813040037",
    "ap-northeast-2": "366743142698", "ap-south-1": "720646828776",
    "ap-southeast-1": "121021644041", "ap-southeast-2": "783357654285",
}  # fmt: skip


# Bedrock: the default models of the bedrock providers, and where they run. Amazon Nova Micro is on
# demand in us-east-1 only; elsewhere it is reached through the cross-region inference profile of
# the region's geography ("eu.amazon.nova-micro-v1:0"), which Bedrock routes to the model in one
# of the geography's regions. Titan Text Embeddings V2 is on demand in each region below. The
# regions where both are known to work (Bedrock User Guide: "Supported foundation models" and
# "Supported Regions and models for inference profiles"); a deployment elsewhere stops before it
# creates anything and says to set textModelId and embedModelId (see DEFAULT_MODELS_RULE).
DEFAULT_TEXT_MODEL = "amazon.nova-micro-v1:0"
DEFAULT_EMBED_MODEL = "amazon.titan-embed-text-v2:0"
DEFAULT_MODEL_GEOGRAPHY: dict[str, str] = {
    "us-east-1": "us",
    "us-west-2": "us",
    "eu-central-1": "eu",
    "ap-northeast-1": "apac",
    "ap-south-1": "apac",
    "ap-southeast-2": "apac",
}
# What each foundation model id named here runs on demand in (the contract check reads it).
ON_DEMAND_REGIONS: dict[str, frozenset[str]] = {
    DEFAULT_TEXT_MODEL: frozenset({"us-east-1"}),
    DEFAULT_EMBED_MODEL: frozenset(DEFAULT_MODEL_GEOGRAPHY),
}
DEFAULT_MODELS_RULE = "DefaultModelsInRegion"


def default_text_model(region: str) -> str:
    """The default text model's id in `region`: the inference profile of its geography."""
    geography = DEFAULT_MODEL_GEOGRAPHY.get(region)
    if geography is None:
        raise ValueError(
            f"the default Bedrock models are not known to run in {region}: set "
            "chatmemory:textModelId and chatmemory:embedModelId to a text model (or its "
            "inference profile id, such as eu.amazon.nova-micro-v1:0) and an embedding model "
            f"that your account can invoke in {region}, or deploy to one of "
            f"{', '.join(sorted(DEFAULT_MODEL_GEOGRAPHY))}"
        )
    return f"{geography}.{DEFAULT_TEXT_MODEL}"


def _statements(actions: list[str], arns: list[str]) -> list[iam.PolicyStatement]:
    """Invoking the models `arns` name. Of a cross-region inference profile (its ARN, then its
    model's in every region), the model only through that profile: the condition on
    bedrock:InferenceProfileArn keeps a function from invoking the model on demand in any
    region the grant names, outside the profile's geography (Bedrock User Guide,
    "Prerequisites for inference profiles")."""
    profiles = [arn for arn in arns if ":inference-profile/" in arn]
    if not profiles:
        return [iam.PolicyStatement(actions=actions, resources=arns)]
    (profile,) = profiles
    return [
        iam.PolicyStatement(actions=actions, resources=[profile]),
        iam.PolicyStatement(
            actions=actions,
            resources=[arn for arn in arns if arn != profile],
            conditions={"StringEquals": {"bedrock:InferenceProfileArn": profile}},
        ),
    ]


class Models(Construct):
    """The text and embedding models of the configured providers (stacks/model_providers.py),
    each its own. `environment` is what the runtime reads; `grant_text` / `grant_embed` allow
    invoking exactly these models."""

    def __init__(self, scope: Construct, construct_id: str, *, config: Config) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self.text = TEXT_PROVIDERS[config.text_provider].deploy(
            self, config, schema.ENV_TEXT_BACKEND
        )
        self.embed = EMBED_PROVIDERS[config.embed_provider].deploy(
            self, config, schema.ENV_EMBED_BACKEND
        )
        self.environment = {
            **self.text.environment,
            **self.embed.environment,
            schema.ENV_EMBED_DIMENSION: str(config.embed_dimension),
        }

    def grant_text(self, function: lambda_.IFunction) -> None:
        self._grant(function, self.text)

    def grant_embed(self, function: lambda_.IFunction) -> None:
        self._grant(function, self.embed)

    def _grant(self, function: lambda_.IFunction, model: DeployedModel) -> None:
        if not model.actions:
            return  # a model its provider needs no grant for
        arns = model.resources
        for statement in _statements(list(model.actions), arns):
            function.add_to_role_policy(statement)
        role = function.role
        assert role is not None
        for arn in arns:
            if ":bedrock:*::" in arn:
                nag.wildcard(
                    role,
                    arn.replace(Aws.PARTITION, "<AWS::Partition>"),
                    "A cross-region inference profile sends each request to its model in one of "
                    "the profile's destination regions, chosen by Bedrock per request: the model "
                    "must be allowed in each of them (the profile itself is allowed in the "
                    "stack's region only).",
                )

    def default_text_model_id(self) -> str:
        """The default text model of the stack's region: resolved now when the stack names
        its region (an unknown region stops the synth with what to set), else chosen by
        CloudFormation from a mapping, with a rule that stops a deployment to a region
        without the default models before anything is created."""
        region = Stack.of(self).region
        if not Token.is_unresolved(region):
            return default_text_model(region)
        mapping = CfnMapping(
            self,
            "DefaultModelGeography",
            mapping={
                region: {"prefix": prefix} for region, prefix in DEFAULT_MODEL_GEOGRAPHY.items()
            },
        )
        CfnRule(
            Stack.of(self),
            DEFAULT_MODELS_RULE,
            assertions=[
                CfnRuleAssertion(
                    assert_=Fn.condition_contains(sorted(DEFAULT_MODEL_GEOGRAPHY), Aws.REGION),
                    assert_description=(
                        "The default Bedrock models (Amazon Nova Micro through the region's "
                        "cross-region inference profile, Titan Text Embeddings V2) are not known "
                        "to run in this region. Set chatmemory:textModelId and "
                        "chatmemory:embedModelId to models your account can invoke here (cdk "
                        "deploy -c chatmemory:textModelId=... -c chatmemory:embedModelId=...), "
                        f"or deploy to one of {', '.join(sorted(DEFAULT_MODEL_GEOGRAPHY))}."
                    ),
                )
            ],
        )
        return Fn.join(".", [mapping.find_in_map(Aws.REGION, "prefix"), DEFAULT_TEXT_MODEL])

    def bedrock_arns(self, model_id: str) -> list[str]:
        """What InvokeModel (and Converse) must be allowed on for `model_id`: the foundation
        model in the stack's region, or, for a cross-region inference profile, the profile
        and its model in every region the profile may route a request to."""
        profile = inference_profile(model_id) if not Token.is_unresolved(model_id) else None
        if profile is None and not Token.is_unresolved(model_id):
            return [f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}::foundation-model/{model_id}"]
        foundation = profile[1] if profile else DEFAULT_TEXT_MODEL
        return [
            f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}:{Aws.ACCOUNT_ID}:inference-profile/"
            f"{model_id}",
            # Bedrock picks the destination region per request (a global profile's model ARN
            # has no region at all, which '*' matches too).
            f"arn:{Aws.PARTITION}:bedrock:*::foundation-model/{foundation}",
        ]

    # --- endpoints this stack deploys: Hugging Face containers --------------------------------

    def _execution_role(self) -> iam.Role:
        if not hasattr(self, "_role"):
            self._role = iam.Role(
                self,
                "EndpointRole",
                assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
                description="SageMaker endpoints of the chat memory models",
            )
            self._role.add_to_policy(
                iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"])
            )
            self._role.add_to_policy(
                iam.PolicyStatement(
                    actions=["cloudwatch:PutMetricData"],
                    resources=["*"],
                    conditions={
                        "StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/Endpoints"}
                    },
                )
            )
            nag.wildcard(
                self._role,
                "*",
                "ecr:GetAuthorizationToken and cloudwatch:PutMetricData have no resource-level "
                "permissions (AWS requires '*'); PutMetricData is limited to SageMaker's endpoint "
                "namespace by a condition. Image pulls are limited to the two repositories.",
            )
        return self._role

    def _allow_endpoint(self, registry: str, repository: str, endpoint_name: str) -> None:
        role = self._execution_role()
        stack = Stack.of(self)
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                ],
                resources=[
                    f"arn:{Aws.PARTITION}:ecr:{Aws.REGION}:{registry}:repository/{repository}"
                ],
            )
        )
        group = f"/aws/sagemaker/Endpoints/{endpoint_name}"
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:DescribeLogStreams",
                    "logs:PutLogEvents",
                ],
                resources=[
                    stack.format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name=group,
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    ),
                    stack.format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name=f"{group}:log-stream:*",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    ),
                ],
            )
        )
        nag.wildcard(
            role,
            f"arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:{group}"
            ":log-stream:*",
            f"Log streams of the {endpoint_name} endpoint are named by SageMaker per instance.",
        )

    def _image(
        self, mapping_id: str, registries: dict[str, str], repository: str, tag: str
    ) -> tuple[str, str]:
        mapping = CfnMapping(
            self,
            mapping_id,
            mapping={region: {"account": acct} for region, acct in registries.items()},
        )
        registry = mapping.find_in_map(Aws.REGION, "account")
        return registry, f"{registry}.dkr.ecr.{Aws.REGION}.{Aws.URL_SUFFIX}/{repository}:{tag}"

    def deploy_tgi(self) -> tuple[str, str]:
        config = self._config
        name = f"{Stack.of(self).stack_name}-text"
        registry, image = self._image(
            "TgiRegistry", TGI_REGISTRIES, _TGI_REPOSITORY, config.tgi_image_tag
        )
        self._allow_endpoint(registry, _TGI_REPOSITORY, name)
        model = sagemaker.CfnModel(
            self,
            "TextModel",
            execution_role_arn=self._execution_role().role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image,
                environment={
                    "HF_MODEL_ID": config.deploy_text_model,
                    "SM_NUM_GPUS": "1",
                    "MAX_INPUT_TOKENS": "3072",
                    "MAX_TOTAL_TOKENS": "4096",
                },
            ),
        )
        model.node.add_dependency(self._execution_role())
        endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "TextEndpointConfig",
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name="AllTraffic",
                    model_name=model.attr_model_name,
                    initial_instance_count=1,
                    instance_type=config.deploy_text_instance_type,
                    initial_variant_weight=1,
                    # Downloading and loading the model from the Hub takes minutes.
                    container_startup_health_check_timeout_in_seconds=900,
                )
            ],
        )
        endpoint = sagemaker.CfnEndpoint(
            self,
            "TextEndpoint",
            endpoint_name=name,
            endpoint_config_name=endpoint_config.attr_endpoint_config_name,
        )
        return name, endpoint.ref

    def deploy_tei(self) -> tuple[str, str]:
        config = self._config
        name = f"{Stack.of(self).stack_name}-embed"
        registry, image = self._image(
            "TeiRegistry", TEI_REGISTRIES, _TEI_REPOSITORY, config.tei_image_tag
        )
        self._allow_endpoint(registry, _TEI_REPOSITORY, name)
        model = sagemaker.CfnModel(
            self,
            "EmbedModel",
            execution_role_arn=self._execution_role().role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image, environment={"HF_MODEL_ID": config.deploy_embed_model}
            ),
        )
        model.node.add_dependency(self._execution_role())
        endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "EmbedEndpointConfig",
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name="AllTraffic",
                    model_name=model.attr_model_name,
                    # Serverless inference: billed per request, nothing while idle.
                    serverless_config=sagemaker.CfnEndpointConfig.ServerlessConfigProperty(
                        memory_size_in_mb=config.deploy_embed_memory_mb,
                        max_concurrency=config.deploy_embed_max_concurrency,
                    ),
                )
            ],
        )
        endpoint = sagemaker.CfnEndpoint(
            self,
            "EmbedEndpoint",
            endpoint_name=name,
            endpoint_config_name=endpoint_config.attr_endpoint_config_name,
        )
        return name, endpoint.ref
