"""Re-run consolidation of every FAILED session (`python -m scripts.redrive`).

With the settings of the environment (local mode's, or a deployment's tables and index when
its variables are set); for a deployed stack, invoking its Redrive function is simpler:
`aws lambda invoke --function-name <RedriveFunctionName> out.json` (see docs/operations.md).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from chatmemory import wiring
from chatmemory.services.background.forget import rekick_user_purges


def redrive(deps: wiring.ConsolidationDeps, *, now: datetime) -> dict[str, str]:
    """Consolidate each FAILED session again with a fresh attempt budget."""
    return deps.redrive(now)


def main() -> None:
    """Redrive FAILED sessions and restart stalled purges; print what was done."""
    deps = wiring.consolidation_deps()
    report = {
        "sessions": redrive(deps, now=datetime.now(UTC)),
        "purges_restarted": rekick_user_purges(deps.memory),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
