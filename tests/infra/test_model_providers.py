"""One place to add a model provider: a provider is an adapter and one entry in the runtime's
registry (chatmemory/providers.py) and, to deploy it, one entry in the stacks' registry
(stacks/model_providers.py), for the text model and the embedding model independently.

A fake provider added to the two registries and nowhere else is accepted by the runtime's
settings, built by the wiring, and deployed with its settings in every function's environment
and exactly the grant its entry names, in the functions that call a text model; a deployment
mixes providers of both kinds freely."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatmemory import providers, schema, wiring
from chatmemory.errors import ConfigurationError
from chatmemory.ports import Finish, GenerationOptions, Piece, TextGenerator
from chatmemory.settings import Settings
from stacks import model_providers
from stacks.config import Config, context_key
from tests.infra.synth import Synth, render, statements, synthesize


class EchoModel(TextGenerator):
    """The fake provider's adapter: answers with the prompt's last line."""

    context_tokens = 1024
    honours = frozenset({"max_new_tokens", "stop"})

    def __init__(self, name: str) -> None:
        self.name = name

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        yield f"echo: {prompt.splitlines()[-1]}"
        yield Finish(model=self.name)


ECHO_ARN = "arn:${AWS::Partition}:echo:${AWS::Region}:${AWS::AccountId}:model/echo-1"


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake provider, registered in the two registries and nowhere else."""
    monkeypatch.setitem(
        providers.TEXT_PROVIDERS,
        "echo",
        providers.Provider("a model that echoes", lambda cfg: EchoModel(cfg.text_model_id)),
    )
    monkeypatch.setitem(
        model_providers.TEXT_PROVIDERS,
        "echo",
        model_providers.ModelProvider(
            "echo",
            "an echo service (textModelId)",
            settings=("text_model_id",),
            actions=("echo:InvokeModel",),
            resources=("arn:{partition}:echo:{region}:{account}:model/{text_model_id}",),
        ),
    )


def test_a_provider_in_the_runtime_registry_is_a_backend_the_wiring_builds(echo: None) -> None:
    cfg = Settings.from_env({schema.ENV_TEXT_BACKEND: "echo", schema.ENV_TEXT_MODEL_ID: "echo-1"})
    generator = wiring.text_generator(cfg)
    assert isinstance(generator, EchoModel) and generator.name == "echo-1"
    assert generator.generate("User: hi", max_new_tokens=5).text == "echo: User: hi"
    # A name no registry holds is still a configuration error, which lists the new one.
    with pytest.raises(ConfigurationError, match="TEXT_BACKEND='ech'.*'echo'"):
        Settings.from_env({schema.ENV_TEXT_BACKEND: "ech"})
    # The built-in ones are still their enum members.
    assert Settings.from_env({schema.ENV_TEXT_BACKEND: "bedrock"}).text_backend is (
        schema.TextBackend.BEDROCK
    )


def test_a_provider_in_the_runtime_registry_is_documented_with_the_others() -> None:
    described = Settings.fields()["text_backend"].description
    for name, provider in providers.TEXT_PROVIDERS.items():
        assert f"`{name}` ({provider.summary})" in described
    described = Settings.fields()["embed_backend"].description
    assert all(f"`{name}`" in described for name in providers.EMBED_PROVIDERS)


def _env(synth: Synth, function: Any) -> dict[str, Any]:
    resources = synth.json["Resources"]
    return resources[synth.logical_id(function)]["Properties"]["Environment"]["Variables"]


def _grants(synth: Synth, function: Any) -> dict[str, set[str]]:
    """{action: resources} of the model actions (not DynamoDB's, S3's...) of a function."""
    role = synth.stack.get_logical_id(function.role.node.default_child)
    found: dict[str, set[str]] = {}
    for statement in statements(synth, role):
        for action in statement["Action"]:
            if action.split(":")[0] in ("echo", "bedrock", "sagemaker"):
                found.setdefault(action, set()).update(map(str, statement["Resource"]))
    return found


ENDPOINT = "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:endpoint/"


