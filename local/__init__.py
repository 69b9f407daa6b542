"""Local mode: DynamoDB Local, a stream poller with Lambda's semantics, an API Gateway-like HTTP
gateway and a web page, all running the same handlers as AWS (`make run`)."""

import sys
from pathlib import Path

# `python -m local.run` from the project folder, with or without the Makefile's PYTHONPATH:
# the Lambda code (chatmemory, handlers) lives in lambdas/, deployed as its own asset root.
_LAMBDAS = str(Path(__file__).resolve().parent.parent / "lambdas")
if _LAMBDAS not in sys.path:
    sys.path.insert(0, _LAMBDAS)
