"""Integration tier: a real DynamoDB Local (started once per test run, on a free port, with a
temporary database), fresh tables per test, and local mode's gateway and poller around the real
handlers with the offline models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from local.dynamodb_local import DynamoDBLocal, LocalModeError, find_jar, find_java, free_port
from tests.integration.helpers import World, local_world


@pytest.fixture(scope="session")
def dynamodb_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DynamoDBLocal]:
    try:
        find_java()
        find_jar()
    except LocalModeError as error:
        pytest.skip(f"integration tier needs DynamoDB Local: {error}")
    root = tmp_path_factory.mktemp("dynamodb-local")
    server = DynamoDBLocal(root / "data", free_port(), log_path=root / "dynamodb.log")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def world(
    dynamodb_local: DynamoDBLocal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    """Local mode with the poller stepped by the test (`world.poller.drain()`)."""
    yield from local_world(dynamodb_local, tmp_path, monkeypatch)


@pytest.fixture
def running_world(
    dynamodb_local: DynamoDBLocal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    """Local mode as `make run` has it: the poller polls in its own thread."""
    yield from local_world(dynamodb_local, tmp_path, monkeypatch, poll_in_background=True)
