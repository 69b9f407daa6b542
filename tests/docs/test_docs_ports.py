"""The getting-started page's three lines for other ports (`make run`, `make chat`, `make docs`)
do what they say, run as written through make, with free ports in place of 9000-9002: the page
and API answer on the first, DynamoDB Local on the second, the terminal chat reaches the API
with `--url`, and the docs site answers on its `--dev-addr`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from local.dynamodb_local import answers, free_port
from tests.docs.blocks import DOCS, ROOT, every_block

pytestmark = pytest.mark.integration

PAGE = DOCS / "getting-started.md"
DOC_PORTS = {"api": "9000", "dynamodb": "9001", "docs": "9002"}
_MAKE_LINE = re.compile(r'^make (?P<target>[a-z]+) ARGS="(?P<args>[^"]*)"')


def documented_lines() -> dict[str, str]:
    """Target -> its line (without the comment) of the block that shows other ports."""
    [block] = [
        b
        for b in every_block()
        if b.path == PAGE and 'make run ARGS="--port' in b.code and "make docs ARGS" in b.code
    ]
    lines = {}
    for line in block.code.splitlines():
        found = _MAKE_LINE.match(line.strip())
        if found:
            lines[found["target"]] = found.group(0)
    return lines


def with_ports(line: str, ports: dict[str, int]) -> str:
    for name, documented in DOC_PORTS.items():
        line = re.sub(rf"\b{documented}\b", str(ports[name]), line)
    return line


def _env() -> dict[str, str]:
    """This environment without an outer make's flags (a make inside `make test`)."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


@contextmanager
def serving(line: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`line` run by bash in the project's folder, in its own process group, stopped after."""
    with open(log, "wb") as out:
        process = subprocess.Popen(
            ["bash", "-c", line],
            cwd=ROOT,
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            yield process
        finally:
            # Ctrl-C: local mode stops in order, and `mkdocs serve` removes the site it built in
            # a temporary folder (SIGTERM left one behind each run).
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


def wait_for(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float) -> str:
    """The page at `url` once it answers 200, while `process` runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"it stopped:\n{log.read_text()}"
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return str(answer.read().decode())
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {timeout:.0f} s:\n{log.read_text()}")


def test_the_documented_lines_for_other_ports_work_as_written(tmp_path: Path) -> None:
    lines = documented_lines()
    assert set(lines) == {"run", "chat", "docs"}, lines
    ports = {name: free_port() for name in DOC_PORTS}
    # A state folder of its own, as the page says a second `make run` needs (a developer's own
    # `make run` may be using .local/), and one handler process (two load the embedding model
    # twice, which this test does not need).
    extra = f" --state-dir {tmp_path / 'state'} --workers 1"
    run = with_ports(lines["run"], ports)[:-1] + extra + '"'
    with serving(run, tmp_path / "run.log") as local_mode:
        page = wait_for(f"http://127.0.0.1:{ports['api']}/", local_mode, tmp_path / "run.log", 300)
        assert "Chat memory" in page
        assert answers(f"http://127.0.0.1:{ports['dynamodb']}")

        chat = subprocess.run(
            ["bash", "-c", with_ports(lines["chat"], ports)],
            cwd=ROOT,
            env=_env(),
            input="/sessions\n/quit\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert chat.returncode == 0, chat.stdout + chat.stderr
        assert "new session" in chat.stdout, chat.stdout

    with serving(with_ports(lines["docs"], ports), tmp_path / "docs.log") as docs:
        site = wait_for(f"http://127.0.0.1:{ports['docs']}/", docs, tmp_path / "docs.log", 300)
        assert "Chat memory on AWS" in site
