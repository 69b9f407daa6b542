"""With metrics disabled (POWERTOOLS_METRICS_DISABLED, as local mode runs), the handlers print no
metrics: Powertools checks the setting only at the flush, and printed the metric set whenever one
metric reached 100 values (a raw EMF line in local mode's console every 100 stored turns)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.records_helpers import World, chat_world


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context, long_term=False)


def _metric_lines(output: str) -> list[str]:
    lines = []
    for line in output.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and "_aws" in data:
            lines.append(line)
    return lines


def _printed_after_turns(world: World, capsys: pytest.CaptureFixture[str], count: int) -> list[str]:
    """The metric lines the chat handler printed while `count` turns were stored."""
    sid = world.api.new_session()
    capsys.readouterr()
    for i in range(count):
        status, data = world.api.call("POST", f"/sessions/{sid}/turns", {"input": f"m{i}"})
        assert status == 201, data
    return _metric_lines(capsys.readouterr().out)


def test_a_hundred_and_one_turns_print_no_metrics_when_disabled(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed before (issue 46): the 100th TurnsStored value printed the metric set."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    assert _printed_after_turns(world, capsys, 101) == []


def test_metrics_are_printed_when_enabled(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    [line] = _printed_after_turns(world, capsys, 1)
    assert json.loads(line)["TurnsStored"] == [1.0]
