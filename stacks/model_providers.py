"""Model providers of a deployment: how the stack gets each model to its functions, one entry per
provider, for the text model and the embedding model independently (`chatmemory:textProvider`,
`chatmemory:embedProvider`).

An entry names the runtime provider it configures (chatmemory/providers.py), the deploy
settings its functions read (Config fields, passed as the runtime variables of the same name),
the IAM actions they need and on which resources (ARN templates), whether it bills by the hour
whatever the traffic (the serverless profile refuses those) and what it changes in the other
settings' defaults (a payload format, the embedding size). A provider whose resources are only
named needs no code: ModelProvider as it is does the rest (stacks/models.py applies it). The
built-in ones that find a default model, name ARNs in their own way or deploy an endpoint say
so in a subclass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from aws_cdk import Aws, Stack

from chatmemory import schema
from chatmemory.schema import EmbedFormat, TextFormat
from chatmemory.settings import ENV

if TYPE_CHECKING:
    from stacks.config import Config
    from stacks.models import Models


class DeployedModel(NamedTuple):
    """What a function that calls one model gets: its environment and its grant."""

    environment: dict[str, str]
    actions: tuple[str, ...]
    resources: list[str]
    # What its streaming call needs besides (a function that streams answers: the stream
    # function); none for a model whose answers come whole.
    stream_actions: tuple[str, ...] = ()


def _env(value: Any) -> str:
    """A setting's value as a runtime variable holds it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return ",".join(value) if isinstance(value, tuple) else str(value)


@dataclass(frozen=True)
class ModelProvider:
    """One way a deployment provides a model (see the module's docstring)."""

    # The runtime provider it configures (TEXT_BACKEND or EMBED_BACKEND).
    backend: str
    # What it is, for the deploy settings' page and errors.
    summary: str
    # Config fields its functions read, as the runtime variables of the same settings.
    settings: tuple[str, ...] = ()
    # IAM actions a function that calls the model needs, on `resources`: ARN templates of
    # {partition}, {region}, {account} and the provider's settings.
    actions: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    # IAM actions of its streaming call (on the same resources), for the function that streams
    # answers; for a text model only, and only in the formats that stream (`streams`).
    stream_actions: tuple[str, ...] = ()
    # Why it bills by the hour whatever the traffic ("" when it does not).
    hourly: str = ""
    # The defaults it sets for other deploy settings (an explicit setting still wins).
    defaults: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def deploy(self, models: Models, config: Config, backend_variable: str) -> DeployedModel:
        """The model's environment and grant, with `backend_variable` naming the provider."""
        values = {name: getattr(config, name) for name in self.settings}
        return DeployedModel(
            {backend_variable: self.backend, **{ENV[n]: _env(v) for n, v in values.items()}},
            self.actions,
            [
                template.format(
                    partition=Aws.PARTITION, region=Aws.REGION, account=Aws.ACCOUNT_ID, **values
                )
                for template in self.resources
            ],
            self.stream_actions if self.streams(config) else (),
        )

    def streams(self, config: Config) -> bool:
        """Whether its answers stream as they are written (else they come whole, through
        `actions`, even on the streamed route)."""
        return bool(self.stream_actions)


@dataclass(frozen=True)
class _StreamsInTgi(ModelProvider):
    """A SageMaker text endpoint: its answers stream in the TGI format only (FLAN-T5's come
    whole: chatmemory/adapters/sagemaker.py)."""

    def streams(self, config: Config) -> bool:
        return bool(self.stream_actions) and config.text_format == TextFormat.TGI


@dataclass(frozen=True)
class SageMakerEndpoint(_StreamsInTgi):
    """An endpoint that exists: its name is the first of `settings`."""

    def deploy(self, models: Models, config: Config, backend_variable: str) -> DeployedModel:
        deployed = super().deploy(models, config, backend_variable)
        name = str(getattr(config, self.settings[0]))
        # Endpoint ARNs use the lower-cased name.
        arn = Stack.of(models).format_arn(
            service="sagemaker", resource="endpoint", resource_name=name.lower()
        )
        return deployed._replace(resources=[arn])


@dataclass(frozen=True)
class DeployedEndpoint(_StreamsInTgi):
    """An endpoint this stack deploys (`create` makes it and gives its name and ARN); its name
    reaches the functions as the setting `endpoint`."""

    endpoint: str = ""
    create: Callable[[Models], tuple[str, str]] = field(default=lambda models: ("", ""))

    def deploy(self, models: Models, config: Config, backend_variable: str) -> DeployedModel:
        name, arn = self.create(models)
        deployed = super().deploy(models, config, backend_variable)
        deployed.environment[ENV[self.endpoint]] = name
        return deployed._replace(resources=[arn])


