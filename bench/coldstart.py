"""Cold start counted whole: init + first invocation of each Lambda handler, as whole processes,
against `import boto3` plus one DynamoDB client (what any Python Lambda of this app pays first).

Each sample is a fresh `python -I` process (no PYTHON* variables, no user site, no warm imports)
with a clean environment holding only what a deployed function has: a region, credentials and
the settings of the deployed configuration shape (`--shape`, see SHAPES). What is timed:

- wall: the whole process, from the parent's `subprocess.run` to its exit (interpreter start-up
  included, on both sides of the ratio);
- in-process: from the handler's import to its answer, and the import alone (the function's
  init: in a Lambda environment, which these processes are, a handler module ends by building
  what its invocations use, with collection paused; see lambdas/handlers/__init__.py);
- CPU to the answer: the process's CPU time (user + system, `time.process_time()`) when the
  answer is there, interpreter start-up included and its exit left out. The whole process's
  CPU also counts the interpreter's exit, whose garbage collection passes over every object
  still alive (a third of a chat sample's CPU here); a Lambda environment is frozen after its
  answer and never pays that exit on a cold start, so both ratios are given.

The first invocation is real, over HTTP, with nothing stubbed inside the measured process:
- chat_api: POST /sessions/{id}/messages, a chat message to a session made beforehand (in
  another process, untimed): DynamoDB reads and writes, auto-recall's embedding and vector
  query, the answer from the text model, the sentiment (VADER). Auto-recall's small-talk vectors
  are cached in DynamoDB by the first cold start ever (an uncounted sample), and each of their
  copies then written from the first, so the counted ones read them (and an endpoint's embed
  one phrasing to check them), as a deployed function's later cold starts do;
- chat_routes: the same function whose first request is not a message (POST /sessions, a new
  session): the message path's init, then the Powertools routes imported for the request;
- the stream and scheduled handlers: their dependencies built (every client and adapter their
  work needs) and one invocation with nothing to do (an empty batch or sweep), which is as far
  as an invocation goes without its records; index_setup and redrive build theirs only.
DynamoDB is DynamoDB Local (a JVM process of its own), and the other services are a tiny
stdlib HTTP server in this (parent) process answering with canned JSON; the functions reach
them through botocore's `AWS_ENDPOINT_URL_<SERVICE>` variables, so their clients are created
exactly as in AWS. The local round trips are counted (against the handler: the baseline makes
no call). Samples are taken in rounds (baseline, handler, and with --before the same handler
from another checkout), and each ratio is the median of the rounds' own ratios, so load that
changes meanwhile (2 shared cores) moves both sides of it. `python -X importtime` splits one
import into self time per top-level package (`handlers`' own includes building the clients and
adapters at the end of init).

    python -m bench.coldstart [--runs 7] [--shape serverless|endpoints] [--before DIR]
        [--without-bytecode] [--instructions] [--floor] [--snapstart] [--json]
    python -m bench.coldstart --phases [--runs 2] [--shape ...] [--json]

`--floor` adds a row per handler: its clients and AWS calls (recorded from one of its samples)
made by bare boto3 with nothing else imported, the least any Python function doing the same
AWS work pays. `--snapstart` adds a row per handler: its first invocation in an environment
restored from a snapshot taken after its init, as with Lambda SnapStart (emulated by fork;
the restore itself is Lambda's and not counted). `--phases` splits the chat API's cold start
into its imports, its init and its first message, in instructions.

`--instructions` runs every process under valgrind's callgrind and compares the instructions
each executes to its answer (the process ends with `os._exit` right after it, as a Lambda is
frozen then): user-space work only, and the same count for the same work whatever else the
machine runs (within 0.3% between runs of the same code here, where CPU times differ by up to a
third), so a handful of rounds settle what timing needs many for. About 40 times slower.

`--without-bytecode` adds a tree that compiles the project's modules in every process, as
Lambda's read-only /var/task did before the asset shipped its own bytecode.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import math
import os
import pickle
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from chatmemory.schema import FUNCTION_ENVIRONMENT

ROOT = Path(__file__).resolve().parent.parent
HANDLERS = (
    "chat_api",
    "chat_routes",
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
USER = "bench-user"

# The deployed configuration shapes (stacks/config.py PROFILE_DEFAULTS): the serverless profile
# (Bedrock, S3 Vectors) and the default profile's models ("endpoints": JumpStart FLAN-T5 and
# GPT-J on SageMaker) with S3 Vectors, since an OpenSearch domain's client insists on TLS,
# which the local stand-in does not speak.
SHAPES: dict[str, dict[str, str]] = {
    "serverless": {
        "TEXT_BACKEND": "bedrock",
        "EMBED_BACKEND": "bedrock",
        "TEXT_MODEL_ID": "us.amazon.nova-micro-v1:0",
        "EMBED_MODEL_ID": "amazon.titan-embed-text-v2:0",
        "EMBED_DIMENSION": "1024",
        "LONG_TERM_BACKEND": "s3vectors",
        "VECTOR_BUCKET_NAME": "bench-vectors",
        "EVENT_BUS_NAME": "bench-bus",
    },
    "endpoints": {
        "TEXT_BACKEND": "sagemaker",
        "EMBED_BACKEND": "sagemaker",
        "TEXT_ENDPOINT": "jumpstart-dft-hf-text2text-flan-t5-xl",
        "TEXT_FORMAT": "jumpstart-flan-t5",
        "EMBED_ENDPOINT": "jumpstart-dft-hf-textembedding-gpt-j-6b-fp16",
        "EMBED_FORMAT": "jumpstart-gpt-j",
        "EMBED_DIMENSION": "1024",
        "LONG_TERM_BACKEND": "s3vectors",
        "VECTOR_BUCKET_NAME": "bench-vectors",
        "EVENT_BUS_NAME": "bench-bus",
    },
}

# --- the stand-in for the model and vector services -------------------------------------------


def _unit(dimension: int) -> list[float]:
    return [1.0 / math.sqrt(dimension)] * dimension


class _Canned(BaseHTTPRequestHandler):
    """Bedrock runtime, SageMaker runtime, S3 Vectors and EventBridge, in shape only."""

    dimension = 1024
    seen: Counter[str] = Counter()  # requests per path, to say what the first requests did

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        path = self.path
        self.seen[re.sub(r"/model/[^/]+/", "/model/{id}/", path)] += 1
        answer: Any = {}
        if path.endswith("/converse"):
            # The sentiment prompt gets a label, as the model gives one (VADER, the fallback
            # for a malformed answer, would otherwise load in every chat sample).
            text = "neutral 0" if "Classify the sentiment" in json.dumps(body) else "Noted."
            answer = {
                "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12},
                "metrics": {"latencyMs": 1},
            }
        elif path.startswith("/model/") and path.endswith("/invoke"):
            answer = {"embedding": _unit(self.dimension), "inputTextTokenCount": 3}
        elif path.endswith("/invocations"):
            if "text_inputs" in body and isinstance(body["text_inputs"], list):
                answer = {"embedding": [_unit(self.dimension) for _ in body["text_inputs"]]}
            else:
                # FLAN-T5 labels the sentiment prompt too (as the Converse stand-in does).
                text = "neutral 0" if "Classify the sentiment" in json.dumps(body) else "Noted."
                answer = {"generated_texts": [text]}
        elif path == "/QueryVectors":
            answer = {"vectors": [], "distanceMetric": "cosine"}
        elif self.headers.get("X-Amz-Target", "").endswith("PutEvents"):
            answer = {"FailedEntryCount": 0, "Entries": [{"EventId": "bench"}]}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def services() -> Iterator[dict[str, str]]:
    """DynamoDB Local with the project's tables, and the canned server; yields the endpoint
    variables for the measured processes."""
    import boto3

    from local.dynamodb_local import DynamoDBLocal, ensure_tables, free_port

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    canned = f"http://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as tmp, DynamoDBLocal(Path(tmp), free_port()) as ddb:
        client = boto3.client(
            "dynamodb",
            endpoint_url=ddb.endpoint,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        ensure_tables(client)
        try:
            yield {"AWS_ENDPOINT_URL": canned, "AWS_ENDPOINT_URL_DYNAMODB": ddb.endpoint}
        finally:
            server.shutdown()


def _env(shape: str, endpoints: dict[str, str]) -> dict[str, str]:
    """A clean environment, as a Lambda has: none of this shell's settings."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "POWERTOOLS_METRICS_NAMESPACE": "ChatMemory",
        # Lambda sets it in every function; the handlers read it to pause collection during
        # init (handlers/__init__.py).
        "AWS_LAMBDA_FUNCTION_NAME": "bench",
        # What the stack sets in every function (stacks/functions.py).
        **FUNCTION_ENVIRONMENT,
        **SHAPES[shape],
        **endpoints,
    }


