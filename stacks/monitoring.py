"""Operations: alarms to an encrypted SNS topic, and one CloudWatch dashboard. Both are fixed
monthly costs (CloudWatch bills each alarm and each dashboard beyond a free tier, KMS the topic's
key), so each can be switched off: chatmemory:alarms=false, chatmemory:dashboard=false."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Aws, Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_opensearchservice as opensearch
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from chatmemory import schema
from stacks.config import Config

_PERIOD = Duration.minutes(5)


# Functions whose caller sees their errors: the operator tools (docs/operations.md) and the
# index setup (CloudFormation fails the deployment). No alarms of their own.
CALLER_WATCHED = frozenset({"Ingest", "Redrive", "IndexSetup", "MigrateMemory"})


class Monitoring(Construct):
    """Alarms on everything that loses or delays memories, and a dashboard of the same.

    Without alarms (chatmemory:alarms=false) there is nothing to notify: no topic and no key
    either (`topic` and `key` are None)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: Config,
        functions: Mapping[str, lambda_.Function],
        stream_functions: Mapping[str, lambda_.Function],
        dead_letter_queues: Mapping[str, sqs.Queue],
        api: apigw.RestApi,
        domain: opensearch.Domain | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarms: list[cloudwatch.Alarm] = []
        self.key: kms.Key | None = None
        self.topic: sns.Topic | None = None
        self.dashboard: cloudwatch.Dashboard | None = None
        if config.alarms:
            self._alarms(
                config=config,
                functions=functions,
                stream_functions=stream_functions,
                dead_letter_queues=dead_letter_queues,
                api=api,
                domain=domain,
            )
        if config.dashboard:
            self.dashboard = self._dashboard(
                functions=functions,
                stream_functions=stream_functions,
                dead_letter_queues=dead_letter_queues,
                api=api,
            )

    def _alarms(
        self,
        *,
        config: Config,
        functions: Mapping[str, lambda_.Function],
        stream_functions: Mapping[str, lambda_.Function],
        dead_letter_queues: Mapping[str, sqs.Queue],
        api: apigw.RestApi,
        domain: opensearch.Domain | None,
    ) -> None:
        if config.alarm_topic_key:
            # CloudWatch can publish to an encrypted topic only with a key whose policy lets it
            # use the key; the AWS managed SNS key cannot be given that, so the topic has its own.
            self.key = kms.Key(
                self,
                "TopicKey",
                description="Encrypts the chat memory alarm topic",
                enable_key_rotation=True,
            )
            # Only for this account's alarms (the confused-deputy conditions of AWS's
            # documented key policy for alarms publishing to an encrypted topic).
            self.key.add_to_resource_policy(
                iam.PolicyStatement(
                    principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                    actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                    resources=["*"],
                    conditions={
                        "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                        "ArnLike": {
                            "aws:SourceArn": f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:"
                            f"{Aws.ACCOUNT_ID}:alarm:*"
                        },
                    },
                )
            )
        self.topic = topic = sns.Topic(self, "AlarmTopic", master_key=self.key, enforce_ssl=True)
        if config.alarm_email:
            topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        action = actions.SnsAction(topic)

        def alarm(construct_id: str, metric: cloudwatch.IMetric, description: str, **kw) -> None:
            created = cloudwatch.Alarm(
                self,
                construct_id,
                metric=metric,
                alarm_description=description,
                evaluation_periods=kw.pop("evaluation_periods", 1),
                threshold=kw.pop("threshold", 1),
                comparison_operator=kw.pop(
                    "comparison_operator",
                    cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                ),
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                **kw,
            )
            created.add_alarm_action(action)
            self.alarms.append(created)

        for name, queue in dead_letter_queues.items():
            alarm(
                f"{name}Messages",
                queue.metric_approximate_number_of_messages_visible(
                    period=_PERIOD, statistic="Maximum"
                ),
                f"Stream batches gave up after retries and landed in {name}: "
                "inspect the records (see the docs' Operations page, docs/operations.md).",
            )
        for name, function in stream_functions.items():
            alarm(
                f"{name}IteratorAge",
                function.metric("IteratorAge", period=_PERIOD, statistic="Maximum"),
                f"{name} is falling behind its stream (records older than "
                f"{config.iterator_age_alarm_seconds} s).",
                threshold=config.iterator_age_alarm_seconds * 1000,
                evaluation_periods=2,
            )
        # Each alarm is a monthly fee ($0.10), so each must say something no other one does.
        # Errors of the functions that run by themselves (the chat, the stream functions, the
        # sweeper); the others answer their caller with the error.
        # Throttles of the chat function only: a throttled stream function shows as its
        # iterator's age, a throttled sweep is made up by the next one.
        for name, function in functions.items():
            if name in CALLER_WATCHED:
                continue
            alarm(
                f"{name}Errors",
                function.metric_errors(period=_PERIOD, statistic="Sum"),
                f"{name} Lambda invocations failed.",
            )
        # Consolidation falling behind, whatever the cause (a model quota too small, records
        # that expired, a stuck run): the sweeper reports how long the oldest session ENDED and
        # not yet consolidated has waited; a missing report (no sweep) is not data.
        alarm(
            "UnconsolidatedAge",
            cloudwatch.Metric(
                namespace=schema.METRICS_NAMESPACE,
                metric_name=schema.OLDEST_UNCONSOLIDATED_METRIC,
                dimensions_map={"service": schema.SWEEPER_SERVICE},
                period=Duration.minutes(max(config.sweep_minutes, 5)),
                statistic="Maximum",
            ),
            f"A session ended {config.unconsolidated_alarm_hours} h ago or more is still not "
            "consolidated: consolidation is falling behind (see docs/operations.md).",
            threshold=config.unconsolidated_alarm_hours * 3600,
        )
        alarm(
            "ChatThrottles",
            functions["Chat"].metric_throttles(period=_PERIOD, statistic="Sum"),
            "Chat Lambda invocations were throttled (concurrency limit): callers got errors.",
        )
        # The deployed stage's own metrics (ApiName and Stage dimensions): the API's name alone
        # also counts every other stage and API of that name in the account.
        alarm(
            "Api5xx",
            api.deployment_stage.metric_server_error(period=_PERIOD, statistic="Sum"),
            "The chat API answered with 5xx errors.",
        )
        if domain is not None:
            alarm(
                "SearchClusterRed",
                domain.metric_cluster_status_red(period=Duration.minutes(1), statistic="Maximum"),
                "The long-term memory domain has unassigned primary shards.",
            )
            alarm(
                "SearchWritesBlocked",
                domain.metric_cluster_index_writes_blocked(period=_PERIOD, statistic="Maximum"),
                "The long-term memory domain blocks writes (storage or memory pressure).",
            )
            alarm(
                "SearchFreeStorage",
                domain.metric_free_storage_space(period=_PERIOD, statistic="Minimum"),
                "Less than 20% of the long-term memory domain's storage is free.",
                threshold=config.search_volume_gb * 1024 * 0.2,
                comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            )

    def _dashboard(
        self,
        *,
        functions: Mapping[str, lambda_.Function],
        stream_functions: Mapping[str, lambda_.Function],
        dead_letter_queues: Mapping[str, sqs.Queue],
        api: apigw.RestApi,
    ) -> cloudwatch.Dashboard:
        status = (
            [[cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms), width=24)]]
            if self.alarms
            else []
        )
        return cloudwatch.Dashboard(
            self,
            "Dashboard",
            default_interval=Duration.hours(3),
            widgets=[
                [
                    cloudwatch.GraphWidget(
                        title="API requests and errors",
                        left=[api.deployment_stage.metric_count(period=_PERIOD, statistic="Sum")],
                        right=[
                            api.deployment_stage.metric_client_error(
                                period=_PERIOD, statistic="Sum"
                            ),
                            api.deployment_stage.metric_server_error(
                                period=_PERIOD, statistic="Sum"
                            ),
                        ],
                    ),
                    cloudwatch.GraphWidget(
                        title="API latency (p50, p99)",
                        left=[
                            api.deployment_stage.metric_latency(period=_PERIOD, statistic="p50"),
                            api.deployment_stage.metric_latency(period=_PERIOD, statistic="p99"),
                        ],
                    ),
                ],
                [
                    cloudwatch.GraphWidget(
                        title="Lambda errors",
                        left=[
                            f.metric_errors(period=_PERIOD, statistic="Sum", label=name)
                            for name, f in functions.items()
                        ],
                    ),
                    cloudwatch.GraphWidget(
                        title="Lambda duration (p99)",
                        left=[
                            f.metric_duration(period=_PERIOD, statistic="p99", label=name)
                            for name, f in functions.items()
                        ],
                    ),
                ],
                [
                    cloudwatch.GraphWidget(
                        title="Stream iterator age (max, ms)",
                        left=[
                            f.metric("IteratorAge", period=_PERIOD, statistic="Maximum", label=n)
                            for n, f in stream_functions.items()
                        ],
                    ),
                    cloudwatch.GraphWidget(
                        title="Dead-letter queue depth",
                        left=[
                            q.metric_approximate_number_of_messages_visible(
                                period=_PERIOD, statistic="Maximum", label=name
                            )
                            for name, q in dead_letter_queues.items()
                        ],
                    ),
                ],
                *status,
            ],
        )