@dataclass(frozen=True)
class BedrockModel(ModelProvider):
    """A Bedrock model or inference profile, its id the first of `settings`; unset, the one
    `default` chooses for the stack (the text model of its region: stacks/models.py)."""

    default: Callable[[Models], str] | None = None

    def deploy(self, models: Models, config: Config, backend_variable: str) -> DeployedModel:
        deployed = super().deploy(models, config, backend_variable)
        field_name = self.settings[0]
        model_id = getattr(config, field_name)
        if not model_id and self.default is not None:
            model_id = self.default(models)
        deployed.environment[ENV[field_name]] = model_id
        return deployed._replace(resources=models.bedrock_arns(model_id))


_SAGEMAKER_HOURLY = "SageMaker endpoints bill for every hour they run"
_INVOKE_ENDPOINT = ("sagemaker:InvokeEndpoint",)
_INVOKE_ENDPOINT_STREAM = ("sagemaker:InvokeEndpointWithResponseStream",)
# Converse is authorized as InvokeModel, ConverseStream as InvokeModelWithResponseStream.
_INVOKE_MODEL = ("bedrock:InvokeModel",)
_INVOKE_MODEL_STREAM = ("bedrock:InvokeModelWithResponseStream",)

# chatmemory:textProvider
TEXT_PROVIDERS: dict[str, ModelProvider] = {
    "sagemaker": SageMakerEndpoint(
        schema.TextBackend.SAGEMAKER,
        "an existing SageMaker endpoint (textEndpoint, in textFormat)",
        settings=("text_endpoint", "text_format"),
        actions=_INVOKE_ENDPOINT,
        stream_actions=_INVOKE_ENDPOINT_STREAM,
        hourly=_SAGEMAKER_HOURLY,
    ),
    "sagemaker-tgi": DeployedEndpoint(
        schema.TextBackend.SAGEMAKER,
        "a TGI endpoint this stack deploys (deployTextModel on deployTextInstanceType)",
        settings=("text_format",),
        actions=_INVOKE_ENDPOINT,
        stream_actions=_INVOKE_ENDPOINT_STREAM,
        hourly=_SAGEMAKER_HOURLY,
        defaults=MappingProxyType({"text_format": TextFormat.TGI}),
        endpoint="text_endpoint",
        create=lambda models: models.deploy_tgi(),
    ),
    "bedrock": BedrockModel(
        schema.TextBackend.BEDROCK,
        "an Amazon Bedrock model (textModelId; unset, the region's default)",
        settings=("text_model_id",),
        actions=_INVOKE_MODEL,
        stream_actions=_INVOKE_MODEL_STREAM,
        default=lambda models: models.default_text_model_id(),
    ),
}

# chatmemory:embedProvider
EMBED_PROVIDERS: dict[str, ModelProvider] = {
    "sagemaker": SageMakerEndpoint(
        schema.EmbedBackend.SAGEMAKER,
        "an existing SageMaker endpoint (embedEndpoint, in embedFormat)",
        settings=("embed_endpoint", "embed_format"),
        actions=_INVOKE_ENDPOINT,
        hourly=_SAGEMAKER_HOURLY,
        defaults=MappingProxyType(
            {"embed_format": EmbedFormat.JUMPSTART_GPT_J, "embed_dimension": 4096}
        ),
    ),
    # Serverless inference: billed per request, nothing while idle.
    "sagemaker-tei": DeployedEndpoint(
        schema.EmbedBackend.SAGEMAKER,
        "a TEI endpoint this stack deploys on serverless inference (deployEmbedModel)",
        settings=("embed_format",),
        actions=_INVOKE_ENDPOINT,
        defaults=MappingProxyType({"embed_format": EmbedFormat.TEI, "embed_dimension": 384}),
        endpoint="embed_endpoint",
        create=lambda models: models.deploy_tei(),
    ),
    "bedrock": BedrockModel(
        schema.EmbedBackend.BEDROCK,
        "an Amazon Bedrock model (embedModelId)",
        settings=("embed_model_id",),
        actions=_INVOKE_MODEL,
        defaults=MappingProxyType({"embed_dimension": 1024}),
    ),
}

# modelMode, the older setting that chose both at once: (textProvider, embedProvider).
MODEL_MODES: dict[str, tuple[str, str]] = {
    "endpoints": ("sagemaker", "sagemaker"),
    "deploy": ("sagemaker-tgi", "sagemaker-tei"),
    "bedrock": ("bedrock", "bedrock"),
}
