"""Deployment settings from cdk.json context: defaults, stage presets, `-c` strings, mistakes."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from stacks.config import Config, context_key


def _from_context(**values: object) -> Config:
    app = cdk.App(context={context_key(k): v for k, v in values.items()})
    return Config.from_context(app)


def test_defaults_reference_existing_endpoints_behind_cognito_with_a_domain() -> None:
    config = _from_context()
    assert (config.stage, config.production) == ("dev", False)
    assert config.model_mode == "endpoints"
    assert (config.text_format, config.embed_format) == ("jumpstart-flan-t5", "jumpstart-gpt-j")
    assert config.embed_dimension == 4096  # GPT-J 6B embeddings
    assert (config.search_mode, config.auth) == ("domain", "cognito")
    assert (config.search_data_nodes, config.search_master_nodes) == (1, 0)
    assert config.cors_origins == ("*",)
    assert not config.waf and not config.threat_protection


def test_the_prod_stage_turns_on_protection_and_availability() -> None:
    config = _from_context(stage="prod")
    assert config.production
    assert config.log_retention_days == 365
    assert (config.search_data_nodes, config.search_master_nodes) == (2, 3)
    assert config.zone_awareness
    assert config.waf and config.threat_protection


def test_each_model_mode_brings_its_formats_and_dimension() -> None:
    deploy = _from_context(modelMode="deploy")
    assert (deploy.text_format, deploy.embed_format, deploy.embed_dimension) == ("tgi", "tei", 384)
    assert _from_context(modelMode="bedrock").embed_dimension == 1024


def test_command_line_strings_are_parsed() -> None:
    config = _from_context(
        production="false",
        waf="true",
        idleMinutes="45",
        corsOrigins="https://a.example, https://b.example",
        embedDimension="768",
    )
    assert config.production is False and config.waf is True
    assert config.idle_minutes == 45
    assert config.cors_origins == ("https://a.example", "https://b.example")
    assert config.embed_dimension == 768


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("modelMode", "sagemaker", "not one of"),
        ("searchMode", "elastic", "not one of"),
        ("auth", "apikey", "not one of"),
        ("waf", "maybe", "not a boolean"),
        ("searchMasterNodes", "2", "searchMasterNodes"),
        ("corsOrigins", "", "corsOrigins"),
        # The purge must outwait any chat request that read the caller's old generation.
        ("purgeSettleSeconds", "29", "purgeSettleSeconds"),
        ("purgeSettleSeconds", "151", "purgeSettleSeconds"),
    ],
)
def test_a_wrong_setting_fails_the_synth_with_its_name(key: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _from_context(**{key: value})
