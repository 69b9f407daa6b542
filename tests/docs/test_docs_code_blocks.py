"""Every code block of the docs runs as written (README.md, docs/, and what docs/ includes: the
client's README, bench/RESULTS.md), so that the docs cannot rot: Python blocks are executed and
shell blocks run with bash, each against a local mode of its own (the test's, put where the
block says http://127.0.0.1:8000, as `make run` would serve it), and what a block says it prints
(`# -> ...`) must be printed. JSON blocks are parsed and what they name is checked.

A block that cannot run here says so on the line before it (`<!-- not run: why -->`): deploying
to AWS or calling a deployed stack needs an account and credentials, which the suite never has;
`make run` serves until stopped and `make test` is this suite. Output, layouts and diagrams are
`text` or `mermaid` blocks; a block without a language fails (see tests/docs/blocks.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess

# Imported here, not first inside an example: importing it installs a warnings filter of its
# own, which would then override the test's filter of its deprecation warning.
import langchain_core.runnables.history  # noqa: F401
import pytest

from tests.docs.blocks import LOCAL, ROOT, Block, every_block, expected_output

BLOCKS = every_block()
PYTHON = [b for b in BLOCKS if b.kind == "run-python"]
SHELL = [b for b in BLOCKS if b.kind == "run-shell"]
JSON = [b for b in BLOCKS if b.kind == "checked"]


KINDS = {"run-python", "run-shell", "checked", "not-run", "not-code"}


def test_every_block_is_run_checked_or_says_why_not() -> None:
    unknown = [f"{b.name}: {b.kind}" for b in BLOCKS if b.kind not in KINDS]
    assert not unknown, "give each a language, or `<!-- not run: why -->` on the line before"
    # The client's examples (its README and the integrations page) are among the ones run.
    client_readme = ROOT / "clients" / "python" / "README.md"
    assert len([b for b in PYTHON if b.path == client_readme]) >= 3
    assert len([b for b in PYTHON if b.path == ROOT / "docs" / "client" / "index.md"]) >= 3
    assert len(SHELL) >= 3, "the local-mode shell blocks of getting-started.md and operations.md"


def test_blocks_not_run_are_only_the_ones_that_cannot_run_here() -> None:
    """A block is kept from running only for a reason that holds for the suite: AWS, a server
    that never stops, the suite itself, an install into the running environment."""
    for block in BLOCKS:
        if block.kind == "not-run":
            assert len(block.not_run or "") > 20, f"{block.name}: say why it is not run"


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
@pytest.mark.parametrize("block", PYTHON, ids=[b.name for b in PYTHON])
def test_a_python_block_runs_against_local_mode(
    running_world, block: Block, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A block may set process-wide switches (the client's README makes LangChain's listeners
    # raise): they are put back after it, so that no later test runs under them.
    from langchain_core.tracers.root_listeners import AsyncRootListenersTracer, RootListenersTracer

    for tracer in (RootListenersTracer, AsyncRootListenersTracer):
        monkeypatch.setattr(tracer, "raise_error", tracer.raise_error)
    code = compile(block.code.replace(LOCAL, running_world.url.rstrip("/")), block.name, "exec")
    exec(code, {"__name__": "docs_example"})
    printed = capsys.readouterr().out
    for expected in expected_output(block):
        assert expected in printed, f"{block.name} should print {expected!r}:\n{printed}"


@pytest.mark.integration
@pytest.mark.parametrize("block", SHELL, ids=[b.name for b in SHELL])
def test_a_shell_block_runs_against_local_mode(running_world, block: Block) -> None:
    """Run from the project's root with bash (`-euo pipefail`: every command must succeed), in
    the environment local mode's handlers have (its tables and index, not .local/)."""
    for tool in ("curl", "jq"):
        if tool in block.code and shutil.which(tool) is None:
            pytest.skip(f"{block.name} uses {tool}, which is not installed")
    script = block.code.replace(LOCAL, running_world.url.rstrip("/"))
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{block.name} failed:\n{done.stdout}\n{done.stderr}"
    printed = [line.strip() for line in done.stdout.splitlines()]
    for expected in expected_output(block):
        assert expected.strip() in printed, f"{block.name} should print {expected!r}:\n{printed}"


@pytest.mark.parametrize("block", JSON, ids=[b.name for b in JSON])
def test_a_json_block_parses_and_names_what_exists(block: Block) -> None:
    document = json.loads(block.code)
    for server in document.get("mcpServers", {}).values():
        args = server["args"]
        module = args[args.index("-m") + 1]
        assert importlib.util.find_spec(module) is not None, f"{block.name}: no module {module}"
        assert "CHATMEMORY_URL" in server["env"]
