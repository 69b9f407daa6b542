"""/past, /verified, /memories and deletion through the chat API, with the embedded index."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.background.consolidation import ConsolidationPolicy, consolidate_session
from chatmemory.services.background.ingest import SourceDocument, ingest_documents
from chatmemory.services.conversation.chat import ChatDeps
from chatmemory.services.longterm.recall import NOTHING_REMEMBERED, NOTHING_VERIFIED
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer
from tests.purging import Purger
from tests.unit.test_chat_api import Api


class FlakyIndex(EmbeddedLongTermIndex):
    down = False

    def vector_search(self, *args: Any, **kwargs: Any):
        from chatmemory.errors import LongTermMemoryUnavailable

        if self.down:
            raise LongTermMemoryUnavailable("index down")
        return super().vector_search(*args, **kwargs)


@pytest.fixture
def setup(dynamodb, monkeypatch: pytest.MonkeyPatch, lambda_context):
    from handlers import chat_api

    index = FlakyIndex()
    embedder = FakeEmbedder()
    model = FakeGenerator(reply=lambda prompt: "grounded answer")
    deps = ChatDeps(
        memory=wiring.short_term_memory(), generator=model, embedder=embedder, long_term=index
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    return Api(chat_api.handler, lambda_context), deps, index, model


def _remember(api: Api, deps: ChatDeps, user: str, texts: list[str]) -> str:
    """A session of the user, ended and consolidated."""
    sid = api.new_session(user=user)
    for text in texts:
        api.say(sid, text, user=user)
    api.call("POST", f"/sessions/{sid}/end", user=user)
    result = consolidate_session(
        sid,
        memory=deps.memory,
        summarizer=FakeSummarizer(),
        embedder=deps.embedder,
        index=deps.long_term,
        policy=ConsolidationPolicy(),
        now=datetime.now(UTC),
    )
    assert result.outcome == "consolidated"
    return sid


def test_past_recalls_the_right_session_and_cites_it_with_its_date(setup) -> None:
    api, deps, index, model = setup
    garden = _remember(api, deps, "alice", ["I planted tomatoes and basil in my garden"])
    _remember(api, deps, "alice", ["My car needs new tyres before winter"])
    now = api.new_session(user="alice")
    turn = api.say(now, "/past what did I plant in the garden?", user="alice")
    assert turn["intent"] == "past" and turn["response"] == "grounded answer"
    assert turn["sources"][0]["id"] == garden and turn["sources"][0]["kind"] == "session"
    assert turn["sources"][0]["date"]
    prompt = model.prompts[-1]
    assert "tomatoes" in prompt and prompt.endswith(
        "Question: what did I plant in the garden?\nAnswer:"
    )
    assert "/past" not in prompt


def test_past_leaves_sessions_far_below_the_best_out_of_its_sources(setup) -> None:
    api, deps, index, model = setup
    garden = _remember(api, deps, "alice", ["I planted tomatoes and basil in my garden"])
    _remember(api, deps, "alice", ["My car needs new tyres before winter"])
    turn = api.say(api.new_session(user="alice"), "/past which tomatoes did I plant?", user="alice")
    assert [s["id"] for s in turn["sources"]] == [garden]
    assert "tyres" not in model.prompts[-1]
    # GET /memories still ranks them all, with scores, for a client to judge.
    status, data = api.call("GET", "/memories", user="alice", query={"q": "which tomatoes"})
    assert status == 200 and len(data["memories"]) == 2


def test_recall_never_crosses_users(setup) -> None:
    api, deps, index, model = setup
    _remember(api, deps, "alice", ["my secret password hint is blue elephant"])
    bob = api.new_session(user="bob")
    turn = api.say(bob, "/past what is the password hint about the elephant?", user="bob")
    assert turn["sources"] == [] and turn["response"] == NOTHING_REMEMBERED
    status, data = api.call("GET", "/memories", user="bob", query={"q": "blue elephant"})
    assert status == 200 and data["memories"] == []


def test_memories_search_returns_scored_sessions(setup) -> None:
    api, deps, index, model = setup
    hiking = _remember(api, deps, "alice", ["we went hiking in the alps", "the alps were cold"])
    _remember(api, deps, "alice", ["booked a dentist appointment"])
    status, data = api.call("GET", "/memories", user="alice", query={"q": "hiking alps", "k": "1"})
    assert status == 200 and len(data["memories"]) == 1
    best = data["memories"][0]
    assert best["session_id"] == hiking and best["score"] > 0 and best["snippets"]


def test_verified_cites_passages_and_admits_when_nothing_is_relevant(setup) -> None:
    api, deps, index, model = setup
    ingest_documents(
        [SourceDocument("refunds.md", "# Refunds\n\nRefunds are paid within 14 days of a return.")],
        embedder=deps.embedder,
        index=index,
    )
    sid = api.new_session(user="alice")
    turn = api.say(
        sid, "/verified within how many days are refunds paid after a return?", user="alice"
    )
    assert turn["intent"] == "verified" and turn["response"] == "grounded answer"
    assert turn["sources"][0]["doc_id"] == "refunds.md" and turn["sources"][0]["passage_id"] == "p1"
    calls = model.calls
    miss = api.say(sid, "/verified quantum chromodynamics lattice", user="alice")
    assert miss["response"] == NOTHING_VERIFIED and miss["sources"] == []
    assert model.calls == calls  # no model call without evidence


def test_past_degrades_to_short_term_memory_when_the_index_is_down(setup) -> None:
    api, deps, index, model = setup
    sid = api.new_session(user="alice")
    index.down = True
    turn = api.say(sid, "/past what did we discuss?", user="alice")
    assert turn["degraded"] is True and turn["response"] == "grounded answer"
    assert turn["sources"] == []


def test_deleting_a_session_removes_its_long_term_entries(
    setup, dynamodb, monkeypatch: pytest.MonkeyPatch, lambda_context
) -> None:
    api, deps, index, model = setup
    gone = _remember(api, deps, "alice", ["forget me please"])
    kept = _remember(api, deps, "alice", ["keep this one"])
    purger = Purger(dynamodb, deps.memory, index, monkeypatch, lambda_context)
    assert api.call("DELETE", f"/sessions/{gone}", user="alice")[0] == 204
    # Unreachable at once, although the index still holds it until the purge runs.
    found = api.call("GET", "/memories", query={"q": "forget me please"}, user="alice")[1]
    assert gone not in [m["session_id"] for m in found["memories"]]
    purger.drain()
    sessions = {
        r[0]
        for r in index._db.execute("SELECT session_id FROM docs WHERE idx = ?", (MEMORY_INDEX,))
    }
    assert sessions == {kept}


def test_delete_memories_forgets_everything_of_the_caller_only(
    setup, dynamodb, monkeypatch: pytest.MonkeyPatch, lambda_context
) -> None:
    api, deps, index, model = setup
    old = _remember(api, deps, "alice", ["alice fact"])
    api.new_session(user="alice")
    bobs = _remember(api, deps, "bob", ["bob fact"])
    purger = Purger(dynamodb, deps.memory, index, monkeypatch, lambda_context)
    status, _ = api.call("DELETE", "/memories", user="alice")
    assert status == 204
    # Everything is out of reach before anything is physically deleted.
    assert api.call("GET", "/sessions", user="alice")[1]["sessions"] == []
    assert api.call("GET", f"/sessions/{old}", user="alice")[0] == 404
    found = api.call("GET", "/memories", query={"q": "alice fact"}, user="alice")[1]
    assert found["memories"] == []
    assert api.call("GET", "/deletions", user="alice")[1]["complete"] is False
    purger.drain()
    assert api.call("GET", "/deletions", user="alice")[1] == {
        "complete": True,
        "sessions_pending": 0,
        "forget_requests_pending": 0,
    }
    assert api.call("GET", "/sessions", user="alice")[1]["sessions"] == []
    users = {
        r[0] for r in index._db.execute("SELECT user_id FROM docs WHERE idx = ?", (MEMORY_INDEX,))
    }
    assert users == {"bob"}
    assert api.call("GET", f"/sessions/{bobs}", user="bob")[0] == 200
    turns = dynamodb.scan(TableName="conversations")["Items"]
    assert {t["user_id"]["S"] for t in turns} == {"bob"}
