"""Typed deployment settings, read from cdk.json context (`-c chatmemory:<key>=<value>` overrides).

Every setting has a default; the production stage (`chatmemory:stage=prod`) changes a few of them
(retention, deletion protection, a highly available search domain, WAF, Cognito threat protection),
and so does the profile (`chatmemory:profile=serverless`: Bedrock models and S3 Vectors, nothing
billed by the hour). A setting given explicitly wins over both. Values given with `-c` arrive as
strings, so every reader here accepts strings too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, TypeVar, get_args

from constructs import Construct

from chatmemory import limits, schema
from chatmemory.schema import EmbedFormat, TextFormat
from stacks import sizing
from stacks.model_providers import EMBED_PROVIDERS, MODEL_MODES, TEXT_PROVIDERS, ModelProvider

PREFIX = "chatmemory:"

# The Lambda platform, in one place: the runtime, the Powertools layer name and the pip platform
# used for bundling must agree. arm64 (Graviton) costs 20% less per GB-second than x86_64, and
# every runtime dependency is pure Python or has a manylinux2014_aarch64 wheel.
PYTHON_VERSION = "3.12"
ARCHITECTURE = "arm64"
PIP_PLATFORM = "manylinux2014_aarch64"
# AWS's account that publishes the Powertools for AWS Lambda (Python) layers (commercial regions).
POWERTOOLS_LAYER_ACCOUNT = "017000801446"
# API Gateway stops waiting for an integration after 29 s: the chat Lambda's timeout.
CHAT_TIMEOUT_SECONDS = 29
# The stream function's (POST /sessions/{id}/messages/stream): a streamed answer is not bound by
# API Gateway's 29 s (handlers/stream.py).
STREAM_TIMEOUT_SECONDS = schema.STREAM_TIMEOUT_SECONDS
# The AWS Lambda Web Adapter's layer (awslabs/aws-lambda-web-adapter, published by AWS in every
# commercial region), of the functions' architecture: it runs the stream function's web server
# and streams its answer as written (docs/decisions.md, "Streaming on Lambda").
WEB_ADAPTER_LAYER_ACCOUNT = "753240598075"
WEB_ADAPTER_LAYER = {"arm64": "LambdaAdapterLayerArm64", "x86_64": "LambdaAdapterLayerX86"}[
    ARCHITECTURE
]
WEB_ADAPTER_LAYER_VERSION = 26
# The purge hands over to a next invocation when it runs short; it may first sleep for
# purgeSettleSeconds after a forget.
PURGE_TIMEOUT_SECONDS = schema.PURGE_TIMEOUT_SECONDS
# The largest vector an S3 Vectors index accepts (AWS::S3Vectors::Index Dimension: 1 to 4096).
S3VECTORS_MAX_DIMENSION = 4096

# The agents' Cognito group: a subset of what Cognito allows (no spaces, commas or brackets), as
# API Gateway hands the `cognito:groups` claim to the function as one string.
AGENT_GROUP_NAME = re.compile(r"[\w.+=@-]{1,128}")

# From this many dimensions a domain's vectors are kept on disk, quantized in memory.
ON_DISK_FROM_DIMENSION = 1024

# An IAM role's ARN, as the runtime's Settings accept one (END_USER_ROLE_ARNS).
ROLE_ARN = re.compile(r"arn:[\w-]+:iam::\d{12}:role/\S+")

# The most consecutive negative turns the runtime's Settings accept before a hand-off.
HANDOFF_MAX_NEGATIVE_TURNS = 50

EnumT = TypeVar("EnumT", bound=StrEnum)
SearchMode = Literal["domain", "serverless", "s3vectors"]
# "default": the original design (SageMaker endpoints, an OpenSearch domain). "serverless": only
# what bills per request or per stored byte (Bedrock, S3 Vectors, Lambda, DynamoDB on demand).
Profile = Literal["default", "serverless"]
AuthMode = Literal["cognito", "iam"]
MfaMode = Literal["optional", "required"]


def _as_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"not a boolean: {raw!r}")


def _as_list(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, list | tuple):
        return tuple(str(item).strip() for item in raw if str(item).strip())
    return tuple(part.strip() for part in str(raw).split(",") if part.strip())


def _choice(*allowed: str) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        value = str(raw).strip()
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
        return value

    return parse


def _member(kind: type[EnumT]) -> Callable[[Any], EnumT]:
    """A value of one of the runtime's enums (chatmemory.schema): what its Settings accept."""

    def parse(raw: Any) -> EnumT:
        return kind(_choice(*kind)(raw))

    return parse


