"""Short-term memory storage: the sessions, conversations, users, records and checkpoints tables,
built from schema.py."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from chatmemory import schema

_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
_PROJECTIONS = {
    "ALL": dynamodb.ProjectionType.ALL,
    "INCLUDE": dynamodb.ProjectionType.INCLUDE,
    "KEYS_ONLY": dynamodb.ProjectionType.KEYS_ONLY,
}


def _attr(key: schema.KeyAttr | None) -> dynamodb.Attribute | None:
    return None if key is None else dynamodb.Attribute(name=key.name, type=_TYPES[key.type])


class Storage(Construct):
    """The tables of schema.TABLES: on demand, encrypted, point-in-time recovery, streams with
    both images.

    Encryption uses the AWS managed key (aws/dynamodb): key use is logged in CloudTrail, nothing
    to pay or administer, and the stream consumers need no KMS grants. A customer managed key
    would add key-policy control at $1/month plus requests; nothing here needs that control.
    Production settings add deletion protection and keep the tables when the stack goes.

    `grant` gives a function exactly the DynamoDB actions its code calls on exactly the tables
    and indexes it uses, and `environment` the variables that name those tables."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        production: bool = False,
        records_indexes: tuple[str, ...] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        # An upgrade adds one records index per deploy (Config.records_indexes); empty: all.
        self._records_indexes = records_indexes
        self.sessions = self._table("Sessions", schema.SESSIONS, production)
        self.conversations = self._table("Conversations", schema.CONVERSATIONS, production)
        self.users = self._table("Users", schema.USERS, production)
        # The caller's profile (issue 13): facts, preferences and session summaries.
        self.records = self._table("Records", schema.RECORDS, production)
        # A LangGraph thread's checkpoints, channel values and pending writes (issue 26).
        self.checkpoints = self._table("Checkpoints", schema.CHECKPOINTS, production)
        self.specs: dict[str, schema.TableSpec] = {
            self.sessions.node.path: schema.SESSIONS,
            self.conversations.node.path: schema.CONVERSATIONS,
            self.users.node.path: schema.USERS,
            self.records.node.path: schema.RECORDS,
            self.checkpoints.node.path: schema.CHECKPOINTS,
        }

    def grant(
        self,
        function: lambda_.Function,
        table: dynamodb.Table,
        *actions: str,
        indexes: Sequence[str] = (),
    ) -> None:
        """Exactly `actions` ("dynamodb:GetItem", ...) on `table`, and its reads (Query, Scan)
        on the global secondary indexes named in `indexes` only: the ones the function's code
        queries. A grant of every index (`<table arn>/index/*`, what table.grant writes) let
        the idle sweeper read the user-sessions and hand-off indexes too, with the names,
        hand-off reasons and agents of every user."""
        if not actions or not all(a.startswith("dynamodb:") and "*" not in a for a in actions):
            raise ValueError(f"name each DynamoDB action exactly: {actions}")
        spec = self.specs[table.node.path]
        unknown = [name for name in indexes if name not in {i.name for i in spec.indexes}]
        if unknown:
            raise ValueError(f"the {spec.logical_name} table has no index {unknown}")
        function.add_to_role_policy(
            iam.PolicyStatement(actions=list(actions), resources=[table.table_arn])
        )
        if not indexes:
            return
        reads = [a for a in actions if a in ("dynamodb:Query", "dynamodb:Scan")]
        if not reads:
            raise ValueError("an index is read with dynamodb:Query or dynamodb:Scan")
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=reads,
                resources=[f"{table.table_arn}/index/{name}" for name in indexes],
            )
        )

    def environment(self, *tables: dynamodb.Table) -> dict[str, str]:
        """The schema.py variables that name `tables` (only the tables a function may use)."""
        return {self.specs[t.node.path].env_var: t.table_name for t in tables}

    def _table(self, construct_id: str, spec: schema.TableSpec, production: bool) -> dynamodb.Table:
        table = dynamodb.Table(
            self,
            construct_id,
            partition_key=_attr(spec.partition_key),
            sort_key=_attr(spec.sort_key),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            stream=dynamodb.StreamViewType(spec.stream_view_type),
            time_to_live_attribute=spec.ttl_attribute,
            deletion_protection=production,
            removal_policy=RemovalPolicy.RETAIN if production else RemovalPolicy.DESTROY,
        )
        for index in spec.indexes:
            left_out = self._records_indexes and index.name not in self._records_indexes
            if spec is schema.RECORDS and left_out:
                continue
            table.add_global_secondary_index(
                index_name=index.name,
                partition_key=_attr(index.partition_key),
                sort_key=_attr(index.sort_key),
                projection_type=_PROJECTIONS[index.projection_type],
                non_key_attributes=list(index.include) if index.include else None,
            )
        return table
