"""Cold start: import time of each Lambda handler module against `import boto3` (the baseline
every Python Lambda of this app pays with its first client), the chat handler's first request
(resolver and validation set up, then its clients and adapters), the zipped asset size, and
what dominates.

Each figure is the median of fresh interpreter processes (`python -c "import handlers.x"`, the
work Lambda's init phase does), with PYTHONPATH=lambdas and the project's virtual environment
standing in for the runtime, the asset and the Powertools layer; the baseline is measured the
same way in the same run, so `chat_api_vs_boto3` compares like with like on a noisy machine.
`python -X importtime` splits one import into self time per top-level package. The asset size
needs `make synth` first.

    python -m bench.coldstart [--runs 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HANDLERS = (
    "chat_api",
    "consolidate",
    "compact",
    "purge",
    "sweep_idle",
    "redrive",
    "index_setup",
    "ingest",
)
HEAVY = ("torch", "numpy", "sentence_transformers", "opensearchpy", "boto3", "pydantic")
_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")

_IMPORT = """
import json, sys, time
started = time.perf_counter()
import {module}
imported = time.perf_counter()
heavy = [m for m in {heavy!r} if m in sys.modules]  # loaded by the import itself
resolve = setup = None
if {setup!r}:
    class Context:
        function_name = "chat-api"
        memory_limit_in_mb = 512
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:chat-api"
        aws_request_id = "bench"
    # A request the resolver answers by itself (400 from validation): its first-request set-up
    # (resolver, middleware stack, the route's validation models) without a store or model call.
    event = {{"httpMethod": "GET", "path": "/sessions", "resource": "/sessions",
             "headers": {{}}, "multiValueHeaders": {{}}, "body": None,
             "queryStringParameters": {{"limit": "0"}},
             "multiValueQueryStringParameters": {{"limit": ["0"]}},
             "requestContext": {{"requestId": "bench",
                                "authorizer": {{"claims": {{"sub": "bench"}}}}}}}}
    import warnings
    warnings.simplefilter("ignore")  # "no metrics to publish"
    assert handlers.chat_api.handler(event, Context())["statusCode"] == 400
    resolved = time.perf_counter()
    resolve = (resolved - imported) * 1000
    from chatmemory import wiring
    wiring.chat_deps()  # clients and adapters the first request builds
    setup = (time.perf_counter() - resolved) * 1000
print(json.dumps({{"import_ms": (imported - started) * 1000, "resolve_ms": resolve,
                  "setup_ms": setup, "heavy": heavy}}))
"""


def _env() -> dict[str, str]:
    """A clean environment, as a Lambda has: none of this shell's (or other benchmarks')
    settings, only what the handlers need to import and build their clients."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": f"{ROOT / 'lambdas'}{os.pathsep}{ROOT}",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
    }


def _samples(module: str, runs: int) -> list[dict[str, Any]]:
    """`runs` measurements of importing `module`, each in a fresh interpreter."""
    code = _IMPORT.format(module=module, setup=module == "handlers.chat_api", heavy=HEAVY)
    samples = []
    for _ in range(runs + 1):  # the first run compiles .pyc files; not counted
        done = subprocess.run(
            [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True
        )
        samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return samples[1:]


def time_import(module: str, runs: int) -> dict[str, Any]:
    """Median import time of `module` (a handler as "handlers.x"), with what it loads; for the
    chat handler also its first request."""
    samples = _samples(module, runs)
    row: dict[str, Any] = {
        "import_ms": round(statistics.median(s["import_ms"] for s in samples), 1),
        "heavy_modules": samples[0]["heavy"],
    }
    if samples[0]["setup_ms"] is not None:
        row["first_request_resolve_ms"] = round(
            statistics.median(s["resolve_ms"] for s in samples), 1
        )
        row["first_request_setup_ms"] = round(statistics.median(s["setup_ms"] for s in samples), 1)
    return row


def import_breakdown(module: str, top: int = 5) -> list[tuple[str, float]]:
    """Self time per top-level package while importing `module` (python -X importtime)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import handlers.{module}"],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    per_package: Counter[str] = Counter()
    for line in done.stderr.splitlines():
        match = _LINE.match(line)
        if match:
            per_package[match.group(4).split(".")[0]] += int(match.group(1))
    return [(name, round(us / 1000, 1)) for name, us in per_package.most_common(top)]


def asset_size() -> dict[str, Any] | None:
    from scripts.asset_size import measure, synthesized_assets

    assets = synthesized_assets()
    if not assets:
        return None
    size = measure(assets[0])
    return {
        "zipped_bytes": size.zipped,
        "unzipped_bytes": size.unzipped,
        "largest": [(name, round(b / 1024)) for name, b in size.largest[:4]],
    }


def run(runs: int) -> dict[str, Any]:
    # The baseline is sampled before and after the handlers, so a machine that got slower (or
    # faster) meanwhile moves both sides of the ratio.
    boto3 = _samples("boto3", runs)
    modules = {}
    for module in HANDLERS:
        row = time_import(f"handlers.{module}", runs)
        modules[module] = row | {"dominant": import_breakdown(module)}
    boto3 += _samples("boto3", runs)
    baseline = statistics.median(s["import_ms"] for s in boto3)
    return {
        "handlers": modules,
        "baseline": {"boto3": {"import_ms": round(baseline, 1)}},
        "chat_api_vs_boto3": round(modules["chat_api"]["import_ms"] / baseline, 2),
        "asset": asset_size(),
        "python": sys.version.split()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    result = run(args.runs)
    print(f"{'handler':<12} {'import ms':>10}  dominant (self ms per package)")
    print(f"{'(boto3)':<12} {result['baseline']['boto3']['import_ms']:>10}  baseline: import boto3")
    for name, row in result["handlers"].items():
        dominant = ", ".join(f"{p} {ms}" for p, ms in row["dominant"][:4])
        print(f"{name:<12} {row['import_ms']:>10}  {dominant}")
    chat = result["handlers"]["chat_api"]
    print(f"chat_api import / boto3 import: {result['chat_api_vs_boto3']}x")
    print(
        f"chat_api first request: {chat['first_request_resolve_ms']} ms to resolve (resolver, "
        f"validation), {chat['first_request_setup_ms']} ms to build its clients and adapters"
    )
    if result["asset"]:
        a = result["asset"]
        print(f"asset: {a['zipped_bytes']:,} bytes zipped, {a['unzipped_bytes']:,} unzipped")
    else:
        print("asset: run `make synth` first")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