@dataclass(frozen=True)
class Config:
    """Everything the stacks need to know about one deployment."""

    stage: str = "dev"
    production: bool = False
    # What the other defaults start from (see PROFILE_DEFAULTS); explicit settings still win.
    profile: Profile = "default"

    # Models: the text model's provider and the embedding model's, each one of
    # stacks/model_providers.py: "sagemaker" (an existing endpoint, by name: JumpStart FLAN-T5
    # and GPT-J, as in the original design), "sagemaker-tgi" / "sagemaker-tei" (Hugging Face
    # containers this stack deploys: TGI real-time, TEI serverless) or "bedrock" (model ids).
    # `model_mode` is the older setting that chose both at once ("endpoints", "deploy" or
    # "bedrock", still read), and says which of those the two providers make ("mixed": none).
    # Where a default differs from the runtime's (chatmemory.settings.Settings, made for local
    # mode), it is because the deployment knows more: the runtime has no endpoint or model to
    # default to and embeds with the offline MiniLM model (384 dimensions); a deployment names
    # JumpStart's endpoints (GPT-J: 4096 dimensions) or Bedrock's models. tests/infra/
    # test_config.py lists these differences and holds every other shared default equal.
    text_provider: str = "sagemaker"
    embed_provider: str = "sagemaker"
    model_mode: str = "endpoints"
    text_endpoint: str = "jumpstart-dft-hf-text2text-flan-t5-xl"
    text_format: TextFormat = TextFormat.JUMPSTART_FLAN_T5
    embed_endpoint: str = "jumpstart-dft-hf-textembedding-gpt-j-6b-fp16"
    embed_format: EmbedFormat = EmbedFormat.JUMPSTART_GPT_J
    embed_dimension: int = 4096
    # Bedrock ids: a foundation model, or a cross-region inference profile ("eu.<model id>").
    # Empty: Amazon Nova Micro through the inference profile of the stack region's geography
    # (stacks/models.py DEFAULT_MODEL_GEOGRAPHY: where the default models are known to run).
    text_model_id: str = ""
    embed_model_id: str = "amazon.titan-embed-text-v2:0"
    # "deploy" mode: Hugging Face Hub model ids and container images.
    deploy_text_model: str = "Qwen/Qwen2.5-1.5B-Instruct"
    deploy_text_instance_type: str = "ml.g5.xlarge"
    deploy_embed_model: str = "BAAI/bge-small-en-v1.5"
    deploy_embed_memory_mb: int = 3072
    deploy_embed_max_concurrency: int = 5
    tgi_image_tag: str = "2.7.0-tgi3.3.6-gpu-py311-cu124-ubuntu22.04"
    tei_image_tag: str = "2.0.1-tei1.7.0-cpu-py310-ubuntu22.04"

    # Long-term memory search: an OpenSearch Service domain, an OpenSearch Serverless collection,
    # or an S3 vector bucket (stacks/long_term.py). A domain's instance type, data nodes, volume,
    # shards and dedicated masters are by default what `daily_users` need
    # (stacks/sizing.search_domain: the k-NN graphs in the plugin's memory, the entries on the
    # volumes, shards of at most 50 GiB); each may be set, and a set instance type is given the
    # nodes it needs. The defaults below are only where sizing does not apply.
    search_mode: SearchMode = "domain"
    # The daily users the domain is sized for (0: planned): `daily_users` in production or when
    # `daily_users` is set, else a trial's (sizing.TRIAL_DAILY_USERS: one t3.small.search), so
    # a plain deploy of the development stage is not billed like a cluster (docs/decisions.md).
    search_daily_users: int = 0
    search_instance_type: str = "t3.small.search"
    search_data_nodes: int = 1
    search_master_nodes: int = 0
    search_master_instance_type: str = "m6g.large.search"
    search_volume_gb: int = 10
    # The long-term indexes a domain's index setup creates: primary shards (memories are routed
    # by user, so one search reads one shard; AWS's guidance is 10-50 GiB a shard) and vectors
    # on disk (32x quantized in memory), on by default from 1,024 dimensions: an HNSW graph of
    # 4,096 floats takes about 18 KB of memory a vector, quantized about 0.7 KB. Neither
    # changes an index that exists (docs/operations.md).
    search_shards: int = 1
    # How many memory indexes a domain's owners are spread over (an index holds at most 1,024
    # primary shards): planned with the shards; it must not change once memories are written.
    search_memory_indexes: int = 1
    search_on_disk: bool = False
    # A domain's memory indexes are made anew to change what an index cannot change in place
    # (shards, vectors on disk, vectors out of `_source`): the generation names the runtime's
    # (0: conversation-memories; n: conversation-memories-gn), and the previous generation's
    # names, while set, are migrated into them by the MigrateMemory function (make
    # migrate-memory; docs/operations.md).
    search_memory_generation: int = 0
    search_migrate_memory_from: tuple[str, ...] = ()
    # S3 Vectors: how many vector buckets the users' memory indexes are spread over (10,000
    # indexes a bucket; the buckets are made as their first index is, so an unused one costs
    # nothing), and whether the shared memory index of a deployment made before per-user
    # indexes is kept (until its migration: docs/operations.md).
    vector_buckets: int = 1
    shared_memory_index: bool = True

    # Chat API.
    auth: AuthMode = "cognito"
    mfa: MfaMode = "optional"
    threat_protection: bool = False
    # The runtime allows no browser origin unless told; the deployed API allows any, since
    # callers authenticate with a bearer token or a SigV4 signature (no cookies).
    cors_origins: tuple[str, ...] = ("*",)
    # The stage's throttle (requests a second): by default the busiest second of `daily_users`
    # (stacks/sizing.py), at least 20 and 40.
    throttle_rate: int = 20
    throttle_burst: int = 40
    waf: bool = False
    max_input_chars: int = schema.MAX_INPUT_CHARS_DEFAULT
    # Lambda SnapStart for the chat function: its init (imports, clients, validators) runs when
    # a version is published, and a cold start resumes from a snapshot taken after it; API
    # Gateway calls the alias of the newest version. Off by default: the snapshot's cache bills
    # every second the version exists, and each restore per GB (docs/cost.md).
    chat_snap_start: bool = False

    # Hand-off to a person (issue 16). `agent_group`: the Cognito group whose members may use
    # the /agent routes (auth=cognito; with auth=iam the stack's AgentRole does); renaming it
    # replaces the group, whose members must then be added again. The automatic rules are off
    # by default: a hand-off when /verified finds nothing relevant, and after
    # `handoff_negative_turns` consecutive user turns (0: never) whose sentiment score is at
    # most `handoff_negative_score` (VADER's compound score, -1 to 1). `handoff_events`: an
    # EventBridge bus of the stack's own that receives an event on each hand-off and hand-back.
    agent_group: str = "agents"
    # With auth=iam: roles (ARNs) of backends that call for their own users and may name each
    # one in the X-ChatMemory-End-User header; each end user is then a caller of their own.
    end_user_role_arns: tuple[str, ...] = ()
    handoff_on_nothing_verified: bool = False
    handoff_negative_turns: int = 0
    handoff_negative_score: float = -0.5
    handoff_events: bool = True

    # Upgrading a deployment whose records table lacks more than one of this version's indexes:
    # CloudFormation adds one global secondary index per table update, so deploy first with
    # only one of them named here, then with none named (all of them). Empty: all.
    records_indexes: tuple[str, ...] = ()

    # The load the deployment is planned for (stacks/sizing.py: 20 turns a user a day, sessions
    # of 10 turns, peaks of 5x the average, 12 months of memories): the stage throttle, the S3
    # vector buckets, the OpenSearch domain's size and the capacity model's table follow from
    # it (docs/cost.md). Outside production the domain is sized for a trial unless it is set
    # (search_daily_users: a domain for a million daily users is 60 large data nodes).
    daily_users: int = 1_000_000

    # Quotas. The text and embedding models' requests a minute in the region (Bedrock's
    # per-model quota, or what an endpoint takes; the defaults are assumed, not read from an
    # account: Service Quotas shows yours), and the share of the text model's that background
    # work may use. Consolidation runs at most consolidation_concurrency at once (its reserved
    # concurrency, from that share), compaction at most compaction_concurrency, and each shard
    # of the sessions stream feeds consolidation_parallelization batches at once. The chat
    # function reserves chat_reserved_concurrency (0: none; a reservation needs room in the
    # account's concurrency quota, which is 1,000 unless raised).
    text_model_requests_per_minute: int = 2_000
    embed_model_requests_per_minute: int = 2_000
    background_model_share: float = 0.5
    consolidation_concurrency: int = 0
    compaction_concurrency: int = 0
    consolidation_parallelization: int = 10
    chat_reserved_concurrency: int = 0

    # Memory behaviour.
    turn_ttl_days: int = 0
    idle_minutes: int = 30
    sweep_minutes: int = 5

    # Stream processing (batch sizes and filters: chatmemory.schema.STREAM_TRIGGERS).
    stream_retry_attempts: int = schema.CONSOLIDATION_TRIGGER.retry_attempts
    consolidation_max_record_age_hours: int = 6
    # An ENDED session still not consolidated this long after it ended (its stream record
    # expired, was dead-lettered, or its run died) is handed to consolidation again by the
    # sweeper, at most consolidation_retries_per_sweep a sweep (0: what consolidation takes in
    # a sweep's interval); the alarm fires when the oldest one has waited
    # unconsolidated_alarm_hours.
    consolidation_retry_minutes: int = 360
    consolidation_retries_per_sweep: int = 0
    unconsolidated_alarm_hours: int = 12
    compaction_max_record_age_hours: int = 1
    purge_max_record_age_hours: int = 6
    # How long a purge waits after a forget before it trusts the user index. Longer than the
    # chat function's timeout, so no request that read the old generation is still writing.
    purge_settle_seconds: int = 30

    # Operations. `alarms` (with their SNS topic and its KMS key) and `dashboard` are the fixed
    # monthly costs left in the serverless profile; each can be switched off. `alarm_topic_key`:
    # the topic encrypted with a key of its own ($1 a month; CloudWatch cannot publish with the
    # AWS managed SNS key); the serverless profile leaves it out (alarms carry no user data).
    log_retention_days: int = 30
    alarm_email: str = ""
    iterator_age_alarm_seconds: int = 300
    alarms: bool = True
    dashboard: bool = True
    alarm_topic_key: bool = True
    # A pinned layer version, or "latest" to resolve AWS's public SSM parameter at deploy time.
    powertools_layer_version: str = "38"

    @classmethod
    def from_context(cls, scope: Construct) -> Config:
        """Settings from the app's context (cdk.json or `-c`), defaults for the rest."""
        keys = list(cls.__dataclass_fields__)
        values: dict[str, Any] = {}
        for name in keys:
            raw = scope.node.try_get_context(PREFIX + _camel(name))
            if raw is not None:
                values[name] = raw
        return cls.from_mapping(values)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> Config:
        """Parse and validate raw values (snake_case keys); stage-dependent defaults apply."""
        stage = str(raw.get("stage", cls.stage))
        production = _as_bool(raw.get("production", stage == "prod"))
        try:
            profile = _choice(*get_args(Profile))(raw.get("profile", cls.profile))
        except ValueError as error:
            raise ValueError(f"{context_key('profile')}: {error}") from None
        chosen = PROFILE_DEFAULTS[profile]
        text, embed, mode = _model_providers(raw, chosen)
        defaults: dict[str, Any] = {
            # Production: keep logs a year, a WAF and Cognito threat protection; development
            # stays cheap. (The search domain follows the load, and in production survives an
            # AZ outage: _plan.)
            "log_retention_days": 365 if production else 30,
            "waf": production,
            "threat_protection": production,
            # A model provider may bring its payload format and embedding size.
            **TEXT_PROVIDERS[text].defaults,
            **EMBED_PROVIDERS[embed].defaults,
            # The profile's choices come last: they override the stage's (no WAF fee in the
            # serverless profile, even in production), and explicit settings override them.
            **chosen,
        }
        parsers: dict[str, Callable[[Any], Any]] = {
            "search_mode": _choice(*get_args(SearchMode)),
            "auth": _choice(*get_args(AuthMode)),
            "mfa": _choice(*get_args(MfaMode)),
            "text_format": _member(TextFormat),
            "embed_format": _member(EmbedFormat),
            "cors_origins": _as_list,
            "records_indexes": _as_list,
            "search_migrate_memory_from": _as_list,
            "end_user_role_arns": _as_list,
        }
        values: dict[str, Any] = {
            "stage": stage,
            "production": production,
            "profile": profile,
            "text_provider": text,
            "embed_provider": embed,
            "model_mode": mode,
        }
        for name, spec in cls.__dataclass_fields__.items():
            if name in values:
                continue
            value = raw.get(name, defaults.get(name, spec.default))
            try:
                values[name] = _parse(name, value, spec.default, parsers)
            except ValueError as error:
                raise ValueError(f"{context_key(name)}: {error}") from None
        if "search_on_disk" not in raw:  # follows the dimension, however that was chosen
            values["search_on_disk"] = values["embed_dimension"] >= ON_DISK_FROM_DIMENSION
        _plan(values, raw)
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        """Reject settings that would deploy something broken."""
        if self.embed_dimension < 1:
            raise ValueError("embedDimension must be positive")
        if self.search_data_nodes < 1:
            raise ValueError("searchDataNodes must be at least 1")
        if not 1 <= self.search_shards <= 1024:
            raise ValueError("searchShards must be between 1 and 1024")
        if not 1 <= self.search_memory_indexes <= 64:
            raise ValueError("searchMemoryIndexes must be between 1 and 64")
        if self.search_memory_indexes > 1 and self.search_mode != "domain":
            raise ValueError("searchMemoryIndexes above 1 needs searchMode=domain")
        if not 0 <= self.search_memory_generation <= 999:
            raise ValueError("searchMemoryGeneration must be between 0 and 999")
        if (self.search_memory_generation or self.search_migrate_memory_from) and (
            self.search_mode != "domain"
        ):
            raise ValueError("searchMemoryGeneration and searchMigrateMemoryFrom need a domain")
        current = schema.memory_index_names(
            self.search_memory_indexes, self.search_memory_generation
        )
        moved = set(self.search_migrate_memory_from)
        named = all(re.fullmatch(schema.OPENSEARCH_INDEX_NAME, name) for name in moved)
        if (
            not named
            or moved & {*current, schema.PASSAGE_INDEX}
            or len(moved) < len(self.search_migrate_memory_from)
        ):
            raise ValueError(
                "searchMigrateMemoryFrom names the previous generation's memory indexes, once "
                f"each; the current ones are {', '.join(current)}"
            )
        if self.search_master_nodes not in (0, 3, 5):
            raise ValueError("searchMasterNodes must be 0, 3 or 5")
        if not self.cors_origins:
            raise ValueError("corsOrigins needs at least one origin ('*' for any)")
        unknown = set(self.records_indexes) - {i.name for i in schema.RECORDS.indexes}
        if unknown:
            known = ", ".join(i.name for i in schema.RECORDS.indexes)
            raise ValueError(f"recordsIndexes: no such index {sorted(unknown)} (one of {known})")
        if not 1 <= self.max_input_chars <= schema.MAX_INPUT_CHARS_LIMIT:
            raise ValueError(
                f"maxInputChars must be between 1 and {schema.MAX_INPUT_CHARS_LIMIT} (a turn "
                "must fit one DynamoDB item)"
            )
        if self.sweep_minutes < 1 or self.idle_minutes < 1:
            raise ValueError("sweepMinutes and idleMinutes must be at least 1")
        if min(self.daily_users, self.search_daily_users) < 1:
            raise ValueError("dailyUsers and searchDailyUsers must be at least 1")
        if not 0 < self.background_model_share < 1:
            raise ValueError(
                "backgroundModelShare must be between 0 and 1 (the chat's is the rest)"
            )
        if self.text_model_requests_per_minute < 1 or self.embed_model_requests_per_minute < 1:
            raise ValueError(
                "textModelRequestsPerMinute and embedModelRequestsPerMinute must be positive"
            )
        if not 1 <= self.consolidation_parallelization <= limits.LAMBDA_MAX_PARALLELIZATION_FACTOR:
            raise ValueError(
                "consolidationParallelization must be between 1 and "
                f"{limits.LAMBDA_MAX_PARALLELIZATION_FACTOR} (a stream mapping's most)"
            )
        if min(self.chat_reserved_concurrency, self.consolidation_concurrency) < 0:
            raise ValueError("a reserved concurrency must be 0 or more")
        if self.consolidation_retry_minutes < 1 or self.unconsolidated_alarm_hours < 1:
            raise ValueError(
                "consolidationRetryMinutes and unconsolidatedAlarmHours must be at least 1"
            )
        if not (
            self.powertools_layer_version == "latest" or self.powertools_layer_version.isdigit()
        ):
            raise ValueError("powertoolsLayerVersion must be a version number or 'latest'")
        if not 0 <= self.stream_retry_attempts <= 10:
            raise ValueError("streamRetryAttempts must be between 0 and 10")
        if not CHAT_TIMEOUT_SECONDS < self.purge_settle_seconds <= PURGE_TIMEOUT_SECONDS // 2:
            raise ValueError(
                f"purgeSettleSeconds must be longer than the chat function's timeout "
                f"({CHAT_TIMEOUT_SECONDS} s) and at most {PURGE_TIMEOUT_SECONDS // 2} s"
            )
        if self.end_user_role_arns and self.auth != "iam":
            raise ValueError(
                "endUserRoleArns needs auth=iam (Cognito users are each a caller already)"
            )
        for arn in self.end_user_role_arns:
            if not ROLE_ARN.fullmatch(arn):
                raise ValueError(f"endUserRoleArns: {arn!r} is not an IAM role's ARN")
        if not AGENT_GROUP_NAME.fullmatch(self.agent_group):
            raise ValueError(
                f"agentGroup {self.agent_group!r} must be 1 to 128 letters, digits or _.+=@- "
                "(a Cognito group name that reaches the function's claims unambiguously)"
            )
        if not 0 <= self.handoff_negative_turns <= HANDOFF_MAX_NEGATIVE_TURNS:
            raise ValueError(
                f"handoffNegativeTurns must be between 0 (off) and {HANDOFF_MAX_NEGATIVE_TURNS}"
            )
        if not -1.0 <= self.handoff_negative_score <= 1.0:
            raise ValueError("handoffNegativeScore must be between -1 and 1 (a sentiment score)")
        if not 1 <= self.vector_buckets <= limits.S3VECTORS_BUCKETS_PER_REGION:
            raise ValueError(
                f"vectorBuckets must be between 1 and {limits.S3VECTORS_BUCKETS_PER_REGION} "
                "(vector buckets a region holds)"
            )
        if self.search_mode == "s3vectors" and self.embed_dimension > S3VECTORS_MAX_DIMENSION:
            raise ValueError(
                f"embedDimension {self.embed_dimension} is more than an S3 Vectors index "
                f"accepts ({S3VECTORS_MAX_DIMENSION}) with searchMode=s3vectors"
            )
        for name, registry in (
            ("text_provider", TEXT_PROVIDERS),
            ("embed_provider", EMBED_PROVIDERS),
        ):
            if getattr(self, name) not in registry:
                raise ValueError(f"{_camel(name)} must be one of {', '.join(registry)}")
        if self.profile == "serverless":
            # What would bill every hour whatever the traffic: no setting may bring it back.
            self._refuse_hourly_models()
            if self.search_mode != "s3vectors":
                raise _contradicts_serverless(
                    f"searchMode={self.search_mode}",
                    "an OpenSearch domain or collection bills hourly",
                    ["search_mode"],
                    "it is s3vectors in this profile",
                )

    def _refuse_hourly_models(self) -> None:
        hourly: dict[str, ModelProvider] = {
            name: provider
            for name, provider in (
                ("text_provider", TEXT_PROVIDERS[self.text_provider]),
                ("embed_provider", EMBED_PROVIDERS[self.embed_provider]),
            )
            if provider.hourly
        }
        if not hourly:
            return
        why = next(iter(hourly.values())).hourly
        chosen = ", ".join(f"{_camel(name)}={getattr(self, name)}" for name in hourly)
        if self.model_mode in MODEL_MODES:
            # Chosen together, as modelMode did (and may still have).
            pair = f"textProvider={self.text_provider}, embedProvider={self.embed_provider}"
            raise _contradicts_serverless(
                f"modelMode={self.model_mode} ({pair})",
                why,
                ["model_mode", "text_provider", "embed_provider"],
                "they are bedrock in this profile",
            )
        raise _contradicts_serverless(chosen, why, list(hourly), "bedrock in this profile")

    @property
    def zone_awareness(self) -> bool:
        """Spread data nodes over two AZs whenever there are at least two."""
        return self.search_data_nodes >= 2

    @property
    def powertools_latest_parameter(self) -> str:
        """AWS's public SSM parameter holding the newest layer ARN for this runtime."""
        return f"/aws/service/powertools/python/{ARCHITECTURE}/python{PYTHON_VERSION}/latest"

    @property
    def powertools_layer_name(self) -> str:
        return f"AWSLambdaPowertoolsPythonV3-python{PYTHON_VERSION.replace('.', '')}-{ARCHITECTURE}"


