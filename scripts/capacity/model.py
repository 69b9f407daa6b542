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

from chatmemory import limits
from stacks.config import Config
from stacks.sizing import SECONDS_PER_DAY, Load

MEASURED = Path(__file__).with_name("measured.json")
LOADS = (10_000, 1_000_000, 10_000_000)
PROFILES = {"default": {}, "serverless": {"profile": "serverless"}}

# Not measured here: each is printed with the table as an assumption.
ASSUMED = {
    "chat_seconds": (2.0, "a chat turn's Lambda duration with a remote model (the answer's)"),
    "months_of_history": (12, "months of memories kept (turnTtlDays=0: never expired)"),
    "sign_ins_per_daily_user": (1.0, "Cognito sign-ins (or token refreshes) a daily user a day"),
    "turn_interval_seconds": (
        5.0,
        "the shortest time between one user's turns (their index's busiest rate)",
    ),
}
# Documented elsewhere than limits.py, or not verifiable offline (the report says which).
COGNITO_USER_AUTHENTICATION_RPS = 120  # recalled, not re-read offline: Service Quotas has yours
# OpenSearch Service keeps half an instance's memory for the JVM heap and the k-NN plugin's
# graphs may take half of the rest (knn.memory.circuit_breaker.limit): about a quarter. With
# 18 KB a vector of 4,096 floats, a t3.small's 2 GiB hold about 30,000 (the figure).
KNN_MEMORY_SHARE = 0.25
INSTANCE_MEMORY_GIB = {
    "t3.small.search": 2,
    "t3.medium.search": 4,
    "m6g.large.search": 8,
    "m6g.xlarge.search": 16,
    "m6g.2xlarge.search": 32,
    "c6g.large.search": 4,
    "r6g.large.search": 16,
    "r6g.xlarge.search": 32,
}
HNSW_M = 16
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


def _function(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r["function"] == name


def components(profile: str, measured: Measured | None = None) -> list[Component]:
    """The components of `profile` with its default settings, per daily user at peak."""
    measured = measured or Measured.load(profile)
    config = Config.from_mapping(PROFILES[profile])
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
    endpoint = config.text_provider != "bedrock"
    kind = SETTING if endpoint else QUOTA
    what = "the text endpoint's requests a minute (assumed)" if endpoint else "InvokeModel RPM"
    found = [
        Component(
            "Text model: the chat's share of its quota",
            "requests/min",
            60 * chat_text,
            (1 - share) * rpm,
            kind,
            f"{what} for the text model ({rpm:,} x {1 - share:g} kept for the chat)",
            "textModelRequestsPerMinute, backgroundModelShare",
            ask_factor=1 / (1 - share),
            ask_unit="text model requests a minute",
        ),
        Component(
            "Consolidation: sessions a minute (the day's average) within the background share",
            "sessions/min",
            sessions_per_minute,
            min(
                share * rpm / max(background_text, 1.0),
                config.consolidation_concurrency * 60 / (2.0 * max(background_text, 1.0)),
            ),
            kind,
            f"{what} x {share:g} / {background_text:g} text calls a consolidation",
            "backgroundModelShare, consolidationConcurrency (a call every 2 s, assumed)",
            ask_factor=max(background_text, 1.0) / share,
            ask_unit="text model requests a minute",
        ),
    ]
    embed_rpm = 60 * chat_embed + sessions_per_minute * background_embed
    found.append(
        Component(
            "Embedding model: requests a minute",
            "requests/min",
            embed_rpm,
            config.embed_model_requests_per_minute,
            kind,
            "InvokeModel RPM for the embedding model"
            if not endpoint
            else "the embedding endpoint's requests a minute (assumed)",
            "embedModelRequestsPerMinute",
            ask_unit="embedding model requests a minute",
        )
    )
    return found


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


def _domain(measured: Measured, one: Load, config: Config) -> list[Component]:
    dimension = config.embed_dimension
    nodes = config.search_data_nodes
    per_daily_user = (
        one.turns_per_user_day / one.turns_per_session * 30.4 * assumed("months_of_history")
    ) * vectors_per_session(measured)
    graph = 1.1 * ((dimension / 8 if config.search_on_disk else 4 * dimension) + 8 * HNSW_M)
    memory = INSTANCE_MEMORY_GIB.get(config.search_instance_type, 2) * 2**30 * KNN_MEMORY_SHARE
    bulk_bytes = measured.per_session(
        lambda r: r["service"] == "opensearch" and r["operation"].endswith("/_bulk"), "bytes"
    ) / max(vectors_per_session(measured), 1.0)
    on_disk = bulk_bytes + 4 * dimension  # the source as sent, and the vector's own file
    replicas = 1 if nodes > 1 else 0
    mode = "on disk, 32x" if config.search_on_disk else "in memory"
    return [
        Component(
            "OpenSearch domain: vectors in k-NN memory",
            "vectors",
            per_daily_user,
            nodes * memory / graph,
            SETTING,
            f"{nodes} x {config.search_instance_type}: a quarter of its memory for graphs of "
            f"{graph / 1024:.1f} KB a vector ({mode})",
            "searchInstanceType, searchDataNodes, searchOnDisk",
        ),
        Component(
            "OpenSearch domain: storage",
            "GB",
            per_daily_user * on_disk * (1 + replicas) / 1e9,
            nodes * config.search_volume_gb * 0.8,
            SETTING,
            f"{nodes} x {config.search_volume_gb} GB, 20% kept free "
            f"({on_disk / 1024:.0f} KB a vector)",
            "searchVolumeGb, searchDataNodes",
        ),
    ]
