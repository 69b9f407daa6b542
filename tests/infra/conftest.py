"""Synthesized apps for the infra tests, each configuration built once per session and shared
by the modules (a synth takes seconds)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.infra.synth import Synth, synthesize


@pytest.fixture(scope="session")
def synth_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Synth]]:
    """Synthesize each distinct configuration once per test session."""
    cache: dict[str, Synth] = {}

    def get(**settings: Any) -> Synth:
        key = json.dumps(settings, sort_keys=True)
        if key not in cache:
            outdir = tmp_path_factory.mktemp("cdk.out")
            cache[key] = synthesize(outdir, **settings)
        return cache[key]

    yield get


@pytest.fixture(scope="session")
def default(synth_cache: Callable[..., Synth]) -> Synth:
    """The app as `make synth` builds it, with every default setting."""
    return synth_cache()
