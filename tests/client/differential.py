"""What the differential tests against LangGraph's own savers and stores share: how many
examples and steps they run (a few in `make test`; CHATMEMORY_DIFFERENTIAL_EXAMPLES and
CHATMEMORY_DIFFERENTIAL_STEPS for more)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test


def run_machine(machine: type[RuleBasedStateMachine], *, examples: int, steps: int) -> None:
    """Run `machine` as a test, `examples` sequences of `steps` steps unless the environment
    asks for more."""
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=int(os.environ.get("CHATMEMORY_DIFFERENTIAL_EXAMPLES", examples)),
            stateful_step_count=int(os.environ.get("CHATMEMORY_DIFFERENTIAL_STEPS", steps)),
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
