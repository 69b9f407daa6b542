"""Prices one synthesized CloudFormation template: what bills while idle (from the resources and
their properties), what a chat turn adds on top, and a month at a number of users."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chatmemory.schema import (
    EmbedBackend,
    LongTermBackend,
    SentimentMode,
    TextBackend,
    inference_profile,
)
from chatmemory.services.background.maintenance import CompactionPolicy
from chatmemory.services.conversation.sentiment import MAX_ANSWER_TOKENS, sentiment_prompt
from chatmemory.services.prompt import estimate_tokens
from chatmemory.settings import Settings
from scripts.cost.prices import PriceTable
from scripts.cost.usage import Usage

if TYPE_CHECKING:
    from stacks.config import Config

GB = 2**30
TB = 2**40
MONTH_MINUTES_PER_HOUR = 60

# Resource types that bill nothing by themselves (their use is priced per turn where it bills:
# Lambda, API Gateway, DynamoDB, SQS, logs), or whose cost is priced through another resource
# (an endpoint config through its endpoint, an S3 vector index through its bucket's queries).
PRICED_ELSEWHERE = frozenset(
    {
        "AWS::ApiGateway::Account",
        "AWS::ApiGateway::Authorizer",
        "AWS::ApiGateway::Deployment",
        "AWS::ApiGateway::GatewayResponse",
        "AWS::ApiGateway::Method",
        "AWS::ApiGateway::Resource",
        "AWS::ApiGateway::RestApi",
        "AWS::ApiGateway::Stage",
        "AWS::CDK::Metadata",
        "AWS::Cognito::UserPoolClient",
        "AWS::Cognito::UserPoolGroup",
        "AWS::DynamoDB::Table",
        # The hand-off bus: $1 per million events published, one per hand-off and hand-back
        # (not part of a chat turn; nothing while idle, no archive).
        "AWS::Events::EventBus",
        "AWS::IAM::ManagedPolicy",
        "AWS::IAM::Policy",
        "AWS::IAM::Role",
        # A SnapStart function's version and alias (its snapshot: Pricer._snapshots).
        "AWS::Lambda::Alias",
        "AWS::Lambda::EventSourceMapping",
        "AWS::Lambda::Function",
        "AWS::Lambda::Permission",
        "AWS::Lambda::Version",
        "AWS::Logs::LogGroup",
        "AWS::Logs::ResourcePolicy",
        "AWS::OpenSearchServerless::AccessPolicy",
        "AWS::OpenSearchServerless::SecurityPolicy",
        "AWS::S3Vectors::Index",
        "AWS::S3Vectors::VectorBucketPolicy",
        "AWS::SNS::TopicPolicy",
        "AWS::SQS::QueuePolicy",
        "AWS::SageMaker::EndpointConfig",
        "AWS::SageMaker::Model",
        "AWS::WAFv2::WebACLAssociation",
    }
)
# Types with an idle price of their own (see Pricer.idle_items).
PRICED_HERE = frozenset(
    {
        "AWS::CloudWatch::Alarm",
        "AWS::CloudWatch::CompositeAlarm",
        "AWS::CloudWatch::Dashboard",
        "AWS::Cognito::UserPool",
        "AWS::Events::Rule",
        "AWS::KMS::Key",
        "AWS::OpenSearchServerless::Collection",
        "AWS::OpenSearchService::Domain",
        "AWS::S3Vectors::VectorBucket",
        "AWS::SNS::Topic",
        "AWS::SQS::Queue",
        "AWS::SageMaker::Endpoint",
        "AWS::SecretsManager::Secret",
        "AWS::WAFv2::WebACL",
    }
)


@dataclass(frozen=True)
class Item:
    """One line of an estimate: `usd` (a month, or a turn) and how it was reached."""

    what: str
    usd: float
    how: str = ""
    # The part an always-free allowance covers when nothing else in the account uses it.
    free_usd: float = 0.0


@dataclass
class Estimate:
    """A configuration priced: idle items a month, items per turn, months at user counts."""

    name: str
    idle: list[Item]
    turn: list[Item]
    monthly: dict[int, list[Item]]
    notes: list[str] = field(default_factory=list)

    def month_usd(self, users: int) -> float:
        """The month at `users` users, idle cost included."""
        return sum(item.usd for item in self.monthly[users])

    @property
    def idle_usd_month(self) -> float:
        """What bills in a month without a single request, at list price."""
        return sum(item.usd for item in self.idle)

    @property
    def idle_free_tier_usd_month(self) -> float:
        """The same once the always-free allowances the items name are deducted."""
        return sum(item.usd - item.free_usd for item in self.idle)

    @property
    def per_turn_usd(self) -> float:
        """What one chat turn adds, its share of consolidation included."""
        return sum(item.usd for item in self.turn)

    @property
    def per_1000_turns_usd(self) -> float:
        """What 1,000 chat turns add."""
        return 1000 * self.per_turn_usd

    def biggest_idle(self, count: int = 3) -> list[Item]:
        """The idle items that cost the most."""
        return sorted((i for i in self.idle if i.usd > 0), key=lambda i: -i.usd)[:count]


class Template:
    """Read access to a CloudFormation template's resources."""

    def __init__(self, body: Mapping[str, Any]) -> None:
        self.resources: Mapping[str, Mapping[str, Any]] = body.get("Resources", {})

    def of_type(self, kind: str) -> list[tuple[str, Mapping[str, Any]]]:
        """(logical id, properties) of every resource of one type."""
        return [
            (logical_id, resource.get("Properties", {}))
            for logical_id, resource in self.resources.items()
            if resource["Type"] == kind
        ]

    def count(self, kind: str) -> int:
        """How many resources of one type."""
        return len(self.of_type(kind))

    def properties(self, logical_id: str) -> Mapping[str, Any]:
        """One resource's properties."""
        return self.resources[logical_id].get("Properties", {})

    def function(self, module: str) -> Mapping[str, Any] | None:
        """The Lambda function whose handler lives in `handlers.<module>`."""
        for _, props in self.of_type("AWS::Lambda::Function"):
            if str(props.get("Handler", "")).startswith(f"handlers.{module}."):
                return props
        return None

    def types(self) -> set[str]:
        """Every resource type in the template."""
        return {resource["Type"] for resource in self.resources.values()}


