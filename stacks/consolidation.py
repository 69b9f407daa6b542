"""Stream processing: consolidation (sessions stream), rolling summaries (conversations stream)
and the scheduled idle-session sweeper."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from chatmemory import schema
from stacks import nag
from stacks.config import Config
from stacks.functions import LambdaFactory
from stacks.long_term import LongTermMemory
from stacks.models import Models
from stacks.storage import Storage

LIST_STREAMS_REASON = (
    "dynamodb:ListStreams has no resource-level permissions either (AWS requires '*'; added by "
    "CDK's grant_stream_read for the stream event source)."
)


def stream_filter(pattern: Mapping[str, Any]) -> dict[str, str]:
    """An event source mapping filter from a schema.py pattern (the same text as json.dumps)."""
    return {"pattern": json.dumps(pattern)}


class Consolidation(Construct):
    """The three background functions and the dead-letter queues of the two stream mappings."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: Config,
        factory: LambdaFactory,
        storage: Storage,
        models: Models,
        long_term: LongTermMemory,
        environment: Mapping[str, str],
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queues: dict[str, sqs.Queue] = {}

        self.consolidate = factory.function(
            self,
            "Consolidate",
            handler=schema.CONSOLIDATION_TRIGGER.handler,
            description="Sessions stream (OPEN -> ENDED): summarize, embed, index",
            environment={**environment, **models.environment, **long_term.environment},
            # A batch of sessions, each a few model calls.
            timeout=Duration.minutes(5),
            memory_mb=1024,
            wildcard_reasons=[LIST_STREAMS_REASON],
        )
        storage.sessions.grant_read_write_data(self.consolidate)
        storage.acknowledge_index_grants(self.consolidate.role)
        storage.conversations.grant_read_data(self.consolidate)
        models.grant_text(self.consolidate)
        models.grant_embed(self.consolidate)
        long_term.grant_read_write(self.consolidate, bulk=True)
        self._subscribe(
            self.consolidate,
            storage.sessions,
            "ConsolidationDlq",
            trigger=schema.CONSOLIDATION_TRIGGER,
            max_record_age=Duration.hours(config.consolidation_max_record_age_hours),
            retries=config.stream_retry_attempts,
        )

        self.compact = factory.function(
            self,
            "Compact",
            handler=schema.COMPACTION_TRIGGER.handler,
            description="Conversations stream (new turns): extend the session's rolling summary",
            environment={**environment, **models.environment},
            timeout=Duration.minutes(2),
            memory_mb=512,
            wildcard_reasons=[LIST_STREAMS_REASON],
        )
        storage.sessions.grant_read_write_data(self.compact)
        storage.acknowledge_index_grants(self.compact.role)
        storage.conversations.grant_read_data(self.compact)
        models.grant_text(self.compact)
        self._subscribe(
            self.compact,
            storage.conversations,
            "CompactionDlq",
            trigger=schema.COMPACTION_TRIGGER,
            # A summary is best effort: the next turn extends it again.
            max_record_age=Duration.hours(config.compaction_max_record_age_hours),
            retries=config.stream_retry_attempts,
        )

        self.sweep = factory.function(
            self,
            "SweepIdle",
            handler="handlers.sweep_idle.handler",
            description="Scheduled: end sessions idle too long (consolidation follows)",
            environment={
                **environment,
                schema.ENV_IDLE_MINUTES: str(config.idle_minutes),
            },
            timeout=Duration.minutes(1),
            memory_mb=256,
        )
        storage.sessions.grant_read_write_data(self.sweep)
        storage.acknowledge_index_grants(self.sweep.role)
        self.schedule = events.Rule(
            self,
            "SweepSchedule",
            description="Ends idle chat sessions",
            schedule=events.Schedule.rate(Duration.minutes(config.sweep_minutes)),
            targets=[
                targets.LambdaFunction(
                    self.sweep,
                    retry_attempts=2,
                    # A missed sweep is covered by the next one.
                    max_event_age=Duration.minutes(config.sweep_minutes),
                )
            ],
        )

    def _subscribe(
        self,
        function: lambda_.Function,
        table: dynamodb.Table,
        dlq_id: str,
        *,
        trigger: schema.StreamTrigger,
        max_record_age: Duration,
        retries: int,
    ) -> None:
        """A stream mapping that survives poison records: per-record failure reports, bisection,
        bounded retries and age, then the batch's coordinates go to an encrypted DLQ."""
        queue = sqs.Queue(
            self,
            dlq_id,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=RemovalPolicy.DESTROY,
        )
        nag.acknowledge(
            queue,
            "AwsSolutions-SQS3",
            "This queue is itself the on-failure destination of a stream mapping; a DLQ of the "
            "DLQ would only move the same records again.",
        )
        self.dead_letter_queues[dlq_id] = queue
        function.add_event_source(
            sources.DynamoEventSource(
                table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=trigger.batch_size,
                bisect_batch_on_error=True,
                report_batch_item_failures=True,
                retry_attempts=retries,
                max_record_age=max_record_age,
                parallelization_factor=1,
                on_failure=sources.SqsDlq(queue),
                filters=[stream_filter(trigger.filter)],
            )
        )
