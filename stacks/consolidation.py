"""Stream processing: consolidation (sessions stream), rolling summaries (conversations stream),
the purge (sessions, users and records streams) and the scheduled idle-session sweeper."""

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
    """The background functions (consolidation, compaction, purge, the idle sweeper) and the
    dead-letter queues of their stream mappings, one queue per mapping."""

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
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queues: dict[str, sqs.Queue] = {}
        self._config = config

        self.consolidate = factory.function(
            self,
            "Consolidate",
            handler=schema.CONSOLIDATION_TRIGGER.handler,
            description="Sessions stream (OPEN -> ENDED): summarize, embed, index",
            environment={
                **storage.environment(storage.sessions, storage.conversations, storage.records),
                **models.environment,
                **long_term.environment,
            },
            # A batch of sessions, each a few model calls.
            timeout=Duration.seconds(schema.CONSOLIDATION_TRIGGER.timeout_seconds),
            memory_mb=1024,
            wildcard_reasons=[LIST_STREAMS_REASON],
            # Bounded by the text model's quota (its background share), not by the stream's
            # shards: a throttled batch waits on its shard, and one whose record runs out of age
            # is started again by the sweeper (the session stays ENDED in its index).
            reserved_concurrency=config.consolidation_concurrency,
        )
        grant_consolidation(self.consolidate, storage, models, long_term)
        self._subscribe(
            self.consolidate,
            storage.sessions,
            "ConsolidationDlq",
            trigger=schema.CONSOLIDATION_TRIGGER,
            max_record_age=Duration.hours(config.consolidation_max_record_age_hours),
            parallelization_factor=config.consolidation_parallelization,
        )

        self.compact = factory.function(
            self,
            "Compact",
            handler=schema.COMPACTION_TRIGGER.handler,
            description="Conversations stream (new turns): extend the session's rolling summary",
            environment={
                **storage.environment(storage.sessions, storage.conversations),
                **models.environment,
            },
            timeout=Duration.seconds(schema.COMPACTION_TRIGGER.timeout_seconds),
            memory_mb=512,
            wildcard_reasons=[LIST_STREAMS_REASON],
            reserved_concurrency=config.compaction_concurrency,  # the text model's quota too
        )
        # Reads the session and the turns to fold in, then advances the summary conditionally.
        storage.grant(self.compact, storage.sessions, "dynamodb:GetItem", "dynamodb:UpdateItem")
        storage.grant(self.compact, storage.conversations, "dynamodb:Query")
        models.grant_text(self.compact)
        self._subscribe(
            self.compact,
            storage.conversations,
            "CompactionDlq",
            trigger=schema.COMPACTION_TRIGGER,
            # A summary is best effort: the next turn extends it again.
            max_record_age=Duration.hours(config.compaction_max_record_age_hours),
        )

        self.purge = factory.function(
            self,
            "Purge",
            handler=schema.SESSION_PURGE_TRIGGER.handler,
            description="Sessions, users, records streams: delete what callers deleted or forgot",
            environment={
                **storage.environment(
                    storage.sessions,
                    storage.conversations,
                    storage.users,
                    storage.records,
                    storage.checkpoints,
                ),
                # The embedding model: a session's purge writes again the entry of a record
                # that stays in the words of another session (profile.drop_session_records).
                **models.environment,
                **long_term.environment,
                schema.ENV_PURGE_SETTLE_SECONDS: str(config.purge_settle_seconds),
            },
            # A purge that runs short hands over to a next invocation; after a forget it may
            # first wait PURGE_SETTLE_SECONDS.
            timeout=Duration.seconds(schema.SESSION_PURGE_TRIGGER.timeout_seconds),
            memory_mb=512,
            wildcard_reasons=[LIST_STREAMS_REASON],
        )
        # services/background/forget.py: a session's memories, turns (Query of keys, BatchWriteItem
        # of deletes) and item; a forget marks the old owner's sessions (user index) DELETING.
        storage.grant(
            self.purge,
            storage.sessions,
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            indexes=(schema.USER_SESSIONS_INDEX.name,),  # a forget's sessions of the old owner key
        )
        storage.grant(
            self.purge, storage.conversations, "dynamodb:Query", "dynamodb:BatchWriteItem"
        )
        storage.grant(self.purge, storage.users, "dynamodb:GetItem", "dynamodb:UpdateItem")
        # A session's LangGraph checkpoints go with its turns (Query of keys, BatchWriteItem).
        storage.grant(self.purge, storage.checkpoints, "dynamodb:Query", "dynamodb:BatchWriteItem")
        # services/profile/profile.py: purge_record reads the DELETING record (GetItem) and removes
        # it while it is still that tombstone (remove_deleted_record: conditional DeleteItem); a
        # session's purge lists its owner's records (records_of_owner: Query), trims the
        # provenance of those drawn from other sessions too (save_record: conditional PutItem),
        # writes again the entries of those that change (embedded, then checked live: the
        # records' BatchGetItem) and, like a forget's purge, deletes records in batches
        # (remove_records: BatchWriteItem).
        storage.grant(
            self.purge,
            storage.records,
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:DeleteItem",
            "dynamodb:BatchWriteItem",
            "dynamodb:BatchGetItem",
        )
        models.grant_embed(self.purge)
        # A forget's purge erases the forgotten owner key's memories whole (its own index on S3
        # Vectors: services/background/forget.purge_user -> delete_user).
        long_term.grant(
            self.purge,
            bulk=[schema.MEMORY_INDEX],
            delete_by_query=[schema.MEMORY_INDEX],
            erase_owner=True,
        )
        for table, dlq_id, trigger in (
            (storage.sessions, "SessionPurgeDlq", schema.SESSION_PURGE_TRIGGER),
            (storage.users, "UserPurgeDlq", schema.USER_PURGE_TRIGGER),
            (storage.records, "RecordPurgeDlq", schema.RECORD_PURGE_TRIGGER),
        ):
            self._subscribe(
                self.purge,
                table,
                dlq_id,
                trigger=trigger,
                max_record_age=Duration.hours(config.purge_max_record_age_hours),
            )

        self.sweep = factory.function(
            self,
            "SweepIdle",
            handler="handlers.sweep_idle.handler",
            description="Scheduled: end idle sessions, retry lost consolidations, collect "
            "abandoned imports, re-kick purges",
            environment={
                **storage.environment(storage.sessions),
                schema.ENV_IDLE_MINUTES: str(config.idle_minutes),
                schema.ENV_CONSOLIDATION_RETRY_MINUTES: str(config.consolidation_retry_minutes),
                schema.ENV_CONSOLIDATION_RETRIES_PER_SWEEP: str(
                    config.consolidation_retries_per_sweep
                ),
            },
            # Every shard page by page while it has time, ending before the next sweep starts
            # (what is left, that one finds).
            timeout=Duration.seconds(sweep_timeout_seconds(config.sweep_minutes)),
            memory_mb=256,
        )
        # Reads the sparse open-sessions index, then conditional updates (GetItem explains a
        # failed one); a page of lost consolidations is read once (BatchGetItem) to start
        # again only those not started again lately.
        storage.grant(
            self.sweep,
            storage.sessions,
            "dynamodb:Query",
            "dynamodb:GetItem",
            "dynamodb:UpdateItem",
            "dynamodb:BatchGetItem",
            indexes=(schema.OPEN_SESSIONS_INDEX.name,),  # the sparse index of idle sessions only
        )
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
        parallelization_factor: int = 1,
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
                retry_attempts=self._config.stream_retry_attempts,
                max_record_age=max_record_age,
                parallelization_factor=parallelization_factor,
                on_failure=sources.SqsDlq(queue),
                filters=[stream_filter(pattern) for pattern in trigger.filters],
            )
        )