# --- the measured processes -------------------------------------------------------------------

_PRELUDE_OF = """
import sys, time, json
started = imported = time.perf_counter()
sys.dont_write_bytecode = {read_only!r}
sys.path[:0] = [{lambdas!r}]
"""
# How every measured process ends: what it reports (`imported`, when it times an import, is
# set again after it), printed as one JSON line.
_ANSWERED = f"""
done = time.perf_counter()
heavy = [m for m in {HEAVY!r} if m in sys.modules]
print(json.dumps({{"import_ms": (imported - started) * 1000, "total_ms": (done - started) * 1000,
                  "answer_cpu_ms": time.process_time() * 1000, "heavy": heavy}}))
"""

# The tree of `--without-bytecode`: a copy of lambdas/ without __pycache__ that no process
# writes bytecode into, as Lambda's read-only /var/task was before the asset shipped its own.
NO_BYTECODE = "no pyc"
# The row of `--floor`: the handler's clients and calls made by bare boto3 (see _RECORDER).
FLOOR = "floor"


def _prelude(root: Path = ROOT, read_only: bool = False) -> str:
    return _PRELUDE_OF.format(lambdas=str(root / "lambdas"), read_only=read_only)


_PRELUDE = _prelude()

_BASELINE = (
    _PRELUDE
    + """
import boto3
imported = time.perf_counter()
boto3.client("dynamodb")
"""
    + _ANSWERED
)

