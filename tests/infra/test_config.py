"""Deployment settings from cdk.json context: defaults, stage presets, `-c` strings, mistakes,
and that what the stacks hand the runtime is what the runtime's Settings accept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest

from chatmemory import schema
from chatmemory.errors import ConfigurationError
from chatmemory.schema import EmbedFormat, TextFormat
from chatmemory.settings import Settings
from stacks import sizing
from stacks.config import HANDOFF_MAX_NEGATIVE_TURNS, PREFIX, Config, context_key
from tests.infra.synth import VARIANTS, Synth

# Config fields that reach the functions as runtime settings (stacks/*.py), by variable. The
# runtime's Settings field of each has the same name.
RUNTIME_FIELDS = {
    "text_endpoint": schema.ENV_TEXT_ENDPOINT,
    "text_format": schema.ENV_TEXT_FORMAT,
    "embed_endpoint": schema.ENV_EMBED_ENDPOINT,
    "embed_format": schema.ENV_EMBED_FORMAT,
    "embed_dimension": schema.ENV_EMBED_DIMENSION,
    "text_model_id": schema.ENV_TEXT_MODEL_ID,
    "embed_model_id": schema.ENV_EMBED_MODEL_ID,
    "max_input_chars": schema.ENV_MAX_INPUT_CHARS,
    "turn_ttl_days": schema.ENV_TURN_TTL_DAYS,
    "idle_minutes": schema.ENV_IDLE_MINUTES,
    "purge_settle_seconds": schema.ENV_PURGE_SETTLE_SECONDS,
    "cors_origins": schema.ENV_CORS_ORIGINS,
    "agent_group": schema.ENV_AGENT_GROUP,
    "handoff_on_nothing_verified": schema.ENV_HANDOFF_ON_NOTHING_VERIFIED,
    "handoff_negative_turns": schema.ENV_HANDOFF_NEGATIVE_TURNS,
    "handoff_negative_score": schema.ENV_HANDOFF_NEGATIVE_SCORE,
}
# Deployed defaults that differ from the runtime's on purpose (see the comments in
# stacks/config.py): the runtime has no endpoint or model to default to, embeds offline (384
# dimensions) and allows no browser origin unless told. (The text model id is empty in both: the
# deployment picks the model of its region, stacks/models.py.)
DEPLOYED_DIFFERS = {
    "text_endpoint",
    "embed_endpoint",
    "embed_dimension",
    "embed_model_id",
    "cors_origins",
}


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
    # A plain deploy's domain is a trial's (the former development domain), whatever load the
    # rest is planned for: one t3.small.search of 10 GiB, one shard, no masters.
    assert config.daily_users == 1_000_000
    assert config.search_daily_users == sizing.TRIAL_DAILY_USERS == 10
    assert (config.search_instance_type, config.search_data_nodes) == ("t3.small.search", 1)
    assert (config.search_volume_gb, config.search_shards, config.search_master_nodes) == (10, 1, 0)
    assert config.cors_origins == ("*",)
    assert not config.waf and not config.threat_protection


def test_hand_off_defaults_name_the_agents_group_publish_events_and_hand_off_only_on_request() -> (
    None
):
    config = _from_context()
    assert config.agent_group == "agents"
    assert config.handoff_events is True
    # The automatic rules are off unless asked for.
    assert config.handoff_on_nothing_verified is False
    assert config.handoff_negative_turns == 0
    assert config.handoff_negative_score == -0.5


def test_the_prod_stage_turns_on_protection_and_availability() -> None:
    config = _from_context(stage="prod")
    assert config.production
    assert config.log_retention_days == 365
    assert config.search_data_nodes >= 2 and config.search_master_nodes == 3
    assert config.search_daily_users == config.daily_users == 1_000_000  # the stated load
    small = _from_context(stage="prod", dailyUsers="1")
    assert (small.search_data_nodes, small.search_master_nodes) == (2, 3)
    assert not small.search_instance_type.startswith("t3")  # not for production
    assert config.zone_awareness
    assert config.waf and config.threat_protection


def test_each_model_mode_brings_its_formats_and_dimension() -> None:
    deploy = _from_context(modelMode="deploy")
    assert (deploy.text_format, deploy.embed_format, deploy.embed_dimension) == ("tgi", "tei", 384)
    assert _from_context(modelMode="bedrock").embed_dimension == 1024


def test_a_domains_vectors_are_on_disk_from_1024_dimensions_and_production_has_two_shards() -> None:
    assert Config.from_mapping({}).search_on_disk is True  # GPT-J: 4,096 dimensions
    assert Config.from_mapping({"model_mode": "deploy"}).search_on_disk is False  # 384
    assert Config.from_mapping({"embed_dimension": "1024"}).search_on_disk is True
    assert Config.from_mapping({"search_on_disk": "false"}).search_on_disk is False
    assert Config.from_mapping({"daily_users": "1"}).search_shards == 1
    assert Config.from_mapping({"stage": "prod", "daily_users": "1"}).search_shards == 2
    with pytest.raises(ValueError, match="searchShards"):
        Config.from_mapping({"search_shards": "0"})


def test_end_user_roles_need_iam_auth_and_role_arns() -> None:
    role = "arn:aws:iam::123456789012:role/apps/Backend"
    config = Config.from_mapping({"auth": "iam", "end_user_role_arns": f"{role}, {role}2"})
    assert config.end_user_role_arns == (role, f"{role}2")
    with pytest.raises(ValueError, match="endUserRoleArns needs auth=iam"):
        Config.from_mapping({"end_user_role_arns": role})
    with pytest.raises(ValueError, match="not an IAM role"):
        Config.from_mapping({"auth": "iam", "end_user_role_arns": "arn:aws:iam::1:user/x"})


def test_command_line_strings_are_parsed() -> None:
    config = _from_context(
        production="false",
        waf="true",
        idleMinutes="45",
        corsOrigins="https://a.example, https://b.example",
        embedDimension="768",
        handoffOnNothingVerified="true",
        handoffNegativeTurns="3",
        handoffNegativeScore="-0.25",
        handoffEvents="off",
        agentGroup="contact-centre",
    )
    assert config.production is False and config.waf is True
    assert config.idle_minutes == 45
    assert config.cors_origins == ("https://a.example", "https://b.example")
    assert config.embed_dimension == 768
    assert config.handoff_on_nothing_verified is True and config.handoff_events is False
    assert config.handoff_negative_turns == 3
    assert config.handoff_negative_score == -0.25
    assert config.agent_group == "contact-centre"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("modelMode", "sagemaker", "not one of"),
        ("searchMode", "elastic", "not one of"),
        ("auth", "apikey", "not one of"),
        ("mfa", "sometimes", "not one of"),
        # The runtime's payload formats (chatmemory.schema.TextFormat / EmbedFormat) only.
        ("textFormat", "flan-t5", "not one of jumpstart-flan-t5, tgi"),
        ("embedFormat", "tgi", "not one of jumpstart-gpt-j, tei"),
        ("waf", "maybe", "not a boolean"),
        ("idleMinutes", "half an hour", "invalid literal"),
        ("searchMasterNodes", "2", "must be 0, 3 or 5"),
        ("profile", "cheap", "not one of default, serverless"),
        ("alarms", "sometimes", "not a boolean"),
        ("dashboard", "maybe", "not a boolean"),
        ("corsOrigins", "", "at least one origin"),
        # The purge must outwait any chat request that read the caller's old generation.
        ("purgeSettleSeconds", "29", "longer than"),
        ("purgeSettleSeconds", "151", "longer than"),
        # A group name the cognito:groups claim (one string) could not carry unambiguously.
        ("agentGroup", "contact centre", "must be 1 to 128 letters"),
        ("agentGroup", "agents,admins", "must be 1 to 128 letters"),
        ("agentGroup", "", "must be 1 to 128 letters"),
        ("agentGroup", "a" * 129, "must be 1 to 128 letters"),
        ("handoffNegativeTurns", "-1", "between 0 \\(off\\) and 50"),
        ("handoffNegativeTurns", "51", "between 0 \\(off\\) and 50"),
        ("handoffNegativeTurns", "two", "invalid literal"),
        ("handoffNegativeScore", "-1.5", "between -1 and 1"),
        ("handoffNegativeScore", "nan", "between -1 and 1"),
        ("handoffNegativeScore", "low", "could not convert"),
        ("handoffOnNothingVerified", "sometimes", "not a boolean"),
        ("handoffEvents", "maybe", "not a boolean"),
    ],
)
def test_a_wrong_setting_fails_the_synth_with_its_name(key: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        _from_context(**{key: value})
    assert key in str(raised.value)


def test_the_serverless_profile_chooses_bedrock_s3_vectors_and_no_fixed_fees() -> None:
    config = _from_context(profile="serverless")
    assert (config.profile, config.model_mode, config.search_mode) == (
        "serverless",
        "bedrock",
        "s3vectors",
    )
    assert config.embed_dimension == 1024  # Bedrock's Titan embeddings v2, as in bedrock mode
    assert not config.waf and not config.threat_protection
    assert config.alarms and config.dashboard


def test_the_serverless_profile_wins_over_the_production_stage_defaults() -> None:
    """The prod stage turns on WAF and Cognito Plus; the profile keeps both off (each bills a
    fixed fee or per user), and keeps the production protections (retention, retain)."""
    config = _from_context(profile="serverless", stage="prod")
    assert config.production and config.log_retention_days == 365
    assert not config.waf and not config.threat_protection


def test_explicit_settings_win_over_the_profile() -> None:
    config = _from_context(
        profile="serverless",
        textModelId="amazon.nova-lite-v1:0",
        embedModelId="cohere.embed-english-v3",
        embedDimension="1024",
        waf="true",
        threatProtection="true",
        alarms="false",
        dashboard="false",
    )
    assert config.text_model_id == "amazon.nova-lite-v1:0"
    assert config.embed_model_id == "cohere.embed-english-v3"
    assert config.waf and config.threat_protection
    assert not config.alarms and not config.dashboard
    # Saying what the profile says is no contradiction.
    same = _from_context(profile="serverless", modelMode="bedrock", searchMode="s3vectors")
    assert (same.model_mode, same.search_mode) == ("bedrock", "s3vectors")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("searchMode", "domain"),
        ("searchMode", "serverless"),
        ("modelMode", "endpoints"),
        ("modelMode", "deploy"),
    ],
)
def test_the_serverless_profile_refuses_what_bills_by_the_hour(key: str, value: str) -> None:
    with pytest.raises(ValueError, match="contradicts profile=serverless") as raised:
        _from_context(profile="serverless", **{key: value})
    message = str(raised.value)
    assert f"{key}={value}" in message
    assert context_key("profile") in message and f"{PREFIX}{key}" in message


def test_s3_vectors_is_available_without_the_profile() -> None:
    config = _from_context(searchMode="s3vectors")
    assert (config.profile, config.model_mode, config.search_mode) == (
        "default",
        "endpoints",
        "s3vectors",
    )
    assert config.embed_dimension == 4096  # GPT-J: exactly S3 Vectors' largest


def test_s3_vectors_refuses_a_dimension_its_indexes_cannot_hold() -> None:
    with pytest.raises(ValueError, match="embedDimension 4097 is more than an S3 Vectors"):
        _from_context(searchMode="s3vectors", embedDimension="4097")
    # OpenSearch's k-NN fields take it.
    assert _from_context(embedDimension="4097").embed_dimension == 4097


def test_formats_are_the_runtimes_enums() -> None:
    config = _from_context(modelMode="deploy", textFormat="jumpstart-flan-t5")
    assert config.text_format is TextFormat.JUMPSTART_FLAN_T5
    assert config.embed_format is EmbedFormat.TEI


def test_the_deployment_refuses_what_the_runtime_would_refuse_at_cold_start() -> None:
    """Hand-off limits the runtime's Settings enforce are checked at synth time already."""
    top = HANDOFF_MAX_NEGATIVE_TURNS
    env = {schema.ENV_HANDOFF_NEGATIVE_TURNS: str(top), schema.ENV_HANDOFF_NEGATIVE_SCORE: "-1"}
    assert Settings.from_env(env).handoff_negative_turns == top
    assert _from_context(handoffNegativeTurns=str(top)).handoff_negative_turns == top
    for key, value in (
        (schema.ENV_HANDOFF_NEGATIVE_TURNS, str(top + 1)),
        (schema.ENV_HANDOFF_NEGATIVE_SCORE, "-1.01"),
    ):
        with pytest.raises(ConfigurationError):
            Settings.from_env({key: value})