def sweep_timeout_seconds(sweep_minutes: int) -> int:
    """The sweeper's timeout: its interval less half a minute, between 1 and 15 minutes."""
    return max(60, min(sweep_minutes * 60 - 30, 900))


def grant_consolidation(
    function: lambda_.Function, storage: Storage, models: Models, long_term: LongTermMemory
) -> None:
    """What consolidating a session calls (services/background/consolidation.py): the session item
    and its turns, both models, and the memory index (bulk upsert; delete-by-query to take back what
    a session deleted meanwhile left there).

    The profile (services/profile/profile.py): remember_summary and remember_facts read a record
    (get_record: GetItem), the owner's records (records_of_owner: Query) and write them
    (put_record, save_record: conditional PutItem); a session deleted meanwhile takes its
    records along (drop_session_records -> remove_records: BatchWriteItem). After writing
    records' entries it checks the records are still live (live: BatchGetItem), and a summary
    the caller deleted meanwhile is marked deleting (mark_record_deleting: UpdateItem). A fact
    without a subject is merged with a near duplicate found by a k-NN search of the memory
    index, among the records the caller can see: which of their sessions are still visible is
    one consistent read of the sessions (visible_records -> live: BatchGetItem)."""
    storage.grant(
        function,
        storage.sessions,
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "dynamodb:BatchGetItem",
    )
    storage.grant(function, storage.conversations, "dynamodb:Query")
    storage.grant(
        function,
        storage.records,
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:BatchGetItem",
    )
    models.grant_text(function)
    models.grant_embed(function)
    long_term.grant(
        function,
        search=[schema.MEMORY_INDEX],
        bulk=[schema.MEMORY_INDEX],
        delete_by_query=[schema.MEMORY_INDEX],
    )