_CONTEXT = """
class Context:
    function_name = "bench"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
    aws_request_id = "bench"
    def get_remaining_time_in_millis(self):
        return 29000
"""

# A stream record no trigger filter lets through (Powertools refuses an empty batch).
_SKIPPED = """
SKIPPED = {"Records": [{"eventID": "1", "eventName": "MODIFY", "eventSource": "aws:dynamodb",
    "awsRegion": "us-east-1", "dynamodb": {"Keys": {"session_id": {"S": "none"}},
    "SequenceNumber": "1", "SizeBytes": 1, "StreamViewType": "NEW_AND_OLD_IMAGES"}}]}
"""

# The first invocation of each handler (see the module docstring); `session` is chat's.
_INVOKE = {
    "chat_api": """
event = {"httpMethod": "POST", "path": "/sessions/%(session)s/messages",
         "resource": "/sessions/{session_id}/messages",
         "pathParameters": {"session_id": "%(session)s"},
         "headers": {"Content-Type": "application/json"},
         "multiValueHeaders": {"Content-Type": ["application/json"]},
         "queryStringParameters": None, "multiValueQueryStringParameters": None,
         "body": json.dumps({"content": "I moved to Lisbon last spring; what should I see?",
                             "client_message_id": "bench-1"}),
         "requestContext": {"requestId": "bench", "requestTimeEpoch": %(received)s,
                            "authorizer": {"claims": {"sub": "%(user)s"}}}}
answer = handlers.chat_api.handler(event, Context())
assert answer["statusCode"] == 200, answer
""",
    # The chat function's first request is not a message: it imports the Powertools routes.
    "chat_routes": """
event = {"httpMethod": "POST", "path": "/sessions", "resource": "/sessions",
         "headers": {"Content-Type": "application/json"},
         "multiValueHeaders": {"Content-Type": ["application/json"]},
         "queryStringParameters": None, "multiValueQueryStringParameters": None,
         "body": json.dumps({"name": "a cold start"}),
         "requestContext": {"requestId": "bench", "requestTimeEpoch": %(received)s,
                            "authorizer": {"claims": {"sub": "%(user)s"}}}}
answer = handlers.chat_api.handler(event, Context())
assert answer["statusCode"] == 201, answer
""",
    "consolidate": """
wiring.consolidation_deps()
assert handlers.consolidate.handler(SKIPPED, Context()) == {"batchItemFailures": []}
""",
    "compact": """
wiring.compaction_deps()
assert handlers.compact.handler(SKIPPED, Context()) == {"batchItemFailures": []}
""",
    "purge": """
wiring.purge_deps()
assert handlers.purge.handler(SKIPPED, Context()) == {"batchItemFailures": []}
""",
    "sweep_idle": """
handlers.sweep_idle.handler({}, Context())
""",
    "redrive": """
wiring.consolidation_deps()
""",
    "index_setup": """
wiring.long_term_index()
""",
    "ingest": """
wiring.embedder(); wiring.long_term_index()
""",
}

# A sample whose handler module is not its name: the chat function's other routes.
_MODULES = {"chat_routes": "chat_api"}

_HANDLER = """
import handlers.{module}
imported = time.perf_counter()
import warnings
warnings.simplefilter("ignore")  # "no metrics to publish"
from chatmemory import wiring
{context}
{invoke}
"""


