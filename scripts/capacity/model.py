"""The capacity model: every component's peak rate at a load, the first limit it meets, and at
what load it meets it, for each profile with its default settings.

Its inputs, none assumed where a measurement exists:

* what one session sends (its creation, its turns, what the streams run for them, its end and
  consolidation), per function, service, operation and resource, with the DynamoDB capacity
  units it consumed: scripts/capacity/measured.json, written by the AWS contract scenario
  (tests/aws/capacity.py), which the contract check holds to what the code sends;
* the documented limits (chatmemory/limits.py, each with its source), and the settings the
  profile deploys with (stacks/config.py, stacks/sizing.py);
* the load (stacks/sizing.py: 20 turns a user a day in sessions of 10, the busiest second 5
  times the day's average, 3 users with memories per daily user), and the few durations no
  measurement here gives (ASSUMED below, each said so in the report).

Every rate here grows in proportion to the daily users, so a component meets its limit at the
load where its rate reaches it: limit / (rate per daily user).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chatmemory import limits, schema
from stacks import sizing
from stacks.config import Config
from stacks.models import DEFAULT_TEXT_MODEL
from stacks.sizing import SECONDS_PER_DAY, Load

MEASURED = Path(__file__).with_name("measured.json")
LOADS = (10_000, 1_000_000, 10_000_000)
PROFILES = {"default": {}, "serverless": {"profile": "serverless"}}

# Not measured here: each is printed with the table as an assumption.
ASSUMED = {
    "chat_seconds": (2.0, "a chat turn's Lambda duration with a remote model (the answer's)"),
    "months_of_history": (
        Load().months_of_history,
        "months of memories kept (turnTtlDays=0: never expired; stacks/sizing.Load)",
    ),
    "sign_ins_per_daily_user": (1.0, "Cognito sign-ins (or token refreshes) a daily user a day"),
    "turn_interval_seconds": (
        5.0,
        "the shortest time between one user's turns (their index's busiest rate)",
    ),
}
# Documented elsewhere than limits.py, or not verifiable offline (the report says which).
COGNITO_USER_AUTHENTICATION_RPS = 120  # recalled, not re-read offline: Service Quotas has yours
# Tokens of a model request: about 4 bytes of its body a token (the request's JSON counted as
# text: an upper bound), and a text call's answer counted at its most (Bedrock's token quota
# reserves a request's max_tokens when it starts).
BYTES_PER_TOKEN = 4.0
ANSWER_TOKENS = 256  # chatmemory.settings.Settings.max_new_tokens
# The models' names in Service Quotas ("... tokens per minute for Amazon Nova Micro").
QUOTA_MODEL_NAMES = {
    "amazon.nova-micro-v1:0": "Amazon Nova Micro",
    "amazon.titan-embed-text-v2:0": "Amazon Titan Text Embeddings V2",
}
READS = {"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"}
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
QUOTA = "quota"  # an account quota: raise it (Service Quotas)
SETTING = "setting"  # a setting of the stack: change it
HARD = "hard"  # a service limit that does not change


def assumed(name: str) -> float:
    return float(ASSUMED[name][0])


@dataclass(frozen=True)
class Measured:
    """One profile's measured session (scripts/capacity/measured.json)."""

    parts: dict[str, Any]

    @classmethod
    def load(cls, profile: str, path: Path = MEASURED) -> Measured:
        kept = json.loads(path.read_text())
        if profile not in kept:
            raise KeyError(f"{path} has no {profile} profile: make capacity ARGS=--measure")
        return cls(kept[profile])

    def rows(self, *names: str) -> Iterable[dict[str, Any]]:
        for name in names:
            yield from self.parts[name]

    def per_second(
        self, load: Load, select: Callable[[dict[str, Any]], bool], field: str = "count"
    ) -> float:
        """The busiest second's rate of what `select` picks: the session's own parts at the
        sessions' rate, its turns' parts at the turns' rate (per turn measured)."""
        turns = float(self.parts["turns"])
        per_session = sum(
            _value(r, field) for r in self.rows("session", "consolidation") if select(r)
        )
        per_turn = (
            sum(_value(r, field) for r in self.rows("turns_requests", "turns_streams") if select(r))
            / turns
        )
        return load.sessions_per_second * per_session + load.turns_per_second * per_turn

    def per_session(self, select: Callable[[dict[str, Any]], bool], field: str = "count") -> float:
        """What one session of the load's length sends, all parts."""
        return sum(
            _value(r, field)
            for r in self.rows("session", "turns_requests", "turns_streams", "consolidation")
            if select(r)
        )