# What each profile changes in the defaults (after the stage's: see from_mapping). The serverless
# profile leaves nothing that bills by the hour: Bedrock on demand instead of SageMaker
# endpoints, an S3 vector bucket instead of OpenSearch, no WAF (a monthly fee per web ACL and
# rule) and the Cognito Essentials plan (billed per monthly active user beyond a free tier,
# nothing while idle) instead of Plus, even in production.
PROFILE_DEFAULTS: dict[str, dict[str, Any]] = {
    "default": {},
    "serverless": {
        "text_provider": "bedrock",
        "embed_provider": "bedrock",
        "search_mode": "s3vectors",
        "waf": False,
        "threat_protection": False,
        "alarm_topic_key": False,
    },
}


def _plan(values: dict[str, Any], raw: Mapping[str, Any]) -> None:
    """The defaults that follow from the planned load and the model quota (stacks/sizing.py),
    where no explicit setting gave them."""
    load = sizing.Load(daily_users=max(1, int(values["daily_users"])))
    rate, burst = sizing.stage_throttle(load)
    quota = sizing.ModelQuota(
        values["text_model_requests_per_minute"], values["background_model_share"]
    )
    consolidations = values["consolidation_concurrency"] or sizing.consolidation_concurrency(quota)
    planned = {
        "throttle_rate": rate,
        "throttle_burst": burst,
        "vector_buckets": sizing.vector_buckets(load),
        "consolidation_concurrency": consolidations,
        # Compaction extends rolling summaries of long sessions: a quarter of consolidation's.
        "compaction_concurrency": max(2, consolidations // 4),
        "consolidation_retries_per_sweep": sizing.retries_per_sweep(
            consolidations, values["sweep_minutes"]
        ),
    }
    for name, value in planned.items():
        if name not in raw or not values[name]:  # unset, or 0: the planned value
            values[name] = value
    # The domain bills by the hour from the first deploy: outside production it is sized for
    # the load only when one is given, else for a trial. (The rest stays planned for
    # daily_users: the throttle and the S3 vector buckets cost nothing unused, and a bucket
    # count that changed would move users' memories out of reach.)
    if not values["search_daily_users"]:
        given = values["production"] or "daily_users" in raw
        values["search_daily_users"] = load.daily_users if given else sizing.TRIAL_DAILY_USERS
    if values["search_mode"] != "domain":
        return
    domain = sizing.search_domain(
        load.at(int(values["search_daily_users"])),
        dimension=int(values["embed_dimension"]),
        on_disk=bool(values["search_on_disk"]),
        production=bool(values["production"]),
        instance_type=str(raw["search_instance_type"]) if "search_instance_type" in raw else None,
        data_nodes=int(values["search_data_nodes"]) if "search_data_nodes" in raw else None,
    )
    for name, value in {
        "search_instance_type": domain.instance_type,
        "search_data_nodes": domain.data_nodes,
        "search_volume_gb": domain.volume_gb,
        "search_shards": domain.shards,
        "search_master_nodes": domain.master_nodes,
        "search_master_instance_type": domain.master_instance_type,
        "search_memory_indexes": domain.memory_indexes,
    }.items():
        if name not in raw:
            values[name] = value


def _model_providers(raw: Mapping[str, Any], chosen: Mapping[str, Any]) -> tuple[str, str, str]:
    """(text provider, embedding provider, model mode): each provider as set, else as modelMode
    (the older setting that chose both at once) says, else the profile's or the default; the
    mode is then the name of the pair ("mixed" when it is none)."""
    pair = [
        str(chosen.get("text_provider", Config.text_provider)),
        str(chosen.get("embed_provider", Config.embed_provider)),
    ]
    mode = ""
    if "model_mode" in raw:
        try:
            mode = _choice(*MODEL_MODES)(raw["model_mode"])
        except ValueError as error:
            raise ValueError(f"{context_key('model_mode')}: {error}") from None
        pair = list(MODEL_MODES[mode])
    for i, (name, registry) in enumerate(
        (("text_provider", TEXT_PROVIDERS), ("embed_provider", EMBED_PROVIDERS))
    ):
        if name not in raw:
            continue
        try:
            given = _choice(*registry)(raw[name])
        except ValueError as error:
            raise ValueError(f"{context_key(name)}: {error}") from None
        if mode and given != pair[i]:
            raise ValueError(
                f"{context_key(name)}={given} and {context_key('model_mode')}={mode} disagree "
                f"(modelMode={mode} is textProvider={MODEL_MODES[mode][0]} and "
                f"embedProvider={MODEL_MODES[mode][1]}): set textProvider and embedProvider "
                "without modelMode"
            )
        pair[i] = given
    named = next((m for m, providers in MODEL_MODES.items() if providers == tuple(pair)), "mixed")
    return pair[0], pair[1], named


def _contradicts_serverless(chosen: str, why: str, names: list[str], instead: str) -> ValueError:
    keys = " and ".join(context_key(name) for name in names)
    return ValueError(
        f"{chosen} contradicts profile=serverless ({why}): leave {keys} unset ({instead}) or "
        f"choose {context_key('profile')}=default"
    )


def _parse(name: str, value: Any, default: Any, parsers: Mapping[str, Callable[[Any], Any]]) -> Any:
    if name in parsers:
        return parsers[name](value)
    if isinstance(default, bool):
        return _as_bool(value)
    if isinstance(default, int):
        return int(value)
    if isinstance(default, float):
        return float(value)
    if isinstance(default, str):
        return str(value)
    return value


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


def context_key(name: str) -> str:
    """The cdk.json context key of a Config field (`model_mode` -> `chatmemory:modelMode`)."""
    return PREFIX + _camel(name)
