"""`python -m scripts.capacity [--docs] [--measure]`: print the capacity model's tables (and a JSON
line); --docs also rewrites the capacity section of docs/cost.md and bench/RESULTS.md; --measure
first runs the AWS contract scenario to write scripts/capacity/measured.json again (needs Java
for DynamoDB Local; a few minutes)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from scripts.capacity.report import json_line, section, write


def measure() -> None:
    env = {**os.environ, "CHATMEMORY_RECORD_CAPACITY": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "tests/aws/test_contract.py"]
    subprocess.run(command, check=True, env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.capacity", description=__doc__)
    parser.add_argument("--docs", action="store_true", help="rewrite the docs' capacity section")
    parser.add_argument("--measure", action="store_true", help="measure the scenario again")
    args = parser.parse_args(argv)
    if args.measure:
        measure()
    print(section())
    if args.docs:
        for page in write():
            print(f"rewrote {page}", file=sys.stderr)
    print(json_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
