"""`make redrive`: consolidate again every FAILED session of local mode (the same code as
`python -m scripts.redrive`). Uses the DynamoDB Local of a running `make run`, or starts one on
.local/ for the time of the command."""

from __future__ import annotations

import sys
from contextlib import ExitStack

from local.config import STATE_DIR, apply_local_defaults, state_paths
from local.dynamodb_local import DynamoDBLocal, LocalModeError, answers


def main() -> int:
    apply_local_defaults()
    from chatmemory import wiring

    endpoint = wiring.settings().dynamodb_endpoint or ""
    with ExitStack() as stack:
        if not answers(endpoint):
            if not endpoint.startswith("http://127.0.0.1:"):
                print(f"DynamoDB at {endpoint} does not answer", file=sys.stderr)
                return 1
            port = int(endpoint.rsplit(":", 1)[-1])
            paths = state_paths(STATE_DIR)
            if not paths["dynamodb"].exists():
                print("nothing to redrive: local mode has no data yet (`make run` first)")
                return 0
            try:
                server = DynamoDBLocal(
                    paths["dynamodb"], port, log_path=paths["log"], pid_path=paths["pid"]
                ).start()
            except LocalModeError as error:
                print(f"cannot start DynamoDB Local: {error}", file=sys.stderr)
                return 1
            stack.callback(server.stop)
        from scripts.redrive import main as redrive

        redrive()
    return 0


if __name__ == "__main__":
    sys.exit(main())
