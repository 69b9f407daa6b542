"""Operators' tools on a deployed stack: ingest verified documents and redrive FAILED sessions.

Both are Lambda functions invoked with `aws lambda invoke`: they run with roles of the stack
that fine-grained access control maps (an operator's own credentials have no OpenSearch role),
each allowed exactly what its code calls.
"""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk.aws_lambda import Function
from constructs import Construct

from chatmemory import schema
from stacks.consolidation import grant_consolidation
from stacks.functions import LambdaFactory
from stacks.long_term import LongTermMemory
from stacks.models import Models
from stacks.storage import Storage

# Lambda's maximum: a synchronous invocation waits for the answer (the CLI needs
# --cli-read-timeout 900 for that).
OPERATOR_TIMEOUT = Duration.minutes(15)


class OperatorTools(Construct):
    """`Ingest` (event: {"documents": [{"doc_id", "text", "title"?, "source"?}]}) and `Redrive`
    (event: {}); their names are stack outputs."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        factory: LambdaFactory,
        storage: Storage,
        models: Models,
        long_term: LongTermMemory,
    ) -> None:
        super().__init__(scope, construct_id)
        self.ingest = factory.function(
            self,
            "Ingest",
            handler="handlers.ingest.handler",
            description="Operator tool: chunk, embed and index verified documents",
            environment={**models.environment, **long_term.environment},
            timeout=OPERATOR_TIMEOUT,
            memory_mb=1024,
        )
        # services/background/ingest.py: embed the passages, bulk-index them, drop a shortened
        # document's old tail by query. Verified passages only; no table, no text model.
        models.grant_embed(self.ingest)
        long_term.grant(
            self.ingest, bulk=[schema.PASSAGE_INDEX], delete_by_query=[schema.PASSAGE_INDEX]
        )

        self.redrive = factory.function(
            self,
            "Redrive",
            handler="handlers.redrive.handler",
            description="Operator tool: consolidate FAILED sessions again, restart stalled forgets",
            environment={
                **storage.environment(
                    storage.sessions, storage.conversations, storage.users, storage.records
                ),
                **models.environment,
                **long_term.environment,
            },
            timeout=OPERATOR_TIMEOUT,
            memory_mb=1024,
        )
        # What consolidation calls (the profile's records included), plus the scan that finds
        # FAILED sessions (failed_sessions), and for forgets whose purge record was
        # dead-lettered: the scan that finds them (pending_user_purges), the read and the touch
        # that restarts their purge.
        grant_consolidation(self.redrive, storage, models, long_term)
        storage.grant(self.redrive, storage.sessions, "dynamodb:Scan")
        storage.grant(
            self.redrive, storage.users, "dynamodb:Scan", "dynamodb:GetItem", "dynamodb:UpdateItem"
        )

        # S3 Vectors with the shared memory index of a deployment made before per-user indexes,
        # or a domain with memory indexes of a previous generation (searchMigrateMemoryFrom):
        # the migration (services/background/migrate.py) lists it page by page, checks each
        # page's owner keys current (the users table) and its sessions and records live (one
        # BatchGetItem over both tables), copies the live entries into their owners' indexes
        # (creating them on S3 Vectors) and deletes a copy whose session or record died
        # meanwhile. A domain's old index may have kept no vectors: those are embedded again.
        self.migrate: Function | None = None
        if long_term.shared_index:
            domain = bool(long_term.previous_memory_indexes)
            self.migrate = factory.function(
                self,
                "MigrateMemory",
                handler="handlers.migrate_memory.handler",
                description=(
                    "Operator tool: copy the previous memory indexes into the current ones"
                    if domain
                    else "Operator tool: copy the shared memory index into per-user indexes"
                ),
                environment={
                    **storage.environment(storage.sessions, storage.records, storage.users),
                    **long_term.environment,
                    **(models.environment if domain else {}),
                },
                timeout=OPERATOR_TIMEOUT,
                memory_mb=1024,
            )
            if domain:
                models.grant_embed(self.migrate)
            long_term.grant_shared_listing(self.migrate)
            long_term.grant(
                self.migrate,
                bulk=[schema.MEMORY_INDEX],
                delete_by_query=[schema.MEMORY_INDEX],
                erase_owner=True,  # a forgotten owner key's copy, erased whole
            )
            storage.grant(self.migrate, storage.sessions, "dynamodb:BatchGetItem")
            storage.grant(self.migrate, storage.records, "dynamodb:BatchGetItem")
            # Whether an owner key is still its caller's (not one a forget left behind).
            storage.grant(self.migrate, storage.users, "dynamodb:GetItem")

        stack = Stack.of(self)
        if self.migrate is not None:
            CfnOutput(
                stack,
                "MigrateMemoryFunctionName",
                value=self.migrate.function_name,
                description="make migrate-memory STACK=<stack> (invokes it until done)",
            )
        CfnOutput(
            stack,
            "IngestFunctionName",
            value=self.ingest.function_name,
            description="aws lambda invoke --function-name <this> --payload file://docs.json",
        )
        CfnOutput(
            stack,
            "RedriveFunctionName",
            value=self.redrive.function_name,
            description="aws lambda invoke --function-name <this> out.json",
        )
