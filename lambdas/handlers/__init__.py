"""Lambda entry points: parse the event, call one service, shape the reply.

Observability: Powertools Logger (JSON lines with the request and X-Ray trace ids) and Metrics
(EMF). Tracing needs no SDK here: Lambda active tracing (stacks/functions.py) records each
invocation's segment with its Initialization (cold start), Invocation and Overhead parts, behind
API Gateway's segment for the chat API. The X-Ray SDK (Powertools' Tracer, in maintenance since
February 2026) is not imported: it was the largest part of a handler's cold start. Nor is
OpenTelemetry: without an OpenTelemetry layer its API records nothing, and with one (ADOT) the
layer's own instrumentation of botocore and urllib3 already traces every DynamoDB, Bedrock,
SageMaker, OpenSearch and OpenAI-compatible call; a copy bundled in the asset would shadow the
layer's.
"""

import contextlib
import gc
import os
from collections.abc import Callable, Iterator

# A cold start makes a few hundred thousand objects that live as long as the environment
# (modules, classes, pydantic's validators, Powertools' routes, boto3's clients and service
# models); none of them is garbage, yet the collector walks them again and again while they are
# made (per chat cold start one full pass, 16 of the middle generation and 180 of the youngest:
# 56-79 ms of its CPU). So in a Lambda environment collection waits while a handler module is
# imported (the function's init); at its end, `init_done()` builds what every invocation needs,
# freezes all of it (no collection looks at it again) and resumes collection: the first request
# and every later one collect over their own objects only. Decided here, before any other
# import, so it reads the environment at import: the one place that does.
_IN_LAMBDA = bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))
_collection_paused = _IN_LAMBDA and gc.isenabled()
if _collection_paused:
    gc.disable()

# Lambda SnapStart (the stack's `chatSnapStart`): init runs once, when a version is published,
# and every environment of that version resumes from a snapshot taken after it. So init may do
# ahead what would otherwise fall on a first request (`ahead`), and whatever init seeded is
# shared by every environment restored from one snapshot: the random module, which draws retry
# jitter, is seeded again after each restore, so the environments do not back off in step.
# (Ids come from uuid4, which reads os.urandom at each call.) Lambda sets the variable.
SNAP_START = os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start"


def init_done(
    prepare: Callable[[], object] | None = None, *, ahead: Callable[[], object] | None = None
) -> None:
    """The last statement of every handler module. In a Lambda environment: `prepare` builds
    what every invocation uses (the clients are cached, so the first invocation finds them made
    and their modules loaded), then collection resumes with everything init made frozen. With
    SnapStart, `ahead` also runs (work that only pays when init is not on a request's path),
    and the random module is seeded again after every restore. Elsewhere (tests, local mode)
    nothing is built here."""
    global _collection_paused
    if not _collection_paused:
        return
    try:
        # A configuration that cannot be built fails the same way again in the first
        # invocation, which reports it as that handler reports errors (the chat API with a
        # JSON 500); an init that raised would answer only API Gateway's bare 502.
        for step in (prepare, ahead if SNAP_START else None):
            if step is not None:
                with contextlib.suppress(Exception):
                    step()
        if SNAP_START:
            import random

            # In every Python runtime that offers SnapStart (not bundled in the asset).
            from snapshot_restore_py import register_after_restore

            register_after_restore(random.seed)
    finally:
        _collection_paused = False
        gc.freeze()
        gc.enable()


@contextlib.contextmanager
def initializing() -> Iterator[None]:
    """Work of init's kind done later, on first use (modules and objects that live as long as
    the environment: the chat function's Powertools routes): in a Lambda environment collection
    waits meanwhile and what it made is frozen after, as at the end of init."""
    if not (_IN_LAMBDA and gc.isenabled()):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
