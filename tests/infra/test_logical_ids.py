"""Construct ids are stable: a resource whose logical id changes is a new resource to
CloudFormation, and the old one is deleted (a user pool with its users, a table, a web ACL's
association). logical_ids.json holds every logical id (and type) the app synthesized before the
custom-resource Provider change and the split of stacks/api.py, per configuration; each must
still be there, unless it is retired below with the reason. New resources may join, and are
added once deployed (the hand-off's agents group, event bus, agent role and user policy)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.infra.synth import VARIANTS, Synth

RECORDED: dict[str, dict[str, str]] = json.loads(
    (Path(__file__).with_name("logical_ids.json")).read_text()
)
# Replaced on purpose, with why.
RETIRED = {
    # The index setup's custom resource: CloudFormation never changes a service token, so moving
    # it to the Provider framework takes a new resource (LongTermMemoryLongTermIndexes...);
    # handlers/index_setup.py answers the old one's Delete.
    "LongTermMemoryIndexesBA9CC756": "Custom::LongTermIndexes",
    # Alarms that repeated another one, each a monthly fee (stacks/monitoring.py): throttles of
    # the stream functions (their iterator's age says it) and of the sweeper (the next sweep
    # makes it up), and the errors and throttles of the functions whose caller sees their
    # errors (the operator tools, the index setup).
    **dict.fromkeys(
        [
            "MonitoringCompactThrottles6FD6833B",
            "MonitoringConsolidateThrottlesE0A1DBB3",
            "MonitoringPurgeThrottles461CAACB",
            "MonitoringSweepIdleThrottles050C171C",
            "MonitoringIndexSetupErrors3D16BA96",
            "MonitoringIndexSetupThrottles9BC3EC23",
            "MonitoringIngestErrors73C07491",
            "MonitoringIngestThrottles3FB82115",
            "MonitoringRedriveErrors9B4C663D",
            "MonitoringRedriveThrottles1C29E2EC",
        ],
        "AWS::CloudWatch::Alarm",
    ),
}
# CDK names an API deployment after a hash of the API, so that a changed API is deployed again.
RENAMED_BY_DESIGN = {"AWS::ApiGateway::Deployment"}


@pytest.mark.parametrize("variant", RECORDED)
def test_every_recorded_resource_keeps_its_logical_id_and_type(
    synth_cache: Callable[..., Synth], variant: str
) -> None:
    now = {
        logical_id: resource["Type"]
        for logical_id, resource in synth_cache(**VARIANTS[variant]).json["Resources"].items()
    }
    kept = {
        logical_id: kind
        for logical_id, kind in RECORDED[variant].items()
        if logical_id not in RETIRED and kind not in RENAMED_BY_DESIGN
    }
    lost = {logical_id: kind for logical_id, kind in kept.items() if now.get(logical_id) != kind}
    assert lost == {}
    assert not RETIRED.keys() & now.keys()


def test_the_retired_custom_resource_was_recorded_in_every_variant() -> None:
    for variant, recorded in RECORDED.items():
        assert RETIRED.items() <= recorded.items(), variant