# --snapstart: Lambda SnapStart emulated by fork. The process runs init as a SnapStart function's
# does when its version is published (AWS_LAMBDA_INITIALIZATION_TYPE=snap-start: the handler
# does its work `ahead` and registers its runtime hooks), runs the before-snapshot hooks, then
# forks: the parent (the snapshot) ends at once, and the child (an environment restored from
# it) runs the after-restore hooks and the first invocation. Counted: the child's CPU, which
# starts at zero at the fork, its clock from the fork, and with --instructions its count minus
# the parent's (callgrind counts a forked child from the parent's total). Not counted: Lambda's
# restore itself (its pages are the fork's copy-on-write faults here, in the kernel).
SNAP = "snap"
SNAP_START_ENV = {"AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}
_RESTORED = """
import os, snapshot_restore_py
for hook, args, kwargs in reversed(snapshot_restore_py.get_before_snapshot()):
    hook(*args, **kwargs)
sys.stdout.flush()
if os.fork():
    os._exit(0)
started = imported = time.perf_counter()
for hook, args, kwargs in snapshot_restore_py.get_after_restore():
    hook(*args, **kwargs)
"""


def _code(
    module: str,
    session: str = "",
    root: Path = ROOT,
    read_only: bool = False,
    instructions: bool = False,
    snapstart: bool = False,
) -> str:
    """A sample's code; with `snapstart`, forked between init and the first invocation."""
    # Under callgrind a request takes about 40 times as long on the clock, which would run the
    # deadline's logic (chatmemory/deadline.py: new model clients with shorter timeouts as the
    # gateway's 29 s run out) where a real request never goes; so there the request has no
    # gateway receipt time and the function's 15 minutes, and takes the path it takes natively.
    received = "None" if instructions else "int(time.time() * 1000)"
    invoke = _INVOKE[module] % {"session": session, "user": USER, "received": received}
    if snapstart:
        invoke = _RESTORED + invoke
    context = _CONTEXT.replace("29000", "900000") if instructions else _CONTEXT
    handler = _HANDLER.format(
        module=_MODULES.get(module, module), context=context + _SKIPPED, invoke=invoke
    )
    return _prelude(root, read_only) + handler + _ANSWERED


# --floor: the handler's AWS work done by bare boto3. A recording process (uncounted) runs the
# handler as a sample does, with botocore patched to note every client it creates and every call
# it makes; then each round runs a process that imports boto3, creates the same clients and makes
# the same calls with the same parameters (a chat sample's session id swapped for its round's
# own), and nothing else: no project code, pydantic or Powertools. What the handler costs above
# it is what the code around its calls costs; what it costs above the baseline (one client, no
# call) is the least any handler doing this work in Python with boto3 would.
_RECORDER = """
import botocore.client, botocore.session, pickle, base64
RECORDED = []
_create_client = botocore.session.Session.create_client
def _noting_client(self, service_name, *args, **kwargs):
    RECORDED.append(("client", service_name, None))
    return _create_client(self, service_name, *args, **kwargs)
botocore.session.Session.create_client = _noting_client
_make_api_call = botocore.client.BaseClient._make_api_call
def _noting_call(self, operation, params):
    RECORDED.append(("call", self.meta.service_model.service_name, (operation, params)))
    return _make_api_call(self, operation, params)
botocore.client.BaseClient._make_api_call = _noting_call
"""
_RECORDED_OUT = "\nprint('RECORDED', base64.b64encode(pickle.dumps(RECORDED)).decode())\n"

_FLOOR = """
import pickle
with open({steps!r}, "rb") as recorded:
    steps = pickle.load(recorded)
import boto3
from botocore import xform_name
from botocore.exceptions import ClientError
clients = {{}}
for kind, service, what in steps:
    if kind == "client":
        clients[service] = boto3.client(service)
        continue
    operation, params = what
    try:
        getattr(clients[service], xform_name(operation))(**params)
    except ClientError:
        pass  # as the handler may have met it (a conditional write, say)
"""


def _recorded(
    code: str, env: dict[str, str], first: str = "\nimport handlers."
) -> list[tuple[str, str, Any]]:
    """The clients and calls of one (uncounted) sample of the handler: `code`, recorded from
    its statement `first` on."""
    recording = code.replace(first, _RECORDER + first, 1)
    done = subprocess.run(
        [sys.executable, "-I", "-c", recording + _RECORDED_OUT],
        env=env,
        capture_output=True,
        text=True,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RECORDED ")]
    if done.returncode or not lines:
        raise RuntimeError(f"recording the handler's calls failed:\n{done.stderr[-3000:]}")
    steps: list[tuple[str, str, Any]] = pickle.loads(base64.b64decode(lines[-1].split()[1]))
    return steps


def _swapped(value: Any, old: str, new: str) -> Any:
    """`value` (a call's parameters) with the string `old` replaced by `new` wherever it occurs."""
    if isinstance(value, str):
        return value.replace(old, new) if old else value
    if isinstance(value, dict):
        return {_swapped(k, old, new): _swapped(v, old, new) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_swapped(v, old, new) for v in value)
    return value


def _floor_code(
    steps: list[tuple[str, str, Any]], folder: Path, recorded_session: str = "", session: str = ""
) -> str:
    """A floor process's code; its steps (too long for a command line: a vector is 1,024
    floats) are written to a file in `folder`."""
    path = folder / f"steps-{session or 'none'}.pickle"
    path.write_bytes(pickle.dumps(_swapped(steps, recorded_session, session)))
    return _PRELUDE + _FLOOR.format(steps=str(path)) + _ANSWERED


# --phases: where a chat cold start's instructions go. Each step is a process (under callgrind)
# that imports what the steps before it did and then its own, in the handler's order (the
# first imports `handlers`, which pauses collection as the handler's import does; the last two
# are the handler's import with its init, and a whole sample to its answer); a step's count is
# its process's minus the step before's. Instructions, not time: the differences of timed
# samples here are smaller than their noise.
PHASES: tuple[tuple[str, str], ...] = (
    ("interpreter", "import handlers"),
    ("boto3", "import boto3"),
    ("Powertools Logger and Metrics", "from aws_lambda_powertools import Logger, Metrics"),
    ("chatmemory.schema", "import chatmemory.schema"),
    ("chatmemory.domain", "import chatmemory.domain"),
    ("chatmemory.settings", "import chatmemory.settings"),
    ("chatmemory.wiring", "import chatmemory.wiring"),
    ("the conversation's services", "import chatmemory.services.conversation.chat"),
    ("the message route", "import handlers.messages"),
    ("handler module and init (clients)", "import handlers.chat_api"),
)


# With --phases: the dataclasses the handler's import creates, per top-level package, with the
# methods the dataclass machinery generates for them (each is source text compiled by `exec`)
# and the time spent making them (one process, timed: a share, not a count).
_DATACLASS_CENSUS = """
import collections, dataclasses
classes, methods, seconds = collections.Counter(), collections.Counter(), collections.Counter()
making = []
# (CPython 3.11 and 3.12 generate each method with _create_fn; 3.13 has no such function, and
# its methods go uncounted)
_process_class, _create_fn = dataclasses._process_class, getattr(dataclasses, "_create_fn", None)
def _counted_class(cls, *args, **kwargs):
    package = cls.__module__.split(".")[0]
    classes[package] += 1
    making.append(package)
    began = time.perf_counter()
    try:
        return _process_class(cls, *args, **kwargs)
    finally:
        seconds[package] += time.perf_counter() - began
        making.pop()
def _counted_method(*args, **kwargs):
    methods[making[-1] if making else "?"] += 1
    return _create_fn(*args, **kwargs)
dataclasses._process_class = _counted_class
if _create_fn is not None:
    dataclasses._create_fn = _counted_method
import handlers.chat_api
print(json.dumps({p: [classes[p], methods[p], seconds[p] * 1000] for p in classes}))
"""


def dataclass_census(env: dict[str, str], runs: int) -> dict[str, list[float]]:
    """Per package: dataclasses made by the chat API's import, their generated methods, and the
    median milliseconds spent making them (over `runs` processes)."""
    samples = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-I", "-c", _PRELUDE + _DATACLASS_CENSUS],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {
        package: [*counts[:2], round(statistics.median(s[package][2] for s in samples), 1)]
        for package, counts in samples[0].items()
    }


def phases(runs: int, shape: str) -> dict[str, Any]:
    """The chat API's cold start, step by step (PHASES, then its first message): each step's
    instructions (the median of `runs` rounds; they differ by well under 1%)."""
    with services() as endpoints:
        env = _env(shape, endpoints)
        chats = iter(_sessions(runs + 2, env))
        _run(_code("chat_api", next(chats)), env)  # caches the small-talk vectors
        _cache_every_copy(env)
        samples: dict[str, list[float]] = {}
        for _ in range(runs):
            code = _PRELUDE
            samples.setdefault("(baseline)", []).append(_count(_BASELINE, env))
            for name, statement in PHASES:
                code += statement + "\n"
                samples.setdefault(name, []).append(_count(code + _ANSWERED, env))
            first = _code("chat_api", next(chats), instructions=True)
            samples.setdefault("first message", []).append(_count(first, env))
        census = dataclass_census(env, max(runs, 5))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    base = medians.pop("(baseline)")
    steps, before = [], 0.0
    for name, value in medians.items():
        steps.append({"step": name, "cost": value - before, "to_here_vs_baseline": value / base})
        before = value
    return {"shape": shape, "runs": runs, "baseline": base, "steps": steps, "dataclasses": census}


def _count(code: str, env: dict[str, str]) -> float:
    return float(_run(code, env, instructions=True)["instructions"])


def _print_phases(result: dict[str, Any]) -> None:
    print(f"shape {result['shape']}, chat API cold start by step, medians of {result['runs']}")
    print(f"{'step':<44} {'M instructions':>15} {'to here x base':>15}")
    for step in result["steps"]:
        print(
            f"{step['step']:<44} {step['cost'] / 1e6:>15.0f} {step['to_here_vs_baseline']:>15.2f}"
        )
    print(f"{'(baseline: import boto3 + one client)':<44} {result['baseline'] / 1e6:>15.0f}")
    print("dataclasses made by the handler's import (classes, generated methods, ms to make):")
    for package, (classes, methods, ms) in result["dataclasses"].items():
        print(f"  {package:<28} {classes:>4} {methods:>5} {ms:>7}")


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --instructions: the process under callgrind, which counts the instructions it executes (user
# space; the same count for the same work whatever else the machine runs), ended by os._exit
# right after its answer, as a Lambda environment is frozen then and never pays the exit.
_CALLGRIND = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
_EXIT_AT_ANSWER = "\nsys.stdout.flush()\nimport os\nos._exit(0)\n"
_COLLECTED = re.compile(r"Collected : (\d+)")


def _run(code: str, env: dict[str, str], instructions: bool = False) -> dict[str, Any]:
    """One fresh process: its wall time, and its CPU time (user + system), which waiting for a
    core on a loaded machine does not inflate (the local servers' work is not in it); with
    `instructions`, the instructions it executed to its answer instead (callgrind)."""
    command = [sys.executable, "-I", "-c", code + (_EXIT_AT_ANSWER if instructions else "")]
    cpu = _cpu_of_children()
    began = time.perf_counter()
    done = subprocess.run(
        _CALLGRIND + command if instructions else command, env=env, capture_output=True, text=True
    )
    wall = (time.perf_counter() - began) * 1000
    cpu = (_cpu_of_children() - cpu) * 1000
    if done.returncode:
        raise RuntimeError(f"measured process failed:\n{done.stderr[-3000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    if instructions:
        counted = [int(count) for count in _COLLECTED.findall(done.stderr)]
        if not counted:
            raise RuntimeError(f"callgrind reported no count:\n{done.stderr[-3000:]}")
        # A process that forked (--snapstart) reports twice: the child's count includes the
        # parent's to the fork, so the child's own is the difference.
        own = counted[0] if len(counted) == 1 else max(counted) - min(counted)
        return answer | {"instructions": own}
    return answer | {"wall_ms": wall, "cpu_ms": cpu}


_SESSIONS = (
    _PRELUDE
    + _CONTEXT
    + """
import handlers.chat_api
ids = []
for n in range(%(count)d):
    event = {"httpMethod": "POST", "path": "/sessions", "resource": "/sessions",
             "headers": {"Content-Type": "application/json"},
             "multiValueHeaders": {"Content-Type": ["application/json"]},
             "queryStringParameters": None, "multiValueQueryStringParameters": None,
             "body": None,
             "requestContext": {"requestId": "bench",
                                "authorizer": {"claims": {"sub": "%(user)s"}}}}
    answer = handlers.chat_api.handler(event, Context())
    assert answer["statusCode"] == 201, (answer, handlers.chat_api.wiring.settings())
    ids.append(json.loads(answer["body"])["session"]["session_id"])
print(json.dumps(ids))
"""
)


# Every copy of the small-talk vectors written, each from the first (the project's own way: a
# process whose copy is not written reads the first and writes its own), as a deployed chat
# function's are once its first cold starts have drawn them all. A sample drawing a copy not yet
# written would otherwise pay that write (a 200 KB PutItem and the floats' encoding: 54 M
# instructions, 0.06x of the baseline), which a deployed function pays once per copy and model.
_EVERY_COPY = (
    _PRELUDE
    + """
from chatmemory import wiring
from chatmemory.adapters.dynamodb.vector_cache import COPIES, DynamoVectorCache
from chatmemory.services.longterm.auto_recall import small_talk_cache_key
cfg = wiring.settings()
key = small_talk_cache_key(wiring.embedder(cfg))
client = wiring.aws_client("dynamodb", cfg.dynamodb_endpoint)
written = [DynamoVectorCache(client, cfg.sessions_table, draw=lambda _, c=c: c).load(key)
           is not None for c in range(COPIES)]
print(json.dumps(all(written)))
"""
)


def _cache_every_copy(env: dict[str, str]) -> None:
    """After a chat sample cached the small-talk vectors: every copy of them written."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", _EVERY_COPY], env=env, capture_output=True, text=True
    )
    if done.returncode or json.loads(done.stdout.strip().splitlines()[-1]) is not True:
        raise RuntimeError(f"caching the small-talk vectors failed:\n{done.stderr[-3000:]}")


def _sessions(count: int, env: dict[str, str]) -> list[str]:
    """Sessions for the chat samples, made untimed in one process of their own."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", _SESSIONS % {"count": count, "user": USER}],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"creating sessions failed:\n{done.stderr[-3000:]}")
    ids: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return ids


def _median(samples: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(s[key] for s in samples), 1)


def import_breakdown(module: str, env: dict[str, str], top: int = 5) -> list[tuple[str, float]]:
    """Self time per top-level package while importing `module` (python -X importtime)."""
    code = _PRELUDE + f"import handlers.{_MODULES.get(module, module)}"
    done = subprocess.run(
        [sys.executable, "-I", "-X", "importtime", "-c", code],
        env=env,
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
    """The zipped Lambda asset (needs `make synth` first)."""
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


def run(
    runs: int,
    shape: str,
    handlers: tuple[str, ...] = HANDLERS,
    before: Path | None = None,
    without_bytecode: bool = False,
    instructions: bool = False,
    floor: bool = False,
    snapstart: bool = False,
) -> dict[str, Any]:
    """Per handler, `runs` rounds of: the baseline, then the handler (then the handler of the
    `before` tree, if given, and with `without_bytecode` the handler compiling the project's
    modules in every process), each a fresh process; the first round (which compiles .pyc
    files and warms DynamoDB Local) is not counted. The ratio is the median of each round's own
    ratio, so load that changes over minutes moves both of its sides. With `instructions`, each
    process runs under callgrind and what is compared is the instructions to the answer."""
    trees = {"after": ROOT} | ({"before": before} if before else {})
    with contextlib.ExitStack() as stack:
        if without_bytecode:
            copy = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            shutil.copytree(
                ROOT / "lambdas", copy / "lambdas", ignore=shutil.ignore_patterns("__pycache__")
            )
            trees[NO_BYTECODE] = copy
        return _rounds(runs, shape, handlers, trees, instructions, floor, snapstart)


def _ratio(rounds: list[dict[str, Any]], tree: str, key: str) -> float:
    """The median of the rounds' own ratios of `tree`'s `key` to the baseline's."""
    return round(statistics.median(r[tree][key] / r["base"][key] for r in rounds), 2)


def _counts(counts: list[int]) -> dict[str, Any]:
    """Instruction counts: their median in millions, and how far apart the rounds' counts are
    (% of the median)."""
    middle = statistics.median(counts)
    return {
        "instructions_m": round(middle / 1e6),
        "spread_pct": round(100 * (max(counts) - min(counts)) / middle, 2),
    }


def _measures(rounds: list[dict[str, Any]], tree: str, instructions: bool) -> dict[str, Any]:
    samples = [r[tree] for r in rounds]
    if tree == SNAP and not instructions:
        # The restored environment's own: its wall time and CPU from the fork to the answer.
        return {
            "answer_cpu_ms": _median(samples, "answer_cpu_ms"),
            "answer_cpu_vs_baseline": _ratio(rounds, tree, "answer_cpu_ms"),
            "restored_to_answer_ms": _median(samples, "total_ms"),
        }
    if instructions:
        return _counts([s["instructions"] for s in samples]) | {
            "instructions_vs_baseline": _ratio(rounds, tree, "instructions"),
            "heavy_modules": samples[0]["heavy"],
        }
    return {
        "wall_ms": _median(samples, "wall_ms"),
        "vs_baseline": _ratio(rounds, tree, "wall_ms"),
        "cpu_ms": _median(samples, "cpu_ms"),
        "cpu_vs_baseline": _ratio(rounds, tree, "cpu_ms"),
        "answer_cpu_ms": _median(samples, "answer_cpu_ms"),
        "answer_cpu_vs_baseline": _ratio(rounds, tree, "answer_cpu_ms"),
        "first_invocation_ms": _median(samples, "total_ms"),
        "import_ms": _median(samples, "import_ms"),
        "heavy_modules": samples[0]["heavy"],
    }


def _rounds(
    runs: int,
    shape: str,
    handlers: tuple[str, ...],
    trees: dict[str, Path],
    instructions: bool = False,
    floor: bool = False,
    snapstart: bool = False,
) -> dict[str, Any]:
    with services() as endpoints, tempfile.TemporaryDirectory() as folder:
        env = _env(shape, endpoints)
        # per handler: the warm-up and the recording (--floor), then each round's samples
        processes = 2 * floor + (runs + 1) * (len(trees) + floor + snapstart)
        chats = iter(_sessions(processes + 1, env) if "chat_api" in handlers else [])

        def session(module: str) -> str:
            return next(chats) if module == "chat_api" else ""

        if "chat_api" in handlers:
            # The first cold start ever caches the small-talk vectors; later ones, every copy.
            _run(_code("chat_api", session("chat_api")), env)
            _cache_every_copy(env)
        rows: dict[str, Any] = {}
        baseline: list[dict[str, Any]] = []
        for module in handlers:
            _Canned.seen.clear()
            if floor:
                _run(_code(module, session(module)), env)
                recorded_session = session(module)
                steps = _recorded(_code(module, recorded_session), env)
            rounds = []
            for _ in range(runs + 1):
                base = _run(_BASELINE, env, instructions)
                samples = {
                    name: _run(
                        _code(
                            module,
                            session(module),
                            root,
                            read_only=name == NO_BYTECODE,
                            instructions=instructions,
                        ),
                        env,
                        instructions,
                    )
                    for name, root in trees.items()
                }
                if floor:
                    code = _floor_code(steps, Path(folder), recorded_session, session(module))
                    samples[FLOOR] = _run(code, env, instructions)
                if snapstart:
                    code = _code(module, session(module), instructions=instructions, snapstart=True)
                    samples[SNAP] = _run(code, env | SNAP_START_ENV, instructions)
                rounds.append({"base": base} | samples)
            rounds = rounds[1:]
            baseline += [r["base"] for r in rounds]
            names = [*trees, *([FLOOR] if floor else []), *([SNAP] if snapstart else [])]
            row: dict[str, Any] = {name: _measures(rounds, name, instructions) for name in names}
            if floor:
                row[FLOOR]["steps"] = [
                    f"{service}.{what[0]}" if kind == "call" else f"client {service}"
                    for kind, service, what in steps
                ]
            row["after"]["dominant"] = import_breakdown(module, env)
            if not instructions:
                row["baseline_wall_ms"] = _median([r["base"] for r in rounds], "wall_ms")
            # per invocation, to the canned server (DynamoDB Local's are not counted)
            row["model_and_vector_requests"] = {
                path: round(n / processes, 1) for path, n in sorted(_Canned.seen.items())
            }
            rows[module] = row
    return {
        "shape": shape,
        "runs": runs,
        "baseline": (
            _counts([b["instructions"] for b in baseline])
            if instructions
            else {
                "wall_ms": _median(baseline, "wall_ms"),
                "cpu_ms": _median(baseline, "cpu_ms"),
                "answer_cpu_ms": _median(baseline, "answer_cpu_ms"),
                "client_ms": _median(baseline, "total_ms"),
                "import_ms": _median(baseline, "import_ms"),
            }
        ),
        "instructions": instructions,
        "handlers": rows,
        "asset": asset_size(),
        "python": sys.version.split()[0],
        "load": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="serverless")
    parser.add_argument("--handlers", default=",".join(HANDLERS), help="comma-separated")
    parser.add_argument(
        "--before", type=Path, help="another checkout whose handlers to measure in the same rounds"
    )
    parser.add_argument(
        "--without-bytecode",
        action="store_true",
        help="also measure each handler compiling the project's modules in every process",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions to the answer under callgrind instead of timing (valgrind)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also measure the handler's own clients and AWS calls made by bare boto3",
    )
    parser.add_argument(
        "--snapstart",
        action="store_true",
        help="also measure a first invocation in an environment restored from a snapshot "
        "taken after init (Lambda SnapStart, emulated by fork)",
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="instead, the chat API's cold start split into steps, in instructions (valgrind)",
    )
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    if (args.instructions or args.phases) and shutil.which("valgrind") is None:
        parser.error("--instructions and --phases need valgrind (Debian's package valgrind)")
    if args.phases:
        steps = phases(args.runs, args.shape)
        _print_phases(steps)
        if args.json:
            print(json.dumps(steps))
        return
    load_before = os.getloadavg()
    result = run(
        args.runs,
        args.shape,
        tuple(args.handlers.split(",")),
        args.before,
        args.without_bytecode,
        args.instructions,
        args.floor,
        args.snapstart,
    )
    if args.instructions:
        _print_instructions(args, result)
    else:
        _print_times(args, result)
    print(
        "load average before/after: "
        + " ".join(f"{x:.2f}" for x in load_before)
        + " / "
        + " ".join(f"{x:.2f}" for x in result["load"])
    )
    if args.json:
        print(json.dumps(result))


def _floor_note(r: dict[str, Any]) -> str:
    steps = r.get("steps", [])
    clients = sum(step.startswith("client ") for step in steps)
    return f"bare boto3: {clients} clients, {len(steps) - clients} calls"


def _trees(row: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for tree in ("before", "after", NO_BYTECODE, FLOOR, SNAP):
        if tree in row:
            yield tree, row[tree]


def _print_instructions(args: argparse.Namespace, result: dict[str, Any]) -> None:
    print(f"shape {args.shape}, instructions to the answer, medians of {args.runs} rounds")
    print(f"{'':<12} {'tree':<6} {'millions':>9} {'x base':>7} {'spread %':>9}")
    base = result["baseline"]
    print(
        f"{'(baseline)':<12} {'':<6} {base['instructions_m']:>9} {1.0:>7} "
        f"{base['spread_pct']:>9}  import boto3 + boto3.client('dynamodb')"
    )
    for name, row in result["handlers"].items():
        for tree, r in _trees(row):
            print(
                f"{name:<12} {tree:<6} {r['instructions_m']:>9} {r['instructions_vs_baseline']:>7} "
                f"{r['spread_pct']:>9}" + (f"  {_floor_note(r)}" if tree == FLOOR else "")
            )


def _print_times(args: argparse.Namespace, result: dict[str, Any]) -> None:
    base = result["baseline"]
    print(f"shape {args.shape}, medians of {args.runs} rounds of fresh processes")
    print(
        f"{'':<12} {'tree':<6} {'wall ms':>8} {'x base':>7} {'cpu ms':>7} {'x base':>7} "
        f"{'to answer':>9} {'x base':>7} {'init+1st':>9} {'init':>7}  "
        "dominant import (self ms per package)"
    )
    print(
        f"{'(baseline)':<12} {'':<6} {base['wall_ms']:>8} {1.0:>7} {base['cpu_ms']:>7} {1.0:>7} "
        f"{base['answer_cpu_ms']:>9} {1.0:>7} {base['client_ms']:>9} "
        f"{base['import_ms']:>7}  import boto3 + boto3.client('dynamodb')"
    )
    for name, row in result["handlers"].items():
        for tree, r in _trees(row):
            dominant = ", ".join(f"{p} {ms}" for p, ms in r.get("dominant", [])[:4])
            if tree == FLOOR:
                dominant = _floor_note(r)
            if tree == SNAP:
                print(
                    f"{name:<12} {tree:<6} {'':>8} {'':>7} {'':>7} {'':>7} "
                    f"{r['answer_cpu_ms']:>9} {r['answer_cpu_vs_baseline']:>7} "
                    f"{r['restored_to_answer_ms']:>9} {'':>7}  restored from a snapshot: "
                    "CPU and clock from the restore"
                )
                continue
            print(
                f"{name:<12} {tree:<6} {r['wall_ms']:>8} {r['vs_baseline']:>7} "
                f"{r['cpu_ms']:>7} {r['cpu_vs_baseline']:>7} "
                f"{r['answer_cpu_ms']:>9} {r['answer_cpu_vs_baseline']:>7} "
                f"{r['first_invocation_ms']:>9} {r['import_ms']:>7}  {dominant}"
            )


if __name__ == "__main__":
    main()
