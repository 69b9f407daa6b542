"""What the Lambda handlers load at import (their cold start): never the X-Ray SDK (in
maintenance; Lambda active tracing records the segments) nor OpenTelemetry (an ADOT layer
instruments from outside) nor VADER's lexicon (loaded by the first message that needs a
sentiment), and every handler module imports on its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = sorted(
    p.stem for p in (ROOT / "lambdas" / "handlers").glob("*.py") if p.stem != "__init__"
)


def test_no_handler_loads_the_xray_sdk_or_opentelemetry_at_import() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {HANDLERS!r}:\n"
        "    importlib.import_module('handlers.' + name)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT / 'lambdas'}", "AWS_DEFAULT_REGION": "us-east-1"},
    )
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "handlers" in loaded and len(HANDLERS) >= 8
    assert not loaded & {"aws_xray_sdk", "opentelemetry", "boto3", "vaderSentiment"}, loaded