def _as_env(value: Any) -> str:
    """How the stacks write a setting into a function's environment."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return ",".join(value) if isinstance(value, tuple) else str(value)


@pytest.mark.parametrize("mode", ["endpoints", "deploy", "bedrock"])
def test_every_config_default_the_runtime_reads_is_an_allowed_runtime_value(mode: str) -> None:
    config = Config.from_mapping({"model_mode": mode})
    env = {name: _as_env(getattr(config, field)) for field, name in RUNTIME_FIELDS.items()}
    settings = Settings.from_env(env)
    for field in RUNTIME_FIELDS:
        assert getattr(settings, field) == getattr(config, field), field


def test_defaults_shared_with_the_runtime_agree_unless_the_deployment_knows_better() -> None:
    config, runtime = Config(), Settings()
    differ = {f for f in RUNTIME_FIELDS if getattr(config, f) != getattr(runtime, f)}
    assert differ == DEPLOYED_DIFFERS


# What CloudFormation fills in, where the runtime checks its shape: the AgentRole's ARN (GetAtt
# Arn of a role without a path, named by CloudFormation: stack, logical id, random suffix).
RESOLVED = {
    schema.ENV_AGENT_ROLE_ARN: (
        "arn:aws:iam::123456789012:role/ChatMemory-dev-ApiAgentRole5D146150-AbC1dE2fG3hI"
    ),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_function_environment_is_accepted_by_the_runtime_settings(
    synth_cache: Callable[..., Synth], variant: str
) -> None:
    """Backends, formats and numbers as the stacks write them are valid runtime values (values
    CloudFormation fills in, such as table names, are stand-ins here)."""
    synth = synth_cache(**VARIANTS[variant])
    for name, function in synth.stack.functions.functions.items():
        props = synth.json["Resources"][synth.logical_id(function)]["Properties"]
        env = {
            key: value if isinstance(value, str) else RESOLVED.get(key, "resolved-at-deploy-time")
            for key, value in props["Environment"]["Variables"].items()
        }
        settings = Settings.from_env(env)
        if schema.ENV_TEXT_BACKEND in env:
            assert settings.text_backend in schema.TextBackend, name
            assert settings.embed_backend in schema.EmbedBackend, name
        if schema.ENV_LONG_TERM_BACKEND in env:
            expected = (
                schema.LongTermBackend.S3VECTORS
                if synth.stack.config.search_mode == "s3vectors"
                else schema.LongTermBackend.OPENSEARCH
            )
            assert settings.long_term_backend == expected, name
        if settings.long_term_backend == schema.LongTermBackend.S3VECTORS:
            assert settings.vector_bucket == synth.stack.long_term.bucket_name, name
        if name == "Chat":
            # Who the agents are: the group with Cognito, the role's sessions with IAM.
            config = synth.stack.config
            if config.auth == "cognito":
                assert settings.agent_group == config.agent_group
            assert bool(settings.agent_role_arn) == (config.auth == "iam")
            assert bool(settings.event_bus_name) == config.handoff_events


def test_the_domain_grows_with_the_daily_users_it_is_planned_for() -> None:
    """dailyUsers sizes the domain: the k-NN graphs fit the plugin's memory, the entries the
    volumes, the shards AWS's 50 GiB (up to an index's 1,024); a trial load gets one small
    node, and a setting given explicitly wins."""
    trial = Config.from_mapping({"daily_users": "10"})
    assert (trial.search_instance_type, trial.search_data_nodes) == ("t3.small.search", 1)
    assert (trial.search_master_nodes, trial.search_shards) == (0, 1)
    sizes = [Config.from_mapping({"daily_users": str(n)}) for n in (10, 1_000, 100_000, 10**6)]
    memory = [
        c.search_data_nodes * sizing.instance(c.search_instance_type).knn_memory_bytes
        for c in sizes
    ]
    storage = [c.search_data_nodes * c.search_volume_gb for c in sizes]
    assert memory == sorted(memory) and len(set(memory)) == len(memory)
    assert storage == sorted(storage) and len(set(storage)) == len(storage)
    assert [c.search_shards for c in sizes] == sorted(c.search_shards for c in sizes)
    for config in sizes:
        entries = sizing.memory_entries(sizing.Load(daily_users=config.daily_users))
        copies = sizing.copies(config.search_data_nodes)
        kind = sizing.instance(config.search_instance_type)
        assert kind is not None
        graphs = entries * sizing.graph_bytes(4096, on_disk=True) * copies
        assert graphs <= config.search_data_nodes * kind.knn_memory_bytes
        data = entries * sizing.entry_bytes(4096, on_disk=True) * copies * 1.45
        assert data <= config.search_data_nodes * config.search_volume_gb * sizing.GIB
        assert config.search_volume_gb <= kind.max_volume_gib
    chosen = Config.from_mapping(
        {"daily_users": "100000", "search_instance_type": "r6g.large.search"}
    )
    assert chosen.search_instance_type == "r6g.large.search"
    assert chosen.search_data_nodes > sizes[2].search_data_nodes  # more of the smaller nodes
    assert (
        Config.from_mapping({"daily_users": "100000", "search_data_nodes": "3"}).search_data_nodes
        == 3
    )
    # A domain set by hand gets no more shards than its nodes' heaps hold (25 a GiB): the
    # former development domain (one t3.small, a 1 GiB heap) for the default million users.
    former = Config.from_mapping(
        {"search_instance_type": "t3.small.search", "search_data_nodes": "1", "stage": "prod"}
    )
    assert (former.search_data_nodes, former.search_shards) == (1, 25)
    # Past an index's 1,024 shards the owners are spread over several memory indexes, each of
    # the shards AWS's guidance takes.
    assert [c.search_memory_indexes for c in sizes] == [1, 1, 1, 3]
    assert all(c.search_shards <= 1024 for c in sizes)
    with pytest.raises(ValueError, match="searchMemoryIndexes"):
        Config.from_mapping({"profile": "serverless", "search_memory_indexes": "2"})
    # Nothing of a domain is planned where there is none.
    assert (
        Config.from_mapping({"profile": "serverless"}).search_data_nodes == Config.search_data_nodes
    )


def test_a_plain_deploy_sizes_the_domain_for_a_trial_and_production_for_the_stated_load() -> None:
    """The development stage deployed without dailyUsers gets a trial's domain (it bills by
    the hour from the first deploy); production, or a dailyUsers given in either stage, gets
    the domain that holds a year of that load's memories. The rest (the stage throttle, the S3
    vector buckets) is planned for dailyUsers in every stage: it costs nothing unused, and a
    bucket count that changed would move users' memories out of reach."""
    trial, production = _from_context(), _from_context(stage="prod")
    assert trial.search_daily_users == sizing.TRIAL_DAILY_USERS
    assert production.search_daily_users == 1_000_000
    planned = sizing.search_domain(
        sizing.Load(daily_users=1_000_000), dimension=4096, on_disk=True, production=True
    )
    sized = (
        production.search_instance_type,
        production.search_data_nodes,
        production.search_volume_gb,
        production.search_shards,
        production.search_master_nodes,
        production.search_master_instance_type,
        production.search_memory_indexes,
    )
    assert sized == planned
    for setting in ("throttle_rate", "throttle_burst", "vector_buckets"):
        assert getattr(trial, setting) == getattr(production, setting), setting
    # A dailyUsers given sizes the domain in either stage, and searchDailyUsers the domain only.
    for stage in ("dev", "prod"):
        given = _from_context(stage=stage, dailyUsers="10000")
        assert given.search_daily_users == 10_000
        planned = sizing.search_domain(
            sizing.Load(daily_users=10_000),
            dimension=4096,
            on_disk=True,
            production=stage == "prod",
        )
        assert (given.search_instance_type, given.search_data_nodes) == planned[:2]
        assert given.throttle_rate < trial.throttle_rate
    alone = _from_context(searchDailyUsers="1000000")
    assert (alone.search_data_nodes, alone.search_instance_type) == (60, "r6g.12xlarge.search")
    assert alone.daily_users == 1_000_000
    with pytest.raises(ValueError, match="searchDailyUsers"):
        _from_context(searchDailyUsers="-1")


def test_a_new_generation_of_memory_indexes_migrates_from_named_old_ones_on_a_domain_only() -> None:
    migrating = Config.from_mapping(
        {"search_memory_generation": "1", "search_migrate_memory_from": "conversation-memories"}
    )
    assert migrating.search_memory_generation == 1
    assert migrating.search_migrate_memory_from == ("conversation-memories",)
    for refused in (
        # The old indexes cannot be the new ones, the passages' index, nor named twice.
        {"search_migrate_memory_from": "conversation-memories"},
        {"search_memory_generation": "1", "search_migrate_memory_from": "verified-passages"},
        {"search_memory_generation": "2", "search_migrate_memory_from": "a,a"},
        {"search_memory_generation": "1", "search_migrate_memory_from": "Old Index"},
        {"search_memory_generation": "1000"},
        {"profile": "serverless", "search_memory_generation": "1"},
    ):
        with pytest.raises(ValueError, match="searchM"):
            Config.from_mapping(refused)
