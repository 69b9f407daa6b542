"""Namespaces of records (services/profile/profile.py), on the in-memory fakes: what conversations
teach stays in the profile's namespace, a client's namespace keeps its items as they were put, and a
deleted key is free at once without its old entries coming back."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory.errors import BadRequest, Conflict
from chatmemory.schema import RecordStatus
from chatmemory.services.profile import profile, record_filter, records
from tests.fakes import FakeEmbedder
from tests.memory_fake import InMemoryShortTermMemory
from tests.records_helpers import HookedIndex, at, consolidate, entries, told


@pytest.fixture
def memory() -> InMemoryShortTermMemory:
    return InMemoryShortTermMemory()


@pytest.fixture
def index() -> HookedIndex:
    return HookedIndex()


def _put(
    memory: Any, index: Any, key: str, text: str, namespace: tuple[str, ...], indexed: bool = True
) -> Any:
    record, _ = profile.put_keyed_record(
        "alice",
        key,
        text,
        profile.Editing(memory, FakeEmbedder(), index, at(1)),
        record_type=None,
        namespace=profile.stored_namespace(namespace),
        indexed=indexed,
    )
    return record


def _find(memory: Any, index: Any, **ask: Any) -> list[str]:
    found = profile.find_records(
        memory, "alice", profile.RecordQuery(**ask), embedder=FakeEmbedder(), index=index
    )
    return [r.record_id for r, _ in found]


def test_extraction_writes_to_the_profile_and_never_supersedes_a_namespaced_item(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    """Supersession by subject stays inside a namespace: a fact learned in a chat does not
    make an agent's item about the same subject history (the store's tests show the failure
    of before, through the API)."""
    _put(memory, index, "agent:home", "I live in Lisbon", ("agent",))
    sid = told(memory, "alice", at(2), "I live in Porto")
    assert consolidate(memory, index, sid, now=at(2)).outcome == "consolidated"
    item = memory.get_record("alice", "agent:home")
    assert item is not None and item.status == RecordStatus.ACTIVE
    learned = [r for r in memory.records_of_owner("alice") if r.record_id != "agent:home"]
    assert any("Porto" in r.text for r in learned)  # the fact (and the session's summary)
    assert all(r.namespace == () for r in learned)  # the profile's own
    assert set(_find(memory, index, namespace_prefix=("profile",))) == {
        r.record_id for r in learned
    }
    assert _find(memory, index, namespace_prefix=("agent",)) == ["agent:home"]


def test_a_key_in_another_namespace_is_refused(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    _put(memory, index, "shared", "I like tea", ("a",))
    with pytest.raises(Conflict, match="another namespace"):
        _put(memory, index, "shared", "I like coffee", ("b",))


def test_a_deleted_key_is_free_at_once_and_the_late_purge_keeps_the_new_record(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    old = _put(memory, index, "n:plan", "Call the plumber", ("n",))
    profile.delete_record(memory, "alice", "n:plan")  # the tombstone; the purge comes later
    new = _put(memory, index, "n:plan", "Call the electrician", ("n",))
    assert new.generation and new.generation != old.generation
    # The records stream's purge of the deleted record, late: nothing of the new one goes.
    assert profile.purge_record("alice", "n:plan", memory=memory, index=index) is False
    texts = [e["text"] for e in entries(index, "alice").values()]
    assert texts == ["Call the electrician"]
    current = memory.get_record("alice", "n:plan")
    assert current is not None and current.text == "Call the electrician"


def test_delete_now_purges_the_entries_before_the_key_is_free(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    _put(memory, index, "n:plan", "Call the plumber", ("n",))
    profile.delete_record_now(memory, "alice", "n:plan", index=index)
    assert memory.get_record("alice", "n:plan") is None
    assert entries(index, "alice") == {}


def test_long_values_are_kept_whole_and_indexed_from_their_beginning(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    text = "Travel diary. " + "x" * 60_000
    record = _put(memory, index, "d:diary", text, ("d",))
    assert memory.get_record("alice", record.record_id).text == text  # type: ignore[union-attr]
    [entry] = entries(index, "alice").values()
    assert entry["text"] == text[:8_000]


def test_filters_follow_langgraph_semantics() -> None:
    value = record_filter.value_of('{"kind":"todo","n":3,"done":false,"user":{"level":"a"}}')
    assert record_filter.matches(value, {"kind": "todo", "n": {"$gte": 2, "$lt": 5}})
    assert record_filter.matches(value, {"user.level": "a", "user": {"level": "a"}})
    assert not record_filter.matches(value, {"done": 0})  # false is not 0
    assert not record_filter.matches(value, {"missing": {"$gt": 1}})
    assert record_filter.value_of("I like tea") == {"text": "I like tea"}
    with pytest.raises(BadRequest, match=r"\$regex"):
        record_filter.check({"kind": {"$regex": "t.*"}})


def _entry_texts(index: HookedIndex) -> dict[str, str]:
    return {meta["record_id"]: meta["text"] for meta in entries(index, "alice").values()}


def test_an_item_put_without_indexing_is_kept_and_never_ranked_by_meaning(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    """LangGraph's put(..., index=False): the item is stored (get, list) with no index entry;
    a search with a query ranks the indexed items first and finds it only by its words, after
    them. Putting it again indexed embeds it; putting an indexed one with indexed=False removes
    its entry, and a later correction keeps it out."""
    _put(memory, index, "n:a", "zany zebra Xerxes", ("n",))
    kept = _put(memory, index, "n:b", "zany zebra Xerxes again", ("n",), indexed=False)
    assert not kept.indexed and memory.get_record("alice", "n:b") is not None
    assert _entry_texts(index) == {"n:a": "zany zebra Xerxes"}
    assert _find(memory, index, query="zany zebra Xerxes", namespace_prefix=("n",), limit=1) == [
        "n:a"
    ]
    assert _find(memory, index, query="zany zebra Xerxes", namespace_prefix=("n",)) == [
        "n:a",
        "n:b",
    ]
    assert _find(memory, index, namespace_prefix=("n",)) == ["n:b", "n:a"]  # no query: by key

    _put(memory, index, "n:b", "zany zebra Xerxes again", ("n",))  # the same text, indexed now
    assert _entry_texts(index) == {"n:a": "zany zebra Xerxes", "n:b": "zany zebra Xerxes again"}
    _put(memory, index, "n:a", "zany zebra Xerxes", ("n",), indexed=False)
    assert _entry_texts(index) == {"n:b": "zany zebra Xerxes again"}
    profile.correct_record(
        "alice", "n:a", "a quiet zebra", profile.Editing(memory, FakeEmbedder(), index, at(2))
    )
    assert _entry_texts(index) == {"n:b": "zany zebra Xerxes again"}
    stored = memory.get_record("alice", "n:a")
    assert stored is not None and stored.text == "a quiet zebra" and not stored.indexed


def test_the_profiles_records_are_always_indexed(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    """What every chat recalls cannot be kept out of the index: index=false needs a client's
    namespace and the record's key."""
    edit = profile.Editing(memory, FakeEmbedder(), index, at(1))
    for new in (
        records.NewRecord("I like tea", record_id="k", indexed=False),
        records.NewRecord("I like tea", namespace=["profile"], record_id="k", indexed=False),
        records.NewRecord("I like tea", indexed=False),
    ):
        with pytest.raises(BadRequest, match="index=false"):
            records.create_record("alice", new, edit)
    assert list(memory.records_of_owner("alice")) == []