def _value(row: dict[str, Any], field: str) -> float:
    if field == "units" and row["operation"] in READS:
        # DynamoDB Local reports no unit for an item not found; DynamoDB bills a strongly
        # consistent read of one (4 KB) all the same.
        return max(float(row["units"]), float(row["items"]))
    return float(row[field])


@dataclass
class Component:
    """One thing that has a limit: its peak rate per daily user, and the limit."""

    name: str
    unit: str
    per_daily_user: float
    limit: float
    kind: str  # QUOTA, SETTING or HARD
    limit_name: str
    source: str = ""
    # A rate that does not grow with the load (one user's own index): the load is not what
    # brings it to its limit.
    fixed: float | None = None
    # The quota to ask for, in its own unit, for a rate: quota = rate x `ask_factor` + `ask_base`
    # (the text model's whole quota when the chat may use half of it; the concurrency the
    # background functions reserve on top of the chat's).
    ask_factor: float = 1.0
    ask_base: float = 0.0
    ask_unit: str = ""
    # A second quota asked for with the first: a model's tokens a minute, `tokens_per_unit`
    # for each unit of the first (its requests a minute), under its Service Quotas name.
    tokens_per_unit: float = 0.0
    tokens_quota: str = ""

    def rate(self, daily_users: int) -> float:
        return self.fixed if self.fixed is not None else self.per_daily_user * daily_users

    @property
    def reached_at(self) -> float:
        """Daily users at which the rate reaches the limit (inf: never)."""
        if self.fixed is not None:
            return math.inf if self.fixed < self.limit else 0.0
        return math.inf if self.per_daily_user <= 0 else self.limit / self.per_daily_user

    def ask_for(self, daily_users: int) -> int:
        """A quota to ask for at a load: what its rate needs, with a quarter more for headroom."""
        return math.ceil(self.rate(daily_users) * 1.25 * self.ask_factor + self.ask_base)

    def tokens_for(self, daily_users: int) -> int:
        """The tokens a minute to ask for with ask_for's requests (0: no token quota)."""
        return math.ceil(self.ask_for(daily_users) * self.tokens_per_unit)