def target(value: Any) -> str | None:
    """The logical id a Ref or Fn::GetAtt points to."""
    if isinstance(value, Mapping):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
    return None


def environment(
    function: Mapping[str, Any] | None,
    mappings: Mapping[str, Any] | None = None,
    region: str = "us-east-1",
) -> dict[str, str]:
    """A function's environment variables as deployed in `region`: plain values, and values
    CloudFormation takes from the template's mappings by region (the default model of the
    region); values only a deployment knows (table names, endpoints) are left out."""
    if function is None:
        return {}
    variables = function.get("Environment", {}).get("Variables", {})
    found = {}
    for key, value in variables.items():
        resolved = _regional(value, mappings or {}, region)
        if resolved is not None:
            found[key] = resolved
    return found


def _regional(value: Any, mappings: Mapping[str, Any], region: str) -> str | None:
    """A plain value, Fn::Join of such values, or Fn::FindInMap keyed by AWS::Region."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        resolved = [_regional(part, mappings, region) for part in parts]
        return None if None in resolved else separator.join(str(p) for p in resolved)
    if isinstance(value, Mapping) and "Fn::FindInMap" in value:
        name, first, second = value["Fn::FindInMap"]
        if first == {"Ref": "AWS::Region"} and isinstance(second, str):
            entry = mappings.get(name, {}).get(region, {}).get(second)
            return None if entry is None else str(entry)
    return None


def schedule_minutes(expression: str) -> float:
    """Minutes between two runs of `rate(...)`."""
    match = re.fullmatch(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)", expression)
    if match is None:
        raise ValueError(f"cannot price schedule {expression!r} (only rate(...) expressions)")
    amount, unit = int(match[1]), match[2].rstrip("s")
    return amount * {"minute": 1, "hour": 60, "day": 1440}[unit]


def compactions(turns: int, after: int, keep: int) -> int:
    """Compaction runs in a session of `turns` turns (services/background/maintenance.py's rule)."""
    covered = runs = 0
    for num_turns in range(1, turns + 1):
        if num_turns - covered > after:
            covered = num_turns - keep
            runs += 1
    return runs


def money(usd: float) -> str:
    """Dollars with cents, or four decimals below a dollar."""
    return f"${usd:,.2f}" if usd >= 0.995 or usd == 0 else f"${usd:.4f}".rstrip("0")


def hourly(prices: PriceTable, what: str, count: int, price: str) -> Item:
    """`count` instances billed by the hour at the price table's `price`, for the month."""
    rate, hours = prices.usd(price), prices.hours_per_month
    return Item(what, count * rate * hours, f"{count} x ${rate}/h x {hours:g} h")


@dataclass(frozen=True)
class Domain:
    """An OpenSearch Service domain as it bills: its instances and their volumes."""

    nodes: int
    instance_type: str
    masters: int = 0
    master_type: str = ""
    volume_gb: int = 0  # 0: no EBS volume
    volume_type: str = "gp3"
    iops: int = 3000


def domain_of(config: Config) -> Domain:
    """The domain a deployment's settings make (stacks/long_term.py)."""
    return Domain(
        nodes=config.search_data_nodes,
        instance_type=config.search_instance_type,
        masters=config.search_master_nodes,
        master_type=config.search_master_instance_type,
        volume_gb=config.search_volume_gb,
    )


def domain_items(domain: Domain, prices: PriceTable) -> list[Item]:
    """What a domain bills a month at list price, users or not (the stack's synth says it of a
    large one: stacks/long_term.py)."""
    nodes, kind, masters = domain.nodes, domain.instance_type, domain.masters
    items = [
        hourly(
            prices, f"OpenSearch domain ({nodes} x {kind})", nodes, f"opensearch.instance.{kind}"
        )
    ]
    if masters:
        master = domain.master_type
        items.append(
            hourly(
                prices,
                f"OpenSearch dedicated masters ({masters} x {master})",
                masters,
                f"opensearch.instance.{master}",
            )
        )
    if domain.volume_gb:
        size, volume = domain.volume_gb, domain.volume_type
        rate = prices.usd(f"opensearch.storage.{volume}")
        items.append(
            Item(
                f"OpenSearch storage ({nodes} x {size} GB {volume})",
                nodes * size * rate,
                f"{nodes * size} GB x ${rate}/GB-month",
            )
        )
        if volume == "gp3" and domain.iops > 3000:
            rate = prices.usd("opensearch.storage.gp3_iops")
            items.append(Item("OpenSearch IOPS above 3,000", nodes * (domain.iops - 3000) * rate))
    return items


class Pricer:
    """Prices one template with one price table and one set of usage assumptions."""

    def __init__(self, body: Mapping[str, Any], prices: PriceTable, usage: Usage) -> None:
        self.t = Template(body)
        self.prices = prices
        self.usage = usage
        self.hours = prices.hours_per_month
        self.chat = self.t.function("chat_api")
        # The runtime's own settings, parsed from the chat function's environment as at cold
        # start: backends, model ids, prompt and answer budgets, compaction interval.
        self.settings = Settings.from_env(
            environment(self.chat, body.get("Mappings"), prices.region)
        )
        self.notes: list[str] = []

    # --- shared helpers ---------------------------------------------------------------------

    def usd(self, price_id: str) -> float:
        return self.prices.usd(price_id)

    def _gb_second(self, function: Mapping[str, Any]) -> float:
        arch = (function.get("Architectures") or ["x86_64"])[0]
        return self.usd(f"lambda.{arch}")

    def _invocations(
        self, function: Mapping[str, Any] | None, count: float, seconds: float
    ) -> float:
        """Lambda cost of `count` invocations of `seconds` each."""
        if function is None:
            return 0.0
        memory_gb = int(function.get("MemorySize", 128)) / 1024
        return count * (
            self.usd("lambda.requests") / 1e6 + memory_gb * seconds * self._gb_second(function)
        )

    def _traced(self, function: Mapping[str, Any] | None) -> bool:
        return bool(function and function.get("TracingConfig", {}).get("Mode") == "Active")

    @property
    def search_backend(self) -> str:
        """ "domain", "serverless", "s3vectors" or "none"."""
        backend = self.settings.long_term_backend
        if backend == LongTermBackend.S3VECTORS:
            return "s3vectors"
        if backend == LongTermBackend.OPENSEARCH:
            return "serverless" if self.settings.opensearch_serverless else "domain"
        return "none"

    # --- idle -------------------------------------------------------------------------------

    def unpriced_types(self) -> set[str]:
        """Resource types this module does not know: a new billable resource shows up here."""
        return self.t.types() - PRICED_ELSEWHERE - PRICED_HERE - _custom(self.t.types())

    def idle_items(self) -> list[Item]:
        """What bills with zero traffic, from the template's resources and properties."""
        items = [
            *self._domains(),
            *self._collections(),
            *self._endpoints(),
            *self._external_endpoints(),
            *self._web_acls(),
            *self._keys(),
            *self._alarms(),
            *self._dashboards(),
            *self._secrets(),
            *self._schedules(),
            *self._snapshots(),
            *self._empty_storage(),
        ]
        for kind in sorted(self.unpriced_types()):
            self.notes.append(f"not priced: {kind} (add it to scripts/cost/estimate.py)")
        return items

    def _domains(self) -> Iterable[Item]:
        for _, props in self.t.of_type("AWS::OpenSearchService::Domain"):
            cluster = props.get("ClusterConfig", {})
            ebs = props.get("EBSOptions", {})
            domain = Domain(
                nodes=int(cluster.get("InstanceCount", 1)),
                instance_type=cluster.get("InstanceType", "r5.large.search"),
                masters=int(cluster.get("DedicatedMasterCount", 3))
                if cluster.get("DedicatedMasterEnabled")
                else 0,
                master_type=cluster.get("DedicatedMasterType", ""),
                volume_gb=int(ebs.get("VolumeSize", 10)) if ebs.get("EBSEnabled") else 0,
                volume_type=str(ebs.get("VolumeType", "gp2")),
                iops=int(ebs.get("Iops", 3000)),
            )
            yield from domain_items(domain, self.prices)

    def _collections(self) -> Iterable[Item]:
        collections = self.t.of_type("AWS::OpenSearchServerless::Collection")
        if not collections:
            return
        # Collections of one type (and encryption key) share OCUs; one group here.
        standby = any(p.get("StandbyReplicas", "ENABLED") != "DISABLED" for _, p in collections)
        minimum = self.prices.fact(
            "opensearch_serverless.min_ocu_with_standby"
            if standby
            else "opensearch_serverless.min_ocu_without_standby"
        )
        rate = self.usd("opensearch_serverless.ocu")
        kinds = sorted({str(p.get("Type", "SEARCH")) for _, p in collections})
        yield Item(
            f"OpenSearch Serverless ({minimum:g} OCU minimum, {'/'.join(kinds)}, "
            f"standby replicas {'on' if standby else 'off'})",
            minimum * rate * self.hours,
            f"{minimum:g} x ${rate}/OCU-hour x {self.hours:g} h",
        )

    def _endpoint_variants(self) -> dict[str, list[Mapping[str, Any]]]:
        """Production variants of each in-stack endpoint, by endpoint name."""
        found: dict[str, list[Mapping[str, Any]]] = {}
        for logical_id, props in self.t.of_type("AWS::SageMaker::Endpoint"):
            config_id = target(props.get("EndpointConfigName"))
            config = self.t.properties(config_id) if config_id else {}
            name = props.get("EndpointName")
            found[str(name) if isinstance(name, str) else logical_id] = list(
                config.get("ProductionVariants", [])
            )
        return found

    def _endpoints(self) -> Iterable[Item]:
        for name, variants in self._endpoint_variants().items():
            for variant in variants:
                if "ServerlessConfig" in variant:
                    memory = variant["ServerlessConfig"].get("MemorySizeInMB")
                    if "ProvisionedConcurrency" in variant["ServerlessConfig"]:
                        self.notes.append(f"not priced: provisioned concurrency of {name}")
                    yield Item(
                        f"SageMaker serverless endpoint ({name}, {memory} MB)",
                        0.0,
                        "billed per request only",
                    )
                    continue
                count = int(variant.get("InitialInstanceCount", 1))
                kind = variant["InstanceType"]
                yield self._hourly(
                    f"SageMaker endpoint {name} ({count} x {kind})",
                    count,
                    f"sagemaker.realtime.{kind}",
                )

    def _external_names(self) -> list[str]:
        """Endpoints the functions invoke that the stack does not create."""
        if TextBackend.SAGEMAKER not in (self.settings.text_backend, self.settings.embed_backend):
            return []
        in_stack = self._endpoint_variants()
        names = []
        if self.settings.text_backend == TextBackend.SAGEMAKER:
            names.append(self.settings.text_endpoint)
        if self.settings.embed_backend == EmbedBackend.SAGEMAKER:
            names.append(self.settings.embed_endpoint)
        return [n for n in dict.fromkeys(names) if n and n not in in_stack]

    def _external_endpoints(self) -> Iterable[Item]:
        kind = self.usage.external_endpoint_instance_type
        for name in self._external_names():
            yield self._hourly(
                f"SageMaker endpoint {name} (outside the stack; 1 x {kind} assumed)",
                1,
                f"sagemaker.realtime.{kind}",
            )

    def _hourly(self, what: str, count: int, price: str) -> Item:
        return hourly(self.prices, what, count, price)

    def _web_acls(self) -> Iterable[Item]:
        for _, props in self.t.of_type("AWS::WAFv2::WebACL"):
            rules = len(props.get("Rules", []))
            acl, rule = self.usd("waf.web_acl"), self.usd("waf.rule")
            yield Item(
                f"WAF web ACL and {rules} rules",
                acl + rules * rule,
                f"${acl:g} + {rules} x ${rule:g}",
            )

    def _keys(self) -> Iterable[Item]:
        keys = [p for _, p in self.t.of_type("AWS::KMS::Key") if p.get("Enabled", True)]
        if keys:
            rate = self.usd("kms.key")
            rotated = sum(1 for p in keys if p.get("EnableKeyRotation"))
            yield Item(
                f"{len(keys)} KMS customer managed key{'s' if len(keys) > 1 else ''}",
                len(keys) * rate,
                f"{len(keys)} x ${rate:g}"
                + (
                    f" (first year; {rotated} rotated yearly: +${self.usd('kms.rotation'):g} a "
                    "month after each of the first two rotations)"
                    if rotated
                    else ""
                ),
            )

    def _alarms(self) -> Iterable[Item]:
        """Metric alarms by the metrics they watch (an alarm on metric math pays for each),
        high resolution below a 60 s period; anomaly detection and composite alarms apart."""
        alarms = standard = high = anomaly = 0
        for _, props in self.t.of_type("AWS::CloudWatch::Alarm"):
            if props.get("ThresholdMetricId"):
                anomaly += 1
                continue
            if "Metrics" in props:
                stats = [m["MetricStat"] for m in props["Metrics"] if "MetricStat" in m]
                periods = [int(s.get("Period", 60)) for s in stats]
            else:
                periods = [int(props.get("Period", 60))]
            if any(period < 60 for period in periods):
                high += len(periods)
            else:
                alarms += 1
                standard += len(periods)
        if standard:
            rate = self.usd("cloudwatch.alarm_standard")
            free = min(standard, self.prices.fact("cloudwatch.free_alarm_metrics"))
            yield Item(
                f"{alarms} CloudWatch alarms"
                + (f" ({standard} metrics)" if standard != alarms else ""),
                standard * rate,
                f"{standard} x ${rate:g}",
                free_usd=free * rate,
            )
        if high:
            rate = self.usd("cloudwatch.alarm_high_resolution")
            yield Item(f"{high} CloudWatch high-resolution alarm metrics", high * rate)
        if anomaly:
            rate = self.usd("cloudwatch.alarm_anomaly")
            yield Item(f"{anomaly} CloudWatch anomaly detection alarms", anomaly * rate)
        composite = self.t.count("AWS::CloudWatch::CompositeAlarm")
        if composite:
            rate = self.usd("cloudwatch.alarm_composite")
            yield Item(f"{composite} CloudWatch composite alarms", composite * rate)

    def _dashboards(self) -> Iterable[Item]:
        count = self.t.count("AWS::CloudWatch::Dashboard")
        if count:
            rate = self.usd("cloudwatch.dashboard")
            free = min(count, self.prices.fact("cloudwatch.free_dashboards"))
            yield Item(
                f"{count} CloudWatch dashboard{'s' if count > 1 else ''}",
                count * rate,
                f"{count} x ${rate:g}",
                free_usd=free * rate,
            )

    def _secrets(self) -> Iterable[Item]:
        count = self.t.count("AWS::SecretsManager::Secret")
        if count:
            rate = self.usd("secretsmanager.secret")
            yield Item(f"{count} Secrets Manager secrets", count * rate, f"{count} x ${rate:g}")

    def _schedules(self) -> Iterable[Item]:
        """Scheduled Lambda runs: the idle sweeper's queries, invocations, logs and traces."""
        functions = dict(self.t.of_type("AWS::Lambda::Function"))
        for _, props in self.t.of_type("AWS::Events::Rule"):
            expression = props.get("ScheduleExpression")
            if not expression or props.get("State") == "DISABLED":
                continue
            runs = self.hours * MONTH_MINUTES_PER_HOUR / schedule_minutes(expression)
            events = runs * self.usd("eventbridge.scheduled_rule") / 1e6
            for rule_target in props.get("Targets", []):
                function = functions.get(target(rule_target.get("Arn")) or "")
                if function is None:
                    continue
                if not str(function.get("Handler", "")).startswith("handlers.sweep_idle."):
                    self.notes.append(f"not priced: scheduled function {function.get('Handler')}")
                    continue
                lambda_usd = self._invocations(function, runs, self.usage.sweeper_lambda_seconds)
                reads = runs * self.usage.sweeper_queries * 0.5
                dynamodb = reads * self.usd("dynamodb.read") / 1e6
                logs = (
                    runs * self.usage.sweeper_log_bytes / GB * self.usd("cloudwatch.logs_ingestion")
                )
                traces = runs * self.usd("xray.recorded") / 1e6 if self._traced(function) else 0.0
                yield Item(
                    f"idle sweeper ({expression}, {runs:,.0f} runs)",
                    lambda_usd + dynamodb + logs + traces + events,
                    f"Lambda {money(lambda_usd)}, {reads:,.0f} DynamoDB read units "
                    f"{money(dynamodb)}, logs {money(logs)}, X-Ray {money(traces)}, "
                    f"EventBridge {money(events)}",
                    free_usd=lambda_usd + logs + traces,
                )

    def _snapshots(self) -> Iterable[Item]:
        """Lambda SnapStart: a function's snapshot is cached (and billed) all month, for its one
        live version (the stack deletes a version once a newer one replaces it); each restore
        (a cold start) bills per GB on top, with the traffic."""
        cache, restore = self.usd("lambda.snapstart_cache"), self.usd("lambda.snapstart_restore")
        seconds = self.hours * 3600
        for _, props in self.t.of_type("AWS::Lambda::Function"):
            if (props.get("SnapStart") or {}).get("ApplyOn") != "PublishedVersions":
                continue
            gb = int(props.get("MemorySize", 128)) / 1024
            yield Item(
                f"SnapStart snapshot of {props.get('Handler')} ({gb:g} GB)",
                gb * seconds * cache,
                f"{gb:g} GB x {seconds:,.0f} s x ${cache}; each cold start restores it for "
                f"{money(gb * restore)}",
            )

    def _empty_storage(self) -> Iterable[Item]:
        """What bills by the stored byte or the active user: nothing while empty and unused."""
        tables = self.t.count("AWS::DynamoDB::Table")
        if tables:
            yield Item(f"DynamoDB on-demand tables ({tables})", 0.0, "storage only, $0 empty")
        if self.t.count("AWS::S3Vectors::VectorBucket"):
            indexes = self.t.count("AWS::S3Vectors::Index")
            yield Item(f"S3 vector bucket ({indexes} indexes)", 0.0, "storage only, $0 empty")
        for _, props in self.t.of_type("AWS::Cognito::UserPool"):
            tier = str(props.get("UserPoolTier", "ESSENTIALS")).title()
            yield Item(f"Cognito user pool ({tier})", 0.0, "per monthly active user, $0 with none")
        queues = self.t.count("AWS::SQS::Queue")
        if queues:
            yield Item(f"SQS queues ({queues})", 0.0, "per request, none while idle")
        topics = self.t.count("AWS::SNS::Topic")
        if topics:
            yield Item(f"SNS topics ({topics})", 0.0, "per notification")

    # --- per turn ---------------------------------------------------------------------------

    def turn_items(self, index_vectors: int) -> list[Item]:
        """What one chat turn costs on top of the idle cost, consolidation amortized."""
        u = self.usage
        s = self.settings
        items: list[Item] = []
        if self.t.count("AWS::ApiGateway::RestApi"):
            items.append(Item("API Gateway REST request", self.usd("apigateway.rest") / 1e6))
        if self.t.count("AWS::WAFv2::WebACL"):
            items.append(Item("WAF request", self.usd("waf.requests") / 1e6))
        if self.chat is not None:
            items.append(
                Item(
                    f"chat Lambda ({self.chat.get('MemorySize', 128)} MB x "
                    f"{u.chat_lambda_seconds:g} s)",
                    self._invocations(self.chat, 1, u.chat_lambda_seconds),
                )
            )
        read_units = u.chat_dynamodb_read_units
        items.append(
            Item(
                f"DynamoDB: {u.chat_dynamodb_write_units:g} write, {read_units:g} read units",
                (
                    u.chat_dynamodb_write_units * self.usd("dynamodb.write")
                    + read_units * self.usd("dynamodb.read")
                )
                / 1e6,
                "measured; stream reads by Lambda triggers are free",
            )
        )
        items.append(self._text_turn(s.prompt_token_budget, s.max_new_tokens))
        if self._model_sentiment():
            message = " ".join(["word"] * u.words_per_message)
            sentiment = self._text_turn(
                estimate_tokens(sentiment_prompt(message)), MAX_ANSWER_TOKENS
            )
            items.append(Item(f"sentiment, {sentiment.what}", sentiment.usd))
        if self.search_backend != "none" and s.auto_recall:
            items.append(self._embedding(1, u.tokens_per_message, "embedding of the message"))
            items.append(self._search(index_vectors))
        if self._traced(self.chat):
            items.append(Item("X-Ray trace", u.traces_per_turn * self.usd("xray.recorded") / 1e6))
        items.append(
            Item(
                "CloudWatch Logs ingestion",
                u.log_bytes_per_turn / GB * self.usd("cloudwatch.logs_ingestion"),
            )
        )
        items.extend(self._background())
        return items

    def _model_sentiment(self) -> bool:
        """Whether each chat turn asks the text model for its sentiment (SENTIMENT=model only;
        `auto` is VADER, in process)."""
        return self.settings.sentiment == SentimentMode.MODEL

    def _text_price(self, model_id: str) -> tuple[float, float]:
        # A cross-region inference profile bills its model's on-demand price.
        profile = inference_profile(model_id)
        model_id = profile[1] if profile else model_id
        return (
            self.usd(f"bedrock.models.{model_id}.input") / 1000,
            self.usd(f"bedrock.models.{model_id}.output") / 1000,
        )

    def _text_turn(self, prompt: int, answer: int) -> Item:
        s = self.settings
        if s.text_backend == TextBackend.BEDROCK:
            per_in, per_out = self._text_price(s.text_model_id)
            return Item(
                f"{s.text_model_id}: {prompt} in, {answer} out tokens",
                prompt * per_in + answer * per_out,
            )
        if s.text_backend == TextBackend.SAGEMAKER:
            return Item("text model: real-time endpoint billed by the hour", 0.0)
        return Item(f"text model: {s.text_backend} (not priced)", 0.0)

    def _embedding(self, requests: float, tokens: float, what: str) -> Item:
        s = self.settings
        if s.embed_backend == EmbedBackend.BEDROCK:
            rate = self.usd(f"bedrock.models.{s.embed_model_id}.input") / 1000
            return Item(f"{what}: {tokens:,.0f} tokens ({s.embed_model_id})", tokens * rate)
        if s.embed_backend == EmbedBackend.SAGEMAKER:
            variants = self._endpoint_variants().get(s.embed_endpoint, [])
            serverless = [v["ServerlessConfig"] for v in variants if "ServerlessConfig" in v]
            if serverless:
                memory_gb = int(serverless[0].get("MemorySizeInMB", 1024)) / 1024
                seconds = requests * self.usage.embedding_request_seconds
                return Item(
                    f"{what}: serverless endpoint, {requests:g} x "
                    f"{self.usage.embedding_request_seconds:g} s x {memory_gb:g} GB",
                    memory_gb * seconds * self.usd("sagemaker.serverless.compute"),
                )
            return Item(f"{what}: real-time endpoint billed by the hour", 0.0)
        return Item(f"{what}: {s.embed_backend} (not priced)", 0.0)

    def _search(self, index_vectors: int) -> Item:
        """One query of a user's own index of `index_vectors` entries."""
        u = self.usage
        if self.search_backend != "s3vectors":
            return Item("search: capacity billed by the hour (above)", 0.0)
        size = self.vector_query_bytes
        first = min(index_vectors, int(self.prices.fact("s3vectors.query_tier_vectors")))
        rest = index_vectors - first
        data = (
            first * size * self.usd("s3vectors.query_data_first_tier")
            + rest * size * self.usd("s3vectors.query_data_next_tier")
        ) / TB
        calls = u.searches_per_turn * self.usd("s3vectors.query_requests") / 1e6
        return Item(
            f"S3 Vectors query of a user's index of {index_vectors:,} vectors ({size:,} B each)",
            calls + u.searches_per_turn * data,
            f"call {money(calls)} + data {money(u.searches_per_turn * data)}",
        )

    @property
    def vector_query_bytes(self) -> int:
        """What S3 Vectors counts per vector of an index in a query: the float32 vector, its
        filterable metadata and its key."""
        u = self.usage
        return self.settings.embed_dimension * 4 + u.vector_metadata_bytes + u.vector_key_bytes

    @property
    def vector_stored_bytes(self) -> int:
        return self.vector_query_bytes + self.usage.vector_text_bytes

    def _background(self) -> list[Item]:
        """Compaction and consolidation of a session, per turn."""
        u, s = self.usage, self.settings
        turns = u.turns_per_session
        runs = compactions(turns, s.compact_after_turns, CompactionPolicy().keep_recent_turns)
        consolidate = self.t.function("consolidate")
        compact = self.t.function("compact")
        lambda_usd = self._invocations(
            consolidate, 1, u.consolidation_lambda_seconds
        ) + self._invocations(compact, runs, u.compaction_lambda_seconds)
        dynamodb = (
            u.consolidation_read_units * self.usd("dynamodb.read")
            + u.consolidation_write_units * self.usd("dynamodb.write")
        ) / 1e6
        items = [
            Item(f"consolidation and {runs} compactions: Lambda", lambda_usd / turns),
            Item("consolidation: DynamoDB", dynamodb / turns),
        ]
        if s.text_backend == TextBackend.BEDROCK:
            per_in, per_out = self._text_price(s.text_model_id)
            tokens_in = (
                u.model_reads_per_turn * turns * u.tokens_per_turn
                + (runs + 1) * u.summary_output_tokens
            )
            tokens_out = (runs + 1) * u.summary_output_tokens + (
                u.extraction_calls_per_session * u.extraction_output_tokens
            )
            items.append(
                Item(
                    f"consolidation: {tokens_in:,.0f} in, {tokens_out:,.0f} out tokens a session",
                    (tokens_in * per_in + tokens_out * per_out) / turns,
                )
            )
        if self.search_backend != "none":
            vectors = u.vectors_per_session
            # Windows of two turns (each turn in two), the summary, the opening, the records.
            records = max(vectors - (turns - 1) - 2, 0.0)
            tokens = (
                2 * turns * u.tokens_per_turn
                + u.summary_output_tokens
                + (records + 1) * u.tokens_per_message
            )
            embedding = self._embedding(
                math.ceil(vectors / 32), tokens, f"consolidation: {vectors:g} embeddings"
            )
            items.append(Item(embedding.what, embedding.usd / turns, embedding.how))
            if self.search_backend == "s3vectors":
                put = vectors * self.vector_stored_bytes / GB * self.usd("s3vectors.put")
                items.append(Item(f"consolidation: {vectors:g} vectors put", put / turns))
        if self._traced(consolidate):
            traces = (1 + runs) * self.usd("xray.recorded") / 1e6
            items.append(Item("consolidation: X-Ray traces", traces / turns))
        return items

    # --- a month at a number of users -------------------------------------------------------

    def month(self, users: int, idle_usd: float) -> list[Item]:
        """Idle cost, `users` daily users' turns, their sign-ins (Cognito) and what they
        stored. Each query reads one user's own index (its size does not grow with users)."""
        u = self.usage
        turns = round(users * u.turns_per_user_month)
        per_turn = self.turn_items(u.user_index_vectors)
        search = sum(i.usd for i in per_turn if i.what.startswith("S3 Vectors query"))
        total = sum(i.usd for i in per_turn)
        items = [
            Item("idle", idle_usd),
            Item(f"{turns:,} turns", turns * (total - search)),
            Item("S3 Vectors queries", turns * search),
            *self._cognito(users),
            *self._stored(users),
        ]
        return [i for i in items if i.usd > 0]

    def _cognito(self, users: int) -> list[Item]:
        pools = self.t.of_type("AWS::Cognito::UserPool")
        if not pools:
            return []
        tier = str(pools[0][1].get("UserPoolTier", "ESSENTIALS")).lower()
        free = 0.0 if tier == "plus" else self.prices.fact("cognito.free_mau_lite_essentials")
        billed = max(0.0, users * self.usage.users_per_daily_user - free)
        rate = self.usd(f"cognito.{tier}")
        return [Item(f"Cognito {tier.title()}", billed * rate, f"{billed:,.0f} MAU x ${rate:g}")]

    def _stored(self, users: int) -> list[Item]:
        u = self.usage
        turns_stored = users * u.turns_per_user_month * u.months_of_history
        tables = [p for _, p in self.t.of_type("AWS::DynamoDB::Table")]
        pitr = any(
            p.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled")
            for p in tables
        )
        table_gb = turns_stored * u.turn_item_bytes / GB
        rate = self.usd("dynamodb.storage") + (self.usd("dynamodb.pitr") if pitr else 0.0)
        items = [Item(f"DynamoDB storage ({table_gb:,.1f} GB)", table_gb * rate)]
        vector_gb = u.index_vectors(users) * self.vector_stored_bytes / GB
        if self.search_backend == "s3vectors":
            rate = self.usd("s3vectors.storage")
            items.append(Item(f"S3 Vectors storage ({vector_gb:,.1f} GB)", vector_gb * rate))
        elif self.search_backend == "serverless":
            rate = self.usd("opensearch_serverless.storage")
            items.append(
                Item(f"OpenSearch Serverless storage ({vector_gb:,.1f} GB)", vector_gb * rate)
            )
        return items

    # --- all of it --------------------------------------------------------------------------

    def estimate(self, name: str) -> Estimate:
        """Idle items, items per turn (at the reference index size), months at user counts."""
        idle = self.idle_items()
        turn = self.turn_items(self.usage.user_index_vectors)
        idle_usd = sum(item.usd for item in idle)
        monthly = {users: self.month(users, idle_usd) for users in self.usage.user_counts}
        if self.search_backend == "domain":
            self.notes.append(
                "the OpenSearch domain is priced at its template's size at every user count "
                "(a development stage's is a trial's unless `dailyUsers` is set: one "
                "t3.small.search; production's holds a million daily users' year); a load's "
                "domain is what `-c chatmemory:dailyUsers=<n>` synthesizes, and its synth says "
                "what it costs a month (the capacity model below says when a domain is full)"
            )
        if TextBackend.SAGEMAKER in (self.settings.text_backend, self.settings.embed_backend):
            self.notes.append(
                "SageMaker endpoints are priced at their configured instances at every user "
                "count; a load beyond what those instances answer needs more of them"
            )
        return Estimate(name, idle, turn, monthly, self.notes)


def _custom(types: set[str]) -> set[str]:
    """Custom resources bill only through the functions that serve them (at deploy time)."""
    return {kind for kind in types if kind.startswith("Custom::")}


def price(
    name: str, body: Mapping[str, Any], prices: PriceTable, usage: Usage | None = None
) -> Estimate:
    """Price one synthesized template."""
    return Pricer(body, prices, usage or Usage()).estimate(name)
