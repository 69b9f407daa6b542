"""Re-run consolidation of every FAILED session (`python -m scripts.redrive`)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lambdas"))


def redrive(deps: Any, *, now: datetime) -> dict[str, str]:
    """Consolidate each FAILED session again with a fresh attempt budget."""
    from chatmemory.services.consolidation import consolidate_session

    outcomes: dict[str, str] = {}
    for session_id in deps.memory.failed_sessions():
        deps.memory.reset_consolidation(session_id)
        try:
            result = consolidate_session(
                session_id,
                memory=deps.memory,
                summarizer=deps.summarizer,
                embedder=deps.embedder,
                index=deps.index,
                policy=deps.policy,
                now=now,
            )
            outcomes[session_id] = result.outcome
        except Exception as error:  # noqa: BLE001 - reported per session, the rest go on
            outcomes[session_id] = f"error: {error}"
    return outcomes


def main() -> None:
    from chatmemory import wiring

    print(json.dumps(redrive(wiring.consolidation_deps(), now=datetime.now(UTC)), indent=2))


if __name__ == "__main__":
    main()
