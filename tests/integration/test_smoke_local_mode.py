"""`make smoke` against local mode, as the suite runs it so that it cannot rot: every check of
scripts/smoke.py passes on a running local mode (the stream poller in its own thread, as in
`make run`), and a failure prints the request that failed."""

from __future__ import annotations

from typing import Any

import pytest

from scripts import smoke

pytestmark = pytest.mark.integration


def test_every_smoke_check_passes_against_local_mode(
    running_world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code = smoke.main(["--url", running_world.url, "--wait", "60"])

    printed = capsys.readouterr().out
    assert code == 0, printed
    lines = [line for line in printed.splitlines() if line[:4] in ("PASS", "FAIL", "SKIP")]
    assert len(lines) == 13 and all(line.startswith("PASS") for line in lines), printed
    assert printed.splitlines()[-1].startswith("smoke: 13 passed, 0 failed, 0 skipped")


def test_a_failing_check_names_the_request_that_failed(
    running_world: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An import the API refuses, and a consolidation that never finishes: each check fails with
    # the request that failed or what it waited for, the checks that need it are skipped, the
    # others still run, and the exit code says so.
    from chatmemory_client import ChatMemoryClient

    monkeypatch.setattr(ChatMemoryClient, "export_session", lambda self, _: {"messages": "x"})
    monkeypatch.setattr(smoke.Run, "until", _never)
    code = smoke.main(["--url", running_world.url, "--wait", "1", "--no-ingest"])

    printed = capsys.readouterr().out
    assert code == 1
    assert "FAIL  export and import: " in printed
    assert f"request: POST {running_world.url}/sessions/import -> 400 " in printed
    assert "FAIL  end and consolidation (sessions stream): consolidation: never" in printed
    assert "SKIP  recall: needs consolidated" in printed
    assert "PASS  hand-off to a person" in printed


def _never(self: Any, what: str, probe: Any) -> Any:
    raise smoke.Failed(f"{what}: never")
