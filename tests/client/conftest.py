"""Fixtures of the client's tests: no real waiting between retries, and HTTP mocks."""

from __future__ import annotations

from collections.abc import Iterator

import chatmemory_client.client as client_module
import pytest
import responses
from responses import registries


@pytest.fixture(autouse=True)
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The client's backoff waits, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(client_module, "_sleep", slept.append)
    return slept


@pytest.fixture
def http() -> Iterator[responses.RequestsMock]:
    """Mocked HTTP answers, each to be asked for in the order it was added, all of them."""
    with responses.RequestsMock(registry=registries.OrderedRegistry) as mock:
        yield mock
