"""The tables CDK deploys are exactly the ones schema.py defines."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from chatmemory import schema
from stacks.app_stack import ChatMemoryStack


@pytest.fixture(scope="module")
def template() -> Template:
    app = cdk.App()
    return Template.from_stack(ChatMemoryStack(app, "Test"))


@pytest.mark.parametrize("spec", schema.TABLES, ids=lambda s: s.logical_name)
def test_table_keys_indexes_and_stream_come_from_the_schema(template: Template, spec) -> None:
    key_schema = [{"AttributeName": spec.partition_key.name, "KeyType": "HASH"}]
    if spec.sort_key:
        key_schema.append({"AttributeName": spec.sort_key.name, "KeyType": "RANGE"})
    indexes = (
        Match.array_with(
            [
                Match.object_like({"IndexName": index.name, "Projection": Match.object_like(
                    {"ProjectionType": index.projection_type})})
                for index in spec.indexes
            ]
        )
        if spec.indexes
        else Match.absent()
    )
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": key_schema,
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            "SSESpecification": {"SSEEnabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "GlobalSecondaryIndexes": indexes,
        },
    )


def test_turns_can_expire_through_ttl(template: Template) -> None:
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": Match.array_with([{"AttributeName": "turn", "KeyType": "RANGE"}]),
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
        },
    )
