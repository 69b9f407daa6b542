"""The tables CDK deploys are exactly the ones schema.py defines."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match, Template

from chatmemory import schema
from tests.infra.synth import Synth


@pytest.fixture(scope="module")
def template(default: Synth) -> Template:
    return default.template


@pytest.mark.parametrize("spec", schema.TABLES, ids=lambda s: s.logical_name)
def test_table_keys_indexes_and_stream_come_from_the_schema(template: Template, spec) -> None:
    key_schema = [{"AttributeName": spec.partition_key.name, "KeyType": "HASH"}]
    if spec.sort_key:
        key_schema.append({"AttributeName": spec.sort_key.name, "KeyType": "RANGE"})
    indexes = (
        Match.array_with(
            [
                Match.object_like(
                    {
                        "IndexName": index.name,
                        "Projection": Match.object_like({"ProjectionType": index.projection_type}),
                    }
                )
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


def test_records_can_expire_through_ttl(template: Template) -> None:
    """A record stated with ttl_seconds carries expires_at: DynamoDB deletes it after expiry."""
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": Match.array_with([{"AttributeName": "record_id", "KeyType": "RANGE"}]),
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
        },
    )


def test_development_tables_can_be_deleted_with_the_stack(default: Synth) -> None:
    for table in default.resources("AWS::DynamoDB::Table").values():
        assert table["DeletionPolicy"] == "Delete"
        assert table["Properties"].get("DeletionProtectionEnabled") in (None, False)


def test_production_tables_are_protected_and_retained(synth_cache) -> None:
    prod = synth_cache(stage="prod")
    tables = prod.resources("AWS::DynamoDB::Table")
    assert len(tables) == len(schema.TABLES)
    for table in tables.values():
        assert table["DeletionPolicy"] == "Retain"
        assert table["UpdateReplacePolicy"] == "Retain"
        assert table["Properties"]["DeletionProtectionEnabled"] is True


def test_an_upgrade_adds_one_records_index_per_deploy(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """CloudFormation creates one global secondary index per table update: a deployment whose
    records table lacks both of this version's indexes deploys first with one named
    (recordsIndexes), then with all (docs/operations.md)."""
    from tests.infra.synth import synthesize

    first = schema.PROFILE_RECORDS_INDEX.name
    synth = synthesize(tmp_path_factory.mktemp("upgrade"), recordsIndexes=first)
    tables = synth.template.find_resources("AWS::DynamoDB::Table")
    [records] = [
        t
        for t in tables.values()
        if {"AttributeName": schema.RECORD_ID, "KeyType": "RANGE"} in t["Properties"]["KeySchema"]
    ]
    assert [i["IndexName"] for i in records["Properties"]["GlobalSecondaryIndexes"]] == [first]
