"""Shared fixtures: fake AWS credentials, moto tables built from schema.py, a Lambda context, and
(for the integration and fault tiers) DynamoDB Local with local mode around it."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from chatmemory import schema, wiring

if TYPE_CHECKING:
    from local.dynamodb_local import DynamoDBLocal
    from tests.infra.synth import Synth
    from tests.integration.helpers import World


# Test folders that synthesize the app (tests/conftest.py's synth_cache, one per process).
_SYNTHESIZING = ("tests/infra/", "tests/aws/")


# The modules that take a minute or more (docs/tests.md), longest first. Two workers start with
# them, so the run does not end with one worker alone in a long module while the other waits.
_LONGEST_FIRST = (
    "tests/faults/test_api_properties.py",
    "tests/aws/",  # tests/aws and tests/infra are one unit of work: the synth
    "tests/infra/",
    "tests/faults/test_api_fuzz.py",
    "tests/client/test_langgraph_store.py",
    "tests/integration/test_long_sessions.py",
    "tests/faults/test_concurrency.py",
    "tests/client/test_langgraph_checkpointer.py",
    "tests/client/test_langgraph_store_ported.py",
    "tests/docs/test_docs_code_blocks.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test has a node id of its own. pytest-xdist tells tests apart by node id: tests that
    share one run as one on its workers, and the rest are lost without a word (schemathesis's
    `parametrize()` gave its 33 operations one id on pytest 9; 32 never ran under two workers).
    On a worker, the longest modules come first (_LONGEST_FIRST); the scheduler keeps that order."""
    seen: dict[str, int] = {}
    for item in items:
        seen[item.nodeid] = seen.get(item.nodeid, 0) + 1
    shared = sorted(nodeid for nodeid, count in seen.items() if count > 1)
    if shared:
        raise pytest.UsageError(f"tests that share a node id: {shared}")
    if os.environ.get("PYTEST_XDIST_WORKER"):

        def rank(item: pytest.Item) -> int:
            return next(
                (i for i, prefix in enumerate(_LONGEST_FIRST) if item.nodeid.startswith(prefix)),
                len(_LONGEST_FIRST),
            )

        items.sort(key=rank)  # stable: the rest keep pytest's order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Two pytest-xdist workers with `--dist loadfile` (see PYTEST_WORKERS in the Makefile): a
    module's tests run on one worker, so its module fixtures (a local mode, a browser) start
    once; here the modules that synthesize the app also share one worker, so each configuration
    is synthesized once. (`--dist loadgroup` cannot do this: xdist 3.8 marks a group by renaming
    the test's node id, which pytest 9 ignores.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    # The work goes out in the order collected (see pytest_collection_modifyitems), not by
    # number of tests, which put a 3-minute module of few tests last.
    config.option.loadscopereorder = False

    class ModulesAndSynth(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "synth" if module.startswith(_SYNTHESIZING) else module

    return ModulesAndSynth(config, log)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test can reach AWS: fake credentials, a fixed region, moto-friendly settings."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        # moto misses DynamoDB Streams calls when botocore resolves account-based endpoints.
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "POWERTOOLS_METRICS_NAMESPACE": "ChatMemoryTest",
        "POWERTOOLS_DEV": "0",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    wiring.clear_caches()
    yield
    wiring.clear_caches()


@pytest.fixture
def dynamodb(aws_env: None):
    """A moto DynamoDB with the project's tables, created from the schema module."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for spec in schema.TABLES:
            client.create_table(**spec.create_table_kwargs(spec.logical_name))
        yield client


class FakeLambdaContext:
    function_name = "chat-api"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:chat-api"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


# --- DynamoDB Local and local mode (tests/integration, tests/faults) -----------------------------


@pytest.fixture(scope="session")
def dynamodb_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DynamoDBLocal]:
    """A real DynamoDB Local, started once per test run on a free port with a temporary
    database (skips the test when Java or the jar is missing)."""
    from local.dynamodb_local import DynamoDBLocal, LocalModeError, find_jar, find_java, free_port

    try:
        find_java()
        find_jar()
    except LocalModeError as error:
        pytest.skip(f"this test needs DynamoDB Local: {error}")
    root = tmp_path_factory.mktemp("dynamodb-local")
    # Its database in memory-backed storage where the machine has it: every write of DynamoDB
    # Local is a SQLite write, and on disk they made the DynamoDB Local tests two to three times
    # slower. The same server and flags otherwise (-dbPath, -sharedDb).
    shm = Path("/dev/shm")
    data = Path(tempfile.mkdtemp(prefix="dynamodb-local-", dir=shm)) if _writable(shm) else None
    server = DynamoDBLocal(data or root / "data", free_port(), log_path=root / "dynamodb.log")
    try:
        server.start()
        yield server
    finally:
        server.stop()
        if data is not None:
            shutil.rmtree(data, ignore_errors=True)


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


@pytest.fixture
def world(
    dynamodb_local: DynamoDBLocal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    """Local mode on fresh tables with the poller stepped by the test (`world.poller.drain()`)."""
    from tests.integration.helpers import local_world

    yield from local_world(dynamodb_local, tmp_path, monkeypatch)


@pytest.fixture
def running_world(
    dynamodb_local: DynamoDBLocal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    """Local mode as `make run` has it: the poller polls in its own thread."""
    from tests.integration.helpers import local_world

    yield from local_world(dynamodb_local, tmp_path, monkeypatch, poll_in_background=True)


# --- a headless browser (the web page's tests, the docs site's) ---------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium driven by Playwright, one per test module; skips without one."""
    from scripts.browser import find_browser

    if find_browser() is None:
        pytest.skip("no Chromium found: `sudo apt-get install chromium` or set CHROMIUM_PATH")
    from playwright.sync_api import sync_playwright

    from local.browser import launch_chromium

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


# --- synthesized apps (tests/infra, tests/aws) ----------------------------------------------


@pytest.fixture(scope="session")
def synth_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Synth]]:
    """Synthesize each distinct configuration once per test session."""
    from tests.infra.synth import synthesize

    cache: dict[str, Synth] = {}

    def get(**settings: Any) -> Synth:
        key = json.dumps(settings, sort_keys=True)
        if key not in cache:
            outdir = tmp_path_factory.mktemp("cdk.out")
            cache[key] = synthesize(outdir, **settings)
        return cache[key]

    yield get
