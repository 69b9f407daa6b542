"""The default app, synthesized once per session (tests/conftest.py's synth_cache) and shared
by the modules of the infra tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.infra.synth import Synth


@pytest.fixture(scope="session")
def default(synth_cache: Callable[..., Synth]) -> Synth:
    """The app as `make synth` builds it, with every default setting."""
    return synth_cache()
