"""Settings are validated once, from the environment: a wrong value is the deployment's error,
named with the variable, and the API answers it as a configuration error (500), not as the
caller's bad request."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory import schema, wiring
from chatmemory.errors import ConfigurationError
from chatmemory.schema import EmbedBackend, LongTermBackend, TextBackend, TextFormat
from chatmemory.settings import ENV, Settings


def test_every_setting_has_its_variable_named_in_schema() -> None:
    assert set(ENV) == set(Settings.fields())
    names = {value for key, value in vars(schema).items() if key.startswith("ENV_")}
    assert set(ENV.values()) <= names


def test_values_from_the_environment_are_parsed_into_their_types() -> None:
    cfg = Settings.from_env(
        {
            schema.ENV_TEXT_BACKEND: "sagemaker",
            schema.ENV_TEXT_FORMAT: "tgi",
            schema.ENV_EMBED_DIMENSION: "1024",
            schema.ENV_STORE_PROMPT: "yes",
            schema.ENV_CORS_ORIGINS: "https://a.example, https://b.example",
            schema.ENV_LONG_TERM_BACKEND: "",  # empty means the default
        }
    )
    assert cfg.text_backend is TextBackend.SAGEMAKER and cfg.text_format is TextFormat.TGI
    assert (cfg.embed_dimension, cfg.store_prompt) == (1024, True)
    assert cfg.cors_origins == ("https://a.example", "https://b.example")
    assert cfg.long_term_backend is LongTermBackend.NONE
    assert cfg.embed_backend is EmbedBackend.OFFLINE


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        (schema.ENV_TEXT_BACKEND, "gpt-4"),
        (schema.ENV_EMBED_FORMAT, "openai"),
        (schema.ENV_EMBED_DIMENSION, "many"),
        (schema.ENV_WINDOW_TURNS, "-1"),
        (schema.ENV_INTENT_CLASSIFIER, "perhaps"),
        (schema.ENV_RECALL_WEIGHTS, "1,two"),
    ],
)
def test_a_wrong_value_is_a_configuration_error_naming_its_variable(
    variable: str, value: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        Settings.from_env({variable: value})
    assert variable in str(raised.value) and raised.value.status == 500


def test_the_api_answers_a_configuration_error_with_500_and_keeps_details_in_the_log(
    monkeypatch: pytest.MonkeyPatch, lambda_context: Any, dynamodb: Any
) -> None:
    """Failed first: an unknown backend answered 400 bad_request, as if the caller were wrong."""
    from handlers import chat_api
    from tests.unit.test_chat_api import Api

    monkeypatch.setenv(schema.ENV_TEXT_BACKEND, "gpt-4")
    wiring.clear_caches()
    status, body = Api(chat_api.handler, lambda_context).call("POST", "/sessions", {})
    assert status == 500 and body["error"]["code"] == "configuration_error"
    assert "gpt-4" not in body["error"]["message"]


def test_s3vectors_on_a_runtime_whose_botocore_predates_it_names_the_version_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The asset uses the Lambda runtime's boto3: one older than S3 Vectors raised botocore's
    UnknownServiceError on every request, which said nothing of the runtime's SDK."""
    from botocore.exceptions import UnknownServiceError

    def too_old(service: str, endpoint_url: str | None = None) -> Any:
        raise UnknownServiceError(service_name=service, known_service_names="dynamodb")

    monkeypatch.setattr(wiring, "aws_client", too_old)
    cfg = Settings(long_term_backend=LongTermBackend.S3VECTORS, vector_bucket="memories")
    with pytest.raises(ConfigurationError, match=r"botocore 1\.39\.9 or later; this runtime has"):
        wiring.long_term_index(cfg)


def test_every_default_is_a_value_its_setting_accepts() -> None:
    for name, spec in Settings.fields().items():
        if spec.default is not None:
            assert spec.parse(spec.default) == spec.default, name


def test_every_wrong_value_is_named_at_once_and_a_secret_is_not_repeated() -> None:
    with pytest.raises(ConfigurationError) as raised:
        Settings.from_env(
            {
                schema.ENV_WINDOW_TURNS: "six",
                schema.ENV_MODEL_TIMEOUT: "0",
                schema.ENV_OPENAI_API_KEY: "sk-secret",
                schema.ENV_STACK_WAIT_MS: "10001",
            }
        )
    message = str(raised.value)
    assert f"{schema.ENV_WINDOW_TURNS}='six': should be a whole number" in message
    assert f"{schema.ENV_MODEL_TIMEOUT}='0': should be greater than 0" in message
    assert f"{schema.ENV_STACK_WAIT_MS}='10001': should be at most 10000" in message
    assert "sk-secret" not in message and "sk-secret" not in repr(
        Settings(openai_api_key="sk-secret")
    )


def test_settings_are_not_changed_in_place_and_a_replacement_is_checked_like_the_first() -> None:
    cfg = Settings()
    with pytest.raises(AttributeError):
        cfg.window_turns = 3  # type: ignore[misc]
    changed = cfg.replace(window_turns=3, text_backend="bedrock")
    assert (changed.window_turns, changed.text_backend) == (3, TextBackend.BEDROCK)
    assert cfg.window_turns == 6 and changed != cfg
    # Equal settings are one key of the caches built on them (wiring's clients and adapters).
    assert Settings(window_turns=3) == Settings.from_env({schema.ENV_WINDOW_TURNS: "3"})
    assert hash(Settings(window_turns=3)) == hash(Settings.from_env({"WINDOW_TURNS": "3"}))
    with pytest.raises(ConfigurationError, match="window_turns=-1"):
        cfg.replace(window_turns=-1)
    with pytest.raises(ConfigurationError, match="unknown colour"):
        Settings(colour="blue")