def test_a_provider_in_the_stacks_registry_is_deployed_with_its_settings_and_its_grant(
    echo: None, tmp_path: Path, synth_cache: Callable[..., Synth]
) -> None:
    synth = synthesize(tmp_path, textProvider="echo", textModelId="echo-1")
    assert synth.stack.config.model_mode == "mixed" and not synth.violations
    # The functions that call the text model, as with the default provider.
    default = synth_cache()
    text_endpoint = f"{ENDPOINT}{Config.text_endpoint}"
    calling = {
        name
        for name, function in default.stack.functions.functions.items()
        if text_endpoint in _grants(default, function).get("sagemaker:InvokeEndpoint", set())
    }
    called = {
        name
        for name, function in synth.stack.functions.functions.items()
        if _grants(synth, function).get("echo:InvokeModel") == {ECHO_ARN}
    }
    assert called == calling and "Chat" in called
    chat = synth.stack.api.handler
    endpoint = ENDPOINT
    assert _grants(synth, chat) == {
        "echo:InvokeModel": {ECHO_ARN},
        # The embeddings keep their own provider: the default endpoint.
        "sagemaker:InvokeEndpoint": {f"{endpoint}{Config.embed_endpoint}"},
    }
    env = _env(synth, chat)
    assert (env[schema.ENV_TEXT_BACKEND], env[schema.ENV_TEXT_MODEL_ID]) == ("echo", "echo-1")
    assert env[schema.ENV_EMBED_BACKEND] == "sagemaker"
    # What the function reads at its cold start builds the fake's adapter.
    settings = Settings.from_env({k: v for k, v in env.items() if isinstance(v, str)})
    assert isinstance(wiring.text_generator(settings), EchoModel)


@pytest.fixture(scope="module")
def mixed(synth_cache: Callable[..., Synth]) -> Synth:
    """Bedrock's text model with embeddings from a TEI endpoint the stack deploys, in the
    serverless profile (serverless inference bills per request, not by the hour)."""
    return synth_cache(profile="serverless", embedProvider="sagemaker-tei")


def test_the_text_and_embedding_providers_are_chosen_independently(mixed: Synth) -> None:
    config = mixed.stack.config
    assert (config.text_provider, config.embed_provider) == ("bedrock", "sagemaker-tei")
    assert not mixed.violations  # cdk-nag
    assert (config.embed_format, config.embed_dimension) == ("tei", 384)
    # Only the embeddings' endpoint is deployed.
    mixed.template.resource_count_is("AWS::SageMaker::Endpoint", 1)
    (endpoint_id,) = mixed.resources("AWS::SageMaker::Endpoint")
    grants = _grants(mixed, mixed.stack.api.handler)
    assert grants["sagemaker:InvokeEndpoint"] == {f"${{{endpoint_id}}}"}
    assert set(grants) == {"sagemaker:InvokeEndpoint", "bedrock:InvokeModel"}
    assert all(":bedrock:" in arn for arn in grants["bedrock:InvokeModel"])
    env = _env(mixed, mixed.stack.api.handler)
    assert (env[schema.ENV_TEXT_BACKEND], env[schema.ENV_EMBED_BACKEND]) == ("bedrock", "sagemaker")
    assert (env[schema.ENV_EMBED_FORMAT], env[schema.ENV_EMBED_DIMENSION]) == ("tei", "384")
    assert render(env[schema.ENV_EMBED_ENDPOINT]) == "ChatMemory-dev-embed"


@pytest.mark.parametrize(
    ("mode", "pair"),
    [
        ("endpoints", ("sagemaker", "sagemaker")),
        ("deploy", ("sagemaker-tgi", "sagemaker-tei")),
        ("bedrock", ("bedrock", "bedrock")),
    ],
)
def test_the_older_model_mode_still_chooses_both_providers(
    mode: str, pair: tuple[str, str]
) -> None:
    config = Config.from_mapping({"model_mode": mode})
    assert (config.text_provider, config.embed_provider) == pair
    assert (
        Config.from_mapping(
            dict(zip(("text_provider", "embed_provider"), pair, strict=True))
        ).model_mode
        == mode
    )
    # Saying the same twice is no contradiction.
    assert Config.from_mapping({"model_mode": mode, "text_provider": pair[0]}).model_mode == mode


def test_a_provider_that_contradicts_the_model_mode_is_refused_naming_both() -> None:
    with pytest.raises(ValueError, match="disagree") as raised:
        Config.from_mapping({"model_mode": "bedrock", "embed_provider": "sagemaker"})
    assert context_key("model_mode") in str(raised.value)
    assert context_key("embed_provider") in str(raised.value)


@pytest.mark.parametrize(("key", "value"), [("text_provider", "openai"), ("embed_provider", "tgi")])
def test_an_unknown_provider_fails_the_synth_with_its_name_and_the_choices(
    key: str, value: str
) -> None:
    with pytest.raises(ValueError, match="is not one of") as raised:
        Config.from_mapping({key: value})
    assert context_key(key) in str(raised.value) and "bedrock" in str(raised.value)


def test_the_serverless_profile_refuses_a_provider_that_bills_by_the_hour_naming_it() -> None:
    with pytest.raises(ValueError, match="contradicts profile=serverless") as raised:
        Config.from_mapping({"profile": "serverless", "text_provider": "sagemaker-tgi"})
    assert "textProvider=sagemaker-tgi" in str(raised.value)
    assert context_key("text_provider") in str(raised.value)
    assert "modelMode" not in str(raised.value)
