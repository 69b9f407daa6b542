"""Shared pieces of the profile-record tests: an extractor that takes what the user says as it
is, an index whose writes and searches can be paused at a chosen moment, a purger that also
reads the records stream, and readers of what a caller can list, search and recall."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.domain import Turn
from chatmemory.ports import Candidate, ExtractedFact, Extractor, Search, ShortTermMemory
from chatmemory.schema import (
    MEMORY_INDEX,
    PROMPT_MEMORY_HEADER,
    PROMPT_PROFILE_HEADER,
    RecordType,
)
from chatmemory.services.background.consolidation import (
    ConsolidationPolicy,
    ConsolidationResult,
    consolidate_session,
)
from chatmemory.services.conversation import sessions
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.profile.extract import classify, said
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer

Hook = Callable[[], None]


class StatementExtractor:
    """Every chat message of the user is one fact, typed and given a subject as /remember would
    (services/profile/extract.classify): deterministic, and short statements ("I moved to Porto")
    are kept, which the pattern extractor's minimum of content words would drop."""

    name = "statements"

    def extract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        facts = []
        for turn in said(turns):
            kind, subject = classify(turn.input)
            facts.append(ExtractedFact(kind, turn.input, subject, turn.turn))
        return facts


class HookedIndex(EmbeddedLongTermIndex):
    """The embedded index, calling a hook once at a chosen moment: just before or just after
    its next write (`on_upsert`), or just after its next search has read its results
    (`after_search`) - the moments where a concurrent delete may land."""

    def __init__(self) -> None:
        super().__init__()
        self.before_upsert: Hook | None = None
        self.after_upsert: Hook | None = None
        self.after_search: Hook | None = None
        self.writes: list[list[str]] = []

    def upsert(self, index: str, docs: Any) -> None:
        self._fire("before_upsert")
        super().upsert(index, docs)
        self.writes.append([d.doc_key for d in docs])
        self._fire("after_upsert")

    def vector_search(self, *args: Any, **kwargs: Any) -> list[Candidate]:
        found = super().vector_search(*args, **kwargs)
        self._fire("after_search")
        return found

    def hybrid_search(self, search: Search) -> tuple[list[Candidate], list[Candidate]]:
        found = super().vector_search(search), super().lexical_search(search)
        self._fire("after_search")
        return found

    def _fire(self, name: str) -> None:
        hook = getattr(self, name)
        setattr(self, name, None)
        if hook is not None:
            hook()


def entries(index: EmbeddedLongTermIndex, owner: str) -> dict[str, dict[str, Any]]:
    """The owner's entries in the memory index, by doc_key (what is physically there)."""
    import json

    rows = index._db.execute(
        "SELECT doc_key, text, session_id, meta FROM docs WHERE idx = ? AND user_id = ?",
        (MEMORY_INDEX, owner),
    ).fetchall()
    return {r[0]: {"text": r[1], "session_id": r[2], **json.loads(r[3])} for r in rows}


def record_entries(index: EmbeddedLongTermIndex, owner: str) -> dict[str, dict[str, Any]]:
    """The owner's entries that belong to a record, by record id."""
    return {e["record_id"]: e for e in entries(index, owner).values() if e.get("record_id")}


def at(day: int, minute: int = 0) -> datetime:
    """A fixed moment: 2026-01-<day> 10:<minute> UTC (days may run past January)."""
    from datetime import UTC

    return datetime(2026, 1, 1, 10, 0, tzinfo=UTC) + timedelta(days=day - 1, minutes=minute)


def told(
    memory: ShortTermMemory,
    user: str,
    when: datetime,
    *texts: str,
    end: bool = True,
) -> str:
    """A session of `user` started at `when` in which they said `texts` (a minute apart),
    ended; returns its id."""
    minute = iter(range(1000))
    clock = lambda: when + timedelta(minutes=next(minute))  # noqa: E731
    session = sessions.create_session(memory, user, clock=clock)
    deps = ChatDeps(memory=memory, generator=FakeGenerator(reply=lambda p: "ok"), clock=clock)
    for text in texts:
        post_message(
            deps, ChatPolicy(), Message(user_id=user, session_id=session.session_id, content=text)
        )
    if end:
        sessions.end_session(memory, user, session.session_id, clock=clock)
    return session.session_id


def consolidate(
    memory: ShortTermMemory,
    index: EmbeddedLongTermIndex,
    session_id: str,
    *,
    now: datetime,
    embedder: FakeEmbedder | None = None,
    owner: str | None = None,
    extract: bool = True,
    extractor: Extractor | None = None,
) -> ConsolidationResult:
    """consolidate_session with the fakes, drawing facts with StatementExtractor (or none, or
    the `extractor` given)."""
    return consolidate_session(
        session_id,
        memory=memory,
        summarizer=FakeSummarizer(),
        embedder=embedder or FakeEmbedder(),
        index=index,
        policy=ConsolidationPolicy(),
        now=now,
        owner=owner,
        extractor=(extractor or StatementExtractor()) if extract else None,
    )


