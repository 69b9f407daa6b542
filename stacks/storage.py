"""Short-term memory storage: the sessions and conversations tables, built from schema.py."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct, IConstruct

from chatmemory import schema
from stacks import nag

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
    """Both tables: on demand, encrypted, point-in-time recovery, streams with both images.

    Encryption uses the AWS managed key (aws/dynamodb): key use is logged in CloudTrail, nothing
    to pay or administer, and the stream consumers need no KMS grants. A customer managed key
    would add key-policy control at $1/month plus requests; nothing here needs that control.
    Production settings add deletion protection and keep the tables when the stack goes."""

    def __init__(self, scope: Construct, construct_id: str, *, production: bool = False) -> None:
        super().__init__(scope, construct_id)
        self.sessions = self._table("Sessions", schema.SESSIONS, production)
        self.conversations = self._table("Conversations", schema.CONVERSATIONS, production)

    def acknowledge_index_grants(self, scope: IConstruct | None) -> None:
        """CDK's table grants cover the table's GSIs as `<table arn>/index/*` (IAM5)."""
        if scope is None:
            return
        for table, spec in (
            (self.sessions, schema.SESSIONS),
            (self.conversations, schema.CONVERSATIONS),
        ):
            if spec.indexes:
                nag.wildcard(
                    scope,
                    nag.arn_of(table.node.default_child, "/index/*"),
                    f"CDK's table grants include the {spec.logical_name} table's global secondary "
                    f"indexes ({', '.join(i.name for i in spec.indexes)}) as '/index/*'.",
                )

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
            table.add_global_secondary_index(
                index_name=index.name,
                partition_key=_attr(index.partition_key),
                sort_key=_attr(index.sort_key),
                projection_type=_PROJECTIONS[index.projection_type],
                non_key_attributes=list(index.include) if index.include else None,
            )
        return table
