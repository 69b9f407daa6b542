"""Run the purge Lambda over what moto's sessions and users streams recorded (unit tier)."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory import schema, wiring
from chatmemory.ports import LongTermIndex, ShortTermMemory
from chatmemory.services.background.forget import PurgePolicy, Purging
from tests.fakes import FakeEmbedder
from tests.streams import StreamReader


class Purger:
    """Feeds new stream records to handlers.purge until the streams are quiet, as the event
    source mappings would (the handler applies the mappings' filters itself)."""

    def __init__(
        self,
        dynamodb: Any,
        memory: ShortTermMemory,
        index: LongTermIndex | None,
        monkeypatch: pytest.MonkeyPatch,
        context: Any,
    ) -> None:
        self._readers = [
            StreamReader(dynamodb, schema.SESSIONS.logical_name),
            StreamReader(dynamodb, schema.USERS.logical_name),
        ]
        self._context = context
        deps = Purging(memory, index, PurgePolicy(settle_seconds=0), embedder=FakeEmbedder)
        monkeypatch.setattr(wiring, "purge_deps", lambda: deps)

    def drain(self, rounds: int = 20) -> int:
        """Process records until none is new; returns how many were fed."""
        from handlers import purge

        fed = 0
        for _ in range(rounds):
            events = [reader.event() for reader in self._readers]
            if not any(event["Records"] for event in events):
                return fed
            for event in events:
                if event["Records"]:
                    fed += len(event["Records"])
                    answer = purge.handler(event, self._context)
                    assert answer == {"batchItemFailures": []}, answer
        raise AssertionError("the purge kept producing stream records")


def recalled(api: Any, user: str, query: str) -> set[str]:
    """The sessions `user` can reach with `query`: what GET /memories lists and what a /past
    turn cites (asked in a throwaway session, deleted afterwards)."""
    status, found = api.call("GET", "/memories", query={"q": query}, user=user)
    assert status == 200, found
    past = api.new_session(user=user)
    turn = api.say(past, f"/past {query}", user=user)
    cited = {s["id"] for s in turn["sources"]}
    api.call("DELETE", f"/sessions/{past}", user=user)
    return {m["session_id"] for m in found["memories"]} | cited


# The two ways alice deletes a session of hers: the session alone, or everything.
DELETES = {
    "the session": lambda api, sid: api.call("DELETE", f"/sessions/{sid}", user="alice"),
    "everything": lambda api, sid: api.call("DELETE", "/memories", user="alice"),
}