def by_text(records: Sequence[Any], text: str) -> Any:
    """The one record (a MemoryRecord or the API's JSON) whose text is `text`."""
    found = [r for r in records if (r["text"] if isinstance(r, dict) else r.text) == text]
    assert len(found) == 1, (text, records)
    return found[0]


def facts_of(records: Sequence[Any]) -> list[Any]:
    return [r for r in records if (r["type"] if isinstance(r, dict) else r.type) != "summary"]


def cosine(a: str, b: str) -> float:
    """How close the fake embedder puts two texts (to choose near-duplicates in tests)."""
    va, vb = FakeEmbedder().embed([a, b])
    return sum(x * y for x, y in zip(va, vb, strict=True))


FACT = RecordType.FACT


# --- the chat API with long-term memory, and the purge of what it deletes -----------------------


class Ticking:
    """A clock that moves one second per reading, from `start`: records stated in a row get
    distinct, ordered times (their ids begin with them)."""

    def __init__(self, start: datetime) -> None:
        self._now = start

    def __call__(self) -> datetime:
        self._now += timedelta(seconds=1)
        return self._now


def record_purger(
    dynamodb: Any, memory: ShortTermMemory, index: Any, monkeypatch: Any, context: Any
) -> Any:
    """tests.purging.Purger reading the records stream too (a record marked DELETING)."""
    from chatmemory import schema
    from tests.purging import Purger
    from tests.streams import StreamReader

    purger = Purger(dynamodb, memory, index, monkeypatch, context)
    purger._readers.append(StreamReader(dynamodb, schema.RECORDS.logical_name))
    return purger


@dataclass
class World:
    """The chat Lambda on moto with the embedded index, and the purge Lambda behind it."""

    api: Any
    deps: ChatDeps
    index: HookedIndex
    purger: Any
    model: FakeGenerator
    dynamodb: Any

    @property
    def memory(self) -> ShortTermMemory:
        return self.deps.memory

    def state(self, text: str, user: str = "alice", **body: Any) -> dict[str, Any]:
        status, data = self.api.call("POST", "/memories/records", {"text": text, **body}, user=user)
        assert status == 201, data
        return data["record"]

    def listed(self, user: str = "alice", **query: str) -> list[dict[str, Any]]:
        """Every record GET /memories/records lists, page after page."""
        found: list[dict[str, Any]] = []
        token: str | None = None
        for _ in range(50):
            params = dict(query, **({"next_token": token} if token else {}))
            status, data = self.api.call("GET", "/memories/records", user=user, query=params)
            assert status == 200, data
            found += data["records"]
            token = data["next_token"]
            if not token:
                return found
        raise AssertionError("pages without end")

    def searched(self, q: str, user: str = "alice", **query: str) -> list[str]:
        status, data = self.api.call("GET", "/memories/records", user=user, query={"q": q, **query})
        assert status == 200, data
        assert data["next_token"] is None
        return [r["record_id"] for r in data["records"]]

    def recalled(self, message: str, user: str = "alice") -> tuple[set[str], str]:
        """What an ordinary chat turn cites and the memory its prompt holds (in a throwaway
        session, deleted afterwards)."""
        sid = self.api.new_session(user=user)
        before = self.model.calls
        turn = self.api.say(sid, message, user=user)
        prompt = self.model.prompts[-1] if self.model.calls > before else ""
        assert self.api.call("DELETE", f"/sessions/{sid}", user=user)[0] == 204
        # The memory the prompt holds: the profile block and auto-recall's block, after the
        # system line, before the message (a new session: no window).
        memory = ""
        for header in (PROMPT_PROFILE_HEADER, PROMPT_MEMORY_HEADER):
            if header in prompt:
                memory = prompt.split(header, 1)[1].rsplit("\nUser: ", 1)[0]
                break
        return {s["id"] for s in turn["sources"]}, memory

    def stored_records(self, owner: str = "alice") -> list[dict[str, Any]]:
        """Every record item under `owner`, whatever its status (what is physically there)."""
        from chatmemory.adapters.dynamodb import deserialize

        items = self.dynamodb.query(
            TableName="records",
            KeyConditionExpression="user_id = :u",
            ExpressionAttributeValues={":u": {"S": owner}},
            ConsistentRead=True,
        )["Items"]
        return [deserialize(i) for i in items]


def chat_world(
    dynamodb: Any,
    monkeypatch: Any,
    context: Any,
    *,
    long_term: bool = True,
) -> World:
    from chatmemory import wiring
    from handlers import chat_api
    from tests.unit.test_chat_api import Api

    index = HookedIndex()
    model = FakeGenerator(reply=lambda prompt: "an answer")
    deps = ChatDeps(
        memory=wiring.short_term_memory(),
        generator=model,
        embedder=FakeEmbedder() if long_term else None,
        long_term=index if long_term else None,
        clock=Ticking(at(30)),
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    api = Api(chat_api.handler, context)
    purger = record_purger(
        dynamodb, deps.memory, index if long_term else None, monkeypatch, context
    )
    return World(api, deps, index, purger, model, dynamodb)
