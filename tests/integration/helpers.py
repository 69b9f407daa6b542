"""Helpers of the integration tier: local mode around fresh tables, and HTTP calls to it."""

from __future__ import annotations

import http.client
import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from chatmemory import schema, wiring
from local.dynamodb_local import DynamoDBLocal
from local.poller import StreamPoller, default_poller
from local.stack import LocalStack, StackOptions

_tables = itertools.count(1)


class Api:
    """HTTP calls to the gateway, as a given local user."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80

    def call(
        self, method: str, path: str, body: Any = None, *, user: str | None = None
    ) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if user:
            headers["X-User-Id"] = user
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        payload = None if body is None else json.dumps(body)
        connection.request(method, path, body=payload, headers=headers)
        answer = connection.getresponse()
        text = answer.read().decode()
        connection.close()
        return answer.status, json.loads(text) if text else None

    def ok(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        status, data = self.call(method, path, body, **kwargs)
        assert 200 <= status < 300, (status, data)
        return data

    def new_session(self, name: str, **kwargs: Any) -> str:
        return self.ok("POST", "/sessions", {"name": name}, **kwargs)["session"]["session_id"]

    def say(self, session_id: str, content: str, **kwargs: Any) -> dict[str, Any]:
        return self.ok("POST", f"/sessions/{session_id}/messages", {"content": content}, **kwargs)[
            "turn"
        ]

    def end(self, session_id: str, **kwargs: Any) -> dict[str, Any]:
        return self.ok("POST", f"/sessions/{session_id}/end", **kwargs)["session"]

    def status(self, session_id: str, **kwargs: Any) -> str:
        return self.ok("GET", f"/sessions/{session_id}", **kwargs)["session"]["status"]


@dataclass
class World:
    stack: LocalStack
    api: Api
    state_dir: Path
    endpoint: str

    @property
    def poller(self) -> StreamPoller:
        assert self.stack.poller is not None
        return self.stack.poller

    @property
    def url(self) -> str:
        assert self.stack.gateway is not None
        return self.stack.gateway.url

    def new_poller(self, **options: Any) -> StreamPoller:
        """Another poller on the same checkpoint and dead-letter files (a restart)."""
        return default_poller(
            wiring.settings(),
            checkpoint_path=self.stack.paths["checkpoints"],
            dead_letter_path=self.stack.paths["dead_letters"],
            **options,
        )

    def dynamodb(self) -> Any:
        return wiring.aws_client("dynamodb", self.endpoint)


def local_world(
    dynamodb_local: DynamoDBLocal,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    poll_in_background: bool = False,
    workers: int = 1,
) -> Iterator[World]:
    """Fresh tables (their own names) and an index file for one test; gateway on a free port.
    The environment is left as it was found: what local mode's own code sets in it (`make
    ingest` applies the local defaults, POWERTOOLS_METRICS_DISABLED among them) goes too."""
    environment = dict(os.environ)
    prefix = f"it{next(_tables)}"
    for key, value in {
        schema.ENV_DYNAMODB_ENDPOINT: dynamodb_local.endpoint,
        schema.ENV_SESSIONS_TABLE: f"{prefix}-sessions",
        schema.ENV_CONVERSATIONS_TABLE: f"{prefix}-conversations",
        schema.ENV_USERS_TABLE: f"{prefix}-users",
        schema.ENV_RECORDS_TABLE: f"{prefix}-records",
        schema.ENV_CHECKPOINTS_TABLE: f"{prefix}-checkpoints",
        schema.ENV_PURGE_SETTLE_SECONDS: "0",
        schema.ENV_LONG_TERM_BACKEND: "embedded",
        schema.ENV_MEMORY_PATH: str(tmp_path / "memory.sqlite3"),
        schema.ENV_EVENTS_FILE: str(tmp_path / "events.jsonl"),
        schema.ENV_TEXT_BACKEND: "offline",
        schema.ENV_EMBED_BACKEND: "offline",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }.items():
        monkeypatch.setenv(key, value)
    options = StackOptions(
        state_dir=tmp_path,
        api_port=0,
        external_dynamodb=dynamodb_local.endpoint,
        sweep_seconds=0,
        poll_interval=0.05,
        retry_backoff_seconds=0.0,
        poll_in_background=poll_in_background,
        warm_models=False,
        workers=workers,
    )
    stack = LocalStack(options, echo=lambda _: None).start()
    assert stack.gateway is not None
    try:
        yield World(stack, Api(stack.gateway.url), tmp_path, dynamodb_local.endpoint)
    finally:
        stack.stop()
        os.environ.clear()
        os.environ.update(environment)


def page_problems(page: Any) -> list[str]:
    """The errors a page logs from now on, but a refused or cut off request's "Failed to load
    resource" (Chromium logs it for the API's or the network's answer, not the page's fault)."""
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on(
        "console",
        lambda m: (
            problems.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None
        ),
    )
    return problems


def page_outbox(page: Any) -> dict[str, list[dict[str, Any]]]:
    """The page's outbox as kept in localStorage: {session_id: [entry, ...]}."""
    kept: dict[str, list[dict[str, Any]]] = {}
    for text in page.evaluate(
        "Object.keys(localStorage).filter((k) => k.startsWith('chatmemory.outbox|'))"
        ".map((k) => localStorage.getItem(k))"
    ):
        kept.update(json.loads(text))
    return kept


def stacking_local_world(
    dynamodb_local: DynamoDBLocal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    """Local mode where a message waits 3 s for more (STACK_WAIT_MS) and two worker processes
    serve requests at once, as two Lambda instances: stacked messages, as a test can order
    them by what it observes."""
    monkeypatch.setenv(schema.ENV_STACK_WAIT_MS, "3000")
    yield from local_world(dynamodb_local, tmp_path, monkeypatch, workers=2)
