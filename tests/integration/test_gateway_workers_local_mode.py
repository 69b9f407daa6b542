"""Local mode with the chat handler in worker processes, as `make run` starts it (`--workers`):
the real handler on DynamoDB Local, several requests at once, the workers ended with the stack."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from local.stack import LocalStack
from tests.integration.helpers import Api, World

pytestmark = pytest.mark.integration


def test_the_chat_handler_serves_from_worker_processes_and_stops_with_the_stack(
    world: World,
) -> None:
    before = set(multiprocessing.active_children())
    # A second local mode on the world's tables and settings, with two handler processes that
    # load the models when they start, as make run's do: a request's 29 s (API Gateway's) are
    # counted from when a process takes it, and loading MiniLM on a busy machine took them.
    options = replace(
        world.stack.options,
        workers=2,
        state_dir=world.state_dir / "workers",
        warm_models=True,
    )
    stack = LocalStack(options, echo=lambda _: None).start()
    try:
        workers = set(multiprocessing.active_children()) - before
        assert len(workers) == 2
        assert stack.gateway is not None
        api = Api(stack.gateway.url)

        def chat(user: str) -> str:
            session_id = api.new_session(f"{user}'s garden", user=user)
            api.say(session_id, f"{user} planted basil next to the tomatoes.", user=user)
            return session_id

        users = [f"user{n}" for n in range(6)]
        with ThreadPoolExecutor(len(users)) as pool:
            sessions = dict(zip(users, pool.map(chat, users), strict=True))
    finally:
        stack.stop()
    assert [worker.pid for worker in workers if worker.is_alive()] == []
    # The same tables, read through the world's own gateway (the handler in this process).
    for user, session_id in sessions.items():
        messages = world.api.ok("GET", f"/sessions/{session_id}/messages", user=user)
        assert f"{user} planted basil" in str(messages)
