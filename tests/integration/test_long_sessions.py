"""A long imported session on local mode (DynamoDB Local, the stream poller, the real handlers):
consolidated with a slow text model in resumable steps, each handing over to the next through
the sessions stream, as the deployed function does when short of time (issue 12)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.api_models import ImportDocument
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.conversation import sessions
from chatmemory.services.longterm.recall import RecallWeights, search_sessions
from chatmemory.services.longterm.summarize import ModelSummarizer
from local.poller import load_handler
from tests.fakes import FakeEmbedder
from tests.integration.helpers import World
from tests.unit.test_bounded_consolidation import SlowModel

pytestmark = pytest.mark.integration

TURNS = 2000


def test_a_2000_turn_import_is_consolidated_in_resumable_steps_with_a_slow_model(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = world.api
    messages = [
        {"input": f"Day {i}: Biscuit the greyhound walked by the river", "response": "Noted."}
        for i in range(TURNS)
    ]
    # The import runs in-process: over HTTP it must end within 20 s (API Gateway's 29 s less a
    # margin), which 2,000 turns on DynamoDB Local on two busy CI cores do not always manage.
    # What is tested here is the consolidation that follows.
    document = ImportDocument.model_validate({"messages": messages})
    sid = sessions.import_session(
        wiring.short_term_memory(), "local-user", document.imported(),
        limits=sessions.ImportLimits(max_seconds=600),
    ).session_id  # fmt: skip
    base = wiring.consolidation_deps()
    model = SlowModel(latency=0.05)
    deps = dataclasses.replace(
        base,
        summarizer=ModelSummarizer(model),
        embedder=FakeEmbedder(),
        # A run hands over after each block of 500 turns: four invocations for 2,000 turns.
        policy=dataclasses.replace(base.policy, block_turns=500, reserve_seconds=300),
    )
    monkeypatch.setattr(wiring, "consolidation_deps", lambda: deps)
    runs: list[str] = []
    real = load_handler("handlers.consolidate.handler")

    def consolidate(event: dict[str, Any], context: Any) -> Any:
        runs.append(event["Records"][0]["dynamodb"]["NewImage"]["status"]["S"])
        return real(event, context)

    poller = world.new_poller(handlers={"consolidate": consolidate})
    api.end(sid)
    poller.drain(timeout=600)  # four runs of a slow model, on shared cores

    assert api.status(sid) == "CONSOLIDATED"
    assert len(runs) == 4  # the end, then three handovers
    assert len(model.prompts) <= 9  # the summary, once, with bounded work
    index = EmbeddedLongTermIndex(wiring.settings().memory_path)
    keys = {r[0] for r in index._db.execute(
        "SELECT doc_key FROM docs WHERE idx = ? AND session_id = ?", (MEMORY_INDEX, sid)
    )}  # fmt: skip
    assert len(keys) == 2 + (TURNS - 1)  # summary, opening and every two-turn window, once
    found = search_sessions(
        "greyhound river", user_id="local-user", embedder=deps.embedder, index=index,
        weights=RecallWeights(), now=datetime.now(UTC), k=3,
    )  # fmt: skip
    assert [s.session_id for s in found] == [sid]