def _function(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r["function"] == name


def profile_config(profile: str, *, production: bool = True) -> Config:
    """A profile's default settings: by default as production deploys them (the target's); a
    development stage deployed without dailyUsers differs in its domain only, a trial's
    (stacks/sizing.TRIAL_DAILY_USERS)."""
    return Config.from_mapping({**PROFILES[profile], "stage": "prod" if production else "dev"})


def components(
    profile: str, measured: Measured | None = None, *, production: bool = True
) -> list[Component]:
    """The components of `profile` with its default settings (profile_config), per daily user
    at peak."""
    measured = measured or Measured.load(profile)
    config = profile_config(profile, production=production)
    one = Load(daily_users=1)
    found: list[Component] = []

    def invocations(function: str) -> float:
        return measured.per_second(
            one, lambda r: r["function"] == function and r["service"] == "lambda"
        )

    api = invocations("chat_api")
    found.append(
        Component(
            "API Gateway: the stage's throttle",
            "requests/s",
            api,
            config.throttle_rate,
            SETTING,
            "throttleRate",
            "stacks/sizing.stage_throttle (from dailyUsers)",
        )
    )
    found.append(
        Component(
            "API Gateway: the account's throttle (all APIs of the region)",
            "requests/s",
            api,
            limits.APIGATEWAY_ACCOUNT_RATE,
            QUOTA,
            "Throttle rate (API Gateway, per account and region)",
            "API Gateway quotas",
        )
    )
    reserved = config.consolidation_concurrency + config.compaction_concurrency
    found.append(
        Component(
            "Lambda: concurrent executions of the chat",
            "executions",
            api * assumed("chat_seconds"),
            limits.LAMBDA_CONCURRENT_EXECUTIONS - reserved,
            QUOTA,
            f"Concurrent executions (1,000 a region; {reserved} reserved for background work)",
            "Lambda quotas",
            ask_base=reserved + limits.LAMBDA_UNRESERVED_MINIMUM,
            ask_unit="concurrent executions",
        )
    )
    found += _dynamodb(measured, one)
    found += _models(measured, one, config)
    if config.search_mode == "s3vectors":
        found += _s3vectors(measured, one, config)
    elif config.search_mode == "domain":
        found += _domain(measured, one, config)
    sign_ins = assumed("sign_ins_per_daily_user") * one.peak_to_average / SECONDS_PER_DAY
    if config.auth == "cognito":
        found.append(
            Component(
                "Cognito: sign-ins (UserAuthentication)",
                "requests/s",
                sign_ins,
                COGNITO_USER_AUTHENTICATION_RPS,
                QUOTA,
                "UserAuthentication requests per second (120, not re-read offline)",
                "Amazon Cognito quotas",
            )
        )
    return found


def _dynamodb(measured: Measured, one: Load) -> list[Component]:
    found = []
    tables = sorted(
        {
            r["resource"]
            for r in measured.rows("session", "turns_requests", "turns_streams", "consolidation")
            if r["service"] == "dynamodb"
        }
    )
    for resource in tables:
        table, _, index = resource.partition("/")
        for kind, operations, limit in (
            ("reads", READS, limits.DYNAMODB_TABLE_READ_UNITS),
            ("writes", WRITES, limits.DYNAMODB_TABLE_WRITE_UNITS),
        ):

            def picked(r: dict[str, Any], res: str = resource, ops: set[str] = operations) -> bool:
                return r["resource"] == res and r["operation"] in ops

            rate = measured.per_second(one, picked, "units")
            if rate <= 0 or index:
                continue
            found.append(
                Component(
                    f"DynamoDB: {table} table, {kind}",
                    "units/s",
                    rate,
                    limit,
                    QUOTA,
                    f"Table-level {kind[:-1]} throughput (on demand, 40,000 units a second)",
                    "DynamoDB quotas",
                )
            )
    # The sweeper's index: one partition key a shard and a state ("OPEN#3", "ENDED#3"), each
    # written by the sessions of its shard (a session's creation, its activity buckets, its
    # end and its consolidation): at most 1,000 write units a second a partition.
    sweep = measured.per_second(
        one,
        lambda r: r["resource"] == "sessions/open-sessions" and r["operation"] in WRITES,
        "units",
    )
    found.append(
        Component(
            "DynamoDB: the sweeper's index, one shard's key",
            "units/s",
            sweep / 16,
            limits.DYNAMODB_PARTITION_WRITE_UNITS,
            HARD,
            "a partition's write throughput (1,000 units a second; 16 shards)",
            "DynamoDB partitions and data distribution",
        )
    )
    return found


def _models(measured: Measured, one: Load, config: Config) -> list[Component]:
    """The text and embedding models' requests a minute against what the account allows: on
    Bedrock its per-model quotas (requests and tokens a minute, by their Service Quotas names),
    on SageMaker endpoints the instances the endpoints run on (what an instance takes is
    textModelRequestsPerMinute / embedModelRequestsPerMinute; their instance type's quota "for
    endpoint usage" bounds how many). Either way an account's quota to raise, with the numbers;
    then set the two settings to the new rate (consolidation's concurrency follows)."""
    text = _is_text_model
    chat_text = measured.per_second(one, lambda r: r["function"] == "chat_api" and text(r))
    chat_embed = measured.per_second(one, lambda r: r["function"] == "chat_api" and _is_embed(r))
    background_text = measured.per_session(lambda r: r["function"] != "chat_api" and text(r))
    background_embed = measured.per_session(
        lambda r: r["function"] != "chat_api" and _is_embed(r), "items"
    )
    sessions_per_minute = 60 * one.sessions_per_second / one.peak_to_average  # the day's average
    share = config.background_model_share
    rpm = config.text_model_requests_per_minute
    calls = max(background_text, 1.0)
    text_quota = _text_quota(config)
    embed_quota = _embed_quota(config)
    text_tokens = _tokens_per_request(measured, text) + ANSWER_TOKENS
    embed_tokens = _tokens_per_request(measured, _is_embed)
    found = [
        Component(
            "Text model: the chat's share of its quota",
            "requests/min",
            60 * chat_text,
            (1 - share) * rpm,
            QUOTA,
            f"{text_quota[0]}: {rpm:,} x {1 - share:g} kept for the chat",
            "textModelRequestsPerMinute, backgroundModelShare",
            ask_factor=1 / (1 - share) / text_quota[2],
            ask_unit=text_quota[3],
            tokens_per_unit=text_tokens if text_quota[1] else 0.0,
            tokens_quota=text_quota[1],
        ),
        Component(
            "Consolidation: sessions a minute (the day's average) within the background share",
            "sessions/min",
            sessions_per_minute,
            min(share * rpm / calls, config.consolidation_concurrency * 60 / (2.0 * calls)),
            QUOTA,
            f"{text_quota[0]}: {rpm:,} x {share:g} / {background_text:g} text calls a "
            "consolidation",
            "backgroundModelShare, consolidationConcurrency (a call every 2 s, assumed)",
            ask_factor=calls / share / text_quota[2],
            ask_unit=text_quota[3],
            tokens_per_unit=text_tokens if text_quota[1] else 0.0,
            tokens_quota=text_quota[1],
        ),
    ]
    embed_rpm = 60 * chat_embed + sessions_per_minute * background_embed
    found.append(
        Component(
            "Embedding model: requests a minute",
            "requests/min",
            embed_rpm,
            config.embed_model_requests_per_minute,
            QUOTA,
            f"{embed_quota[0]}: {config.embed_model_requests_per_minute:,}",
            "embedModelRequestsPerMinute",
            ask_factor=1 / embed_quota[2],
            ask_unit=embed_quota[3],
            tokens_per_unit=embed_tokens if embed_quota[1] else 0.0,
            tokens_quota=embed_quota[1],
        )
    )
    return found


def _tokens_per_request(measured: Measured, select: Callable[[dict[str, Any]], bool]) -> float:
    """A model request's input tokens, from the bytes the scenario's requests carried."""
    rows = [r for r in measured.rows("turns_requests", "consolidation") if select(r)]
    requests = sum(float(r["count"]) for r in rows)
    return sum(float(r["bytes"]) for r in rows) / max(requests, 1.0) / BYTES_PER_TOKEN


def _bedrock_quotas(model_id: str, kind: str) -> tuple[str, str, float, str]:
    """(requests quota, tokens quota, requests a unit of the ask, the ask's unit) of a Bedrock
    model: its Service Quotas names, cross-region for an inference profile."""
    model = schema.foundation_model(model_id)
    name = QUOTA_MODEL_NAMES.get(model, model)
    scope = "Cross-Region" if schema.inference_profile(model_id) else "On-demand"
    return (
        f"'{scope} InvokeModel requests per minute for {name}'",
        f"'{scope} InvokeModel tokens per minute for {name}'",
        1.0,
        f"{kind} model requests a minute",
    )


def _endpoint_quotas(requests_per_instance: int, kind: str) -> tuple[str, str, float, str]:
    """The same for a SageMaker endpoint: its instances, each taking `requests_per_instance`."""
    from scripts.cost.usage import Usage  # here: the cost model's usage reads this module

    instance = Usage().external_endpoint_instance_type
    return (
        f"'{instance} for endpoint usage' (instances of the {kind} endpoint, each taking "
        f"{requests_per_instance:,} requests a minute, assumed)",
        "",
        float(requests_per_instance),
        f"{instance} instances for the {kind} endpoint ('{instance} for endpoint usage')",
    )


def _text_quota(config: Config) -> tuple[str, str, float, str]:
    if config.text_provider == "bedrock":
        # No model set: Nova Micro through the geography's cross-region inference profile.
        return _bedrock_quotas(config.text_model_id or f"us.{DEFAULT_TEXT_MODEL}", "text")
    return _endpoint_quotas(config.text_model_requests_per_minute, "text")


def _embed_quota(config: Config) -> tuple[str, str, float, str]:
    if config.embed_provider == "bedrock":
        return _bedrock_quotas(config.embed_model_id, "embedding")
    return _endpoint_quotas(config.embed_model_requests_per_minute, "embedding")


def _is_text_model(row: dict[str, Any]) -> bool:
    if row["service"] == "bedrock-runtime":
        return row["operation"] == "Converse"
    return row["service"] == "sagemaker-runtime" and "embedding" not in row["resource"]


def _is_embed(row: dict[str, Any]) -> bool:
    if row["service"] == "bedrock-runtime":
        return row["operation"] == "InvokeModel"
    return row["service"] == "sagemaker-runtime" and "embedding" in row["resource"]


def vectors_per_session(measured: Measured) -> float:
    """Entries a session leaves in long-term memory (its windows, summary, opening, records)."""
    return measured.per_session(
        lambda r: (
            (r["service"] == "s3vectors" and r["operation"] == "PutVectors")
            or (r["service"] == "opensearch" and r["operation"].endswith("/_bulk"))
        ),
        "items",
    )


def vectors_per_user(measured: Measured, load: Load) -> float:
    """Entries in one user's memory after ASSUMED months_of_history: what a query of their own
    index reads (S3 Vectors bills a query for the data of the index it searches)."""
    sessions_a_day = load.turns_per_user_day / load.turns_per_session / load.users_per_daily_user
    return sessions_a_day * 30.4 * assumed("months_of_history") * vectors_per_session(measured)


def _s3vectors(measured: Measured, one: Load, config: Config) -> list[Component]:
    users_per_bucket = one.users_per_daily_user / config.vector_buckets
    per_user = 1.0 / assumed("turn_interval_seconds")
    return [
        Component(
            "S3 Vectors: users' indexes in one vector bucket",
            "indexes",
            users_per_bucket,
            limits.S3VECTORS_INDEXES_PER_BUCKET,
            SETTING,
            f"10,000 indexes a bucket, over vectorBuckets={config.vector_buckets} buckets",
            "S3 Vectors limitations",
        ),
        Component(
            "S3 Vectors: one user's index, queries",
            "queries/s",
            0.0,
            limits.S3VECTORS_QUERIES_PER_SECOND,
            HARD,
            "'hundreds' of queries a second an index (read as 100)",
            "S3 Vectors best practices",
            fixed=per_user,
        ),
        Component(
            "S3 Vectors: one user's index, vectors written",
            "vectors/s",
            0.0,
            limits.S3VECTORS_WRITE_VECTORS_PER_SECOND,
            HARD,
            "2,500 vectors inserted and deleted a second an index",
            "S3 Vectors limitations",
            fixed=vectors_per_session(measured) / assumed("turn_interval_seconds"),
        ),
    ]


def stored_source_bytes(measured: Measured) -> float:
    """What a domain keeps of an entry's _source (without the vector), as the scenario wrote."""
    rows = [
        r
        for r in measured.rows("consolidation")
        if r["service"] == "opensearch" and r["operation"].endswith("/_bulk")
    ]
    if any("stored_bytes" not in r for r in rows):
        raise KeyError(f"{MEASURED} has no stored_bytes: make capacity ARGS=--measure")
    return sum(r["stored_bytes"] for r in rows) / max(sum(r["items"] for r in rows), 1)


def _domain(measured: Measured, one: Load, config: Config) -> list[Component]:
    """The domain as deployed (sized by stacks/sizing.search_domain for dailyUsers, unless set):
    the k-NN graphs in the plugin's memory, the entries on the volumes, the primary shards at
    AWS's size guidance, and the domain's instances within the account's quota."""
    dimension, on_disk = config.embed_dimension, config.search_on_disk
    nodes = config.search_data_nodes
    kind = sizing.instance(config.search_instance_type)
    if kind is None:
        raise ValueError(f"the capacity model knows no {config.search_instance_type}")
    entries = one.sessions_per_day * 30.4 * one.months_of_history * vectors_per_session(measured)
    graph = sizing.graph_bytes(dimension, on_disk)
    entry = sizing.entry_bytes(dimension, on_disk, stored_source_bytes(measured))
    copies = sizing.copies(nodes)
    mode = "on disk, 32x" if on_disk else "in memory"
    shards, indexes = config.search_shards, config.search_memory_indexes
    largest = sizing.SEARCH_INSTANCES[-1]
    # Data nodes a daily user needs on the largest instance type (both copies of each shard).
    nodes_per_daily_user = max(
        2 * entries * graph / largest.knn_memory_bytes,
        2 * entries * entry * sizing.STORAGE_OVERHEAD / (largest.max_volume_gib * sizing.GIB),
    )
    masters = config.search_master_nodes
    return [
        Component(
            "OpenSearch domain: vectors in k-NN memory",
            "vectors",
            entries,
            nodes * kind.knn_memory_bytes / (graph * copies),
            SETTING,
            f"{nodes} x {kind.name}: {kind.knn_memory_bytes / sizing.GIB:g} GiB each for graphs "
            f"of {graph / 1024:.1f} KB a vector ({mode}), {copies} "
            f"cop{'ies' if copies > 1 else 'y'}",
            "dailyUsers (searchInstanceType, searchDataNodes, searchOnDisk)",
        ),
        Component(
            "OpenSearch domain: storage",
            "GiB",
            entries * entry * copies * sizing.STORAGE_OVERHEAD / sizing.GIB,
            nodes * config.search_volume_gb,
            SETTING,
            f"{nodes} x {config.search_volume_gb:,} GiB ({entry / 1024:.0f} KB an entry, "
            f"{copies} cop{'ies' if copies > 1 else 'y'}, x {sizing.STORAGE_OVERHEAD:g} for "
            "OpenSearch's reserves)",
            "dailyUsers (searchVolumeGb, searchDataNodes)",
        ),
        Component(
            "OpenSearch memory indexes: primary shards",
            "GiB",
            entries * entry / sizing.GIB,
            indexes * shards * sizing.SHARD_GIB,
            SETTING,
            f"{indexes} memory index{'es' if indexes > 1 else ''} of {shards:,} shards of at most "
            f"{sizing.SHARD_GIB} GiB (AWS's guidance; an index has at most "
            f"{limits.OPENSEARCH_SHARDS_PER_INDEX:,} shards, fixed when it is made)",
            "dailyUsers (searchShards, searchMemoryIndexes)",
        ),
        Component(
            "OpenSearch domain: instances (data nodes on the largest type)",
            "instances",
            nodes_per_daily_user,
            limits.OPENSEARCH_INSTANCES_PER_DOMAIN - masters,
            QUOTA,
            f"Instances per domain ({limits.OPENSEARCH_INSTANCES_PER_DOMAIN}, up to "
            f"{limits.OPENSEARCH_INSTANCES_PER_DOMAIN_MAX:,} through AWS Support; {masters} "
            "dedicated masters)",
            "OpenSearch Service quotas",
            ask_base=masters,
            ask_unit="instances a domain",
        ),
    ]
