"""Namespaces of records (services/profile/profile.py), on the in-memory fakes: what conversations
teach stays in the profile's namespace, a client's namespace keeps its items as they were put, and a
deleted key is free at once without its old entries coming back; a search ranks a record only by an
entry of its current text (not by the old one while an update's entry is being written)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from chatmemory.errors import BadRequest, Conflict, LongTermMemoryUnavailable
from chatmemory.ports import Candidate, Search
from chatmemory.schema import MEMORY_INDEX, RecordStatus, legacy_record_doc_key
from chatmemory.services.profile import profile, record_filter, records
from tests.fakes import FakeEmbedder
from tests.memory_fake import InMemoryShortTermMemory
from tests.records_helpers import HookedIndex, at, consolidate, entries, record_entries, told


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
    return {record_id: e["text"] for record_id, e in record_entries(index, "alice").items()}


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


# --- a search while an update's entry is being written -----------------------------------------

TEA = "I drink green tea every morning"


def _scored(memory: Any, index: Any, query: str, **ask: Any) -> list[tuple[str, str, float]]:
    found = profile.find_records(
        memory,
        "alice",
        profile.RecordQuery(query=query, **ask),
        embedder=FakeEmbedder(),
        index=index,
    )
    return [(r.record_id, r.text, score or 0.0) for r, score in found]


@pytest.mark.parametrize("prefix", [("n",), ()])
def test_a_search_while_a_put_replaces_the_text_does_not_rank_the_record_by_its_old_entry(
    memory: InMemoryShortTermMemory, index: HookedIndex, prefix: tuple[str, ...]
) -> None:
    """Failed before the fix: a put of an existing key saves the new text, then embeds it and
    writes its entry; a search in between (or on OpenSearch Serverless, until the collection
    refreshes) ranked the record by its old entry: first for the old words, with the old
    words' score and the new text shown."""
    _put(memory, index, "n:drink", TEA, ("n",))
    _put(memory, index, "n:also", "I drink green tea most evenings", ("n",))
    before = _scored(memory, index, TEA, namespace_prefix=prefix)
    assert [rid for rid, _, _ in before] == ["n:drink", "n:also"]
    old_score = before[0][2]
    during: list[list[tuple[str, str, float]]] = []

    def search_now() -> None:
        stored = memory.get_record("alice", "n:drink")
        assert stored is not None and stored.text == "I ride my bike to work"  # saved already
        assert record_entries(index, "alice")["n:drink"]["text"] == TEA  # its entry not yet
        during.append(_scored(memory, index, TEA, namespace_prefix=prefix))

    index.before_upsert = search_now
    _put(memory, index, "n:drink", "I ride my bike to work", ("n",))

    [found] = during
    assert found[0][:2] == ("n:also", "I drink green tea most evenings")
    assert ("n:drink", "I ride my bike to work", old_score) not in found
    assert all(score < found[0][2] for rid, _, score in found if rid == "n:drink")
    # Once its entry is written, the new words find it first.
    after = _scored(memory, index, "I ride my bike to work", namespace_prefix=prefix)
    assert after[0][:2] == ("n:drink", "I ride my bike to work")


class _ClippingIndex(HookedIndex):
    """The embedded index answering, once `kept` is set, with only the first `kept` characters
    of each entry's text, as S3 Vectors does with a text too long for its metadata (or none)."""

    kept: int | None = None

    def hybrid_search(self, search: Search) -> tuple[list[Candidate], list[Candidate]]:
        by_vector, by_words = super().hybrid_search(search)
        for hit in by_vector + by_words:
            hit.doc.text = hit.doc.text[: self.kept]
        return by_vector, by_words


@pytest.mark.parametrize("kept", [40, 0])
def test_an_entry_that_keeps_only_the_beginning_of_the_text_still_ranks_its_record(
    memory: InMemoryShortTermMemory, kept: int
) -> None:
    index = _ClippingIndex()
    _put(memory, index, "d:diary", "Travel diary: green tea in Kyoto. " + "x" * 9_000, ("d",))
    _put(memory, index, "d:other", "Green tea at home", ("d",))
    whole = _scored(memory, index, "green tea in Kyoto")
    index.kept = kept
    assert _scored(memory, index, "green tea in Kyoto") == whole
    assert [rid for rid, _, _ in whole] == ["d:diary", "d:other"]


def _corrected_with_an_old_entry(memory: Any, index: Any) -> tuple[Any, Any]:
    """A record corrected from "I live in Lisbon" to "I live in Porto now" with an entry of its
    old words left in the index (under the key entries had before ids could be chosen by
    clients, legacy_record_doc_key, which a correction now removes: written back after it, as
    an index that lags would show it); and "My sister lives in Lisbon"."""
    edit = profile.Editing(memory, FakeEmbedder(), index, at(1))
    home = profile.state_record("alice", "I live in Lisbon", edit, record_type=None)
    old = replace(profile.record_document(home), doc_key=legacy_record_doc_key(home.record_id))
    [old.embedding] = FakeEmbedder().embed([old.text])
    sister = profile.state_record("alice", "My sister lives in Lisbon", edit, record_type=None)
    profile.correct_record("alice", home.record_id, "I live in Porto now", edit)
    index.upsert(MEMORY_INDEX, [old])
    return home, sister


def test_a_correction_removes_the_entry_of_the_key_of_before(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    """An entry written before ids could be chosen by clients (legacy_record_doc_key) holds the
    record's old words: after a correction, recall would have shown them beside the new ones
    for good (only a deletion removed it)."""
    edit = profile.Editing(memory, FakeEmbedder(), index, at(1))
    home = profile.state_record("alice", "I live in Lisbon", edit, record_type=None)
    old = replace(profile.record_document(home), doc_key=legacy_record_doc_key(home.record_id))
    [old.embedding] = FakeEmbedder().embed([old.text])
    index.upsert(MEMORY_INDEX, [old])
    assert [e["text"] for e in entries(index, "alice").values()] == ["I live in Lisbon"] * 2

    profile.correct_record("alice", home.record_id, "I live in Porto now", edit)
    assert [e["text"] for e in entries(index, "alice").values()] == ["I live in Porto now"]


def test_an_entry_of_the_old_key_does_not_rank_a_corrected_record(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    """Failed before the fix: the old entry ranked the corrected record by its old words for
    good, ahead of what says them (and with the new text shown)."""
    home, sister = _corrected_with_an_old_entry(memory, index)
    found = _scored(memory, index, "I live in Lisbon", limit=1)
    assert [(rid, text) for rid, text, _ in found] == [(sister.record_id, sister.text)]
    found = _scored(memory, index, "I live in Lisbon", limit=2)
    assert [rid for rid, _, _ in found] == [sister.record_id, home.record_id]
    assert found[1][2] < found[0][2]


def test_a_record_its_current_entry_ranks_lower_is_read_past_the_first_records_read(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    """Records are read ten at a time, in the order of their best entry, until none left unread
    can outscore those found: the corrected record (first by its old entry) is read with ten
    records of another namespace, and the one that answers is read after them."""
    _, sister = _corrected_with_an_old_entry(memory, index)
    for n in range(10):
        _put(memory, index, f"o:{n}", f"I live in Lisbon, says {n}", ("other",))
    everywhere = [rid for rid, _, _ in _scored(memory, index, "I live in Lisbon", limit=20)]
    assert everywhere.index(sister.record_id) >= 10  # not among the first ten read
    found = _scored(memory, index, "I live in Lisbon", namespace_prefix=("profile",), limit=1)
    assert [rid for rid, _, _ in found] == [sister.record_id]


# --- a put retried after its index call failed -------------------------------------------------


class _FailingDeletes(HookedIndex):
    """The embedded index whose next `fail_deletes` entry deletes fail, as an index that is
    briefly unreachable does."""

    fail_deletes = 0

    def delete_documents(self, index: str, user_id: str, doc_keys: Any) -> None:
        if self.fail_deletes:
            self.fail_deletes -= 1
            raise LongTermMemoryUnavailable("the index is unreachable")
        super().delete_documents(index, user_id, doc_keys)


def _unreachable() -> None:
    raise LongTermMemoryUnavailable("the index is unreachable")


@pytest.mark.parametrize("namespace", [("n",), ()])
def test_a_put_retried_after_its_entry_failed_writes_the_entry(
    memory: InMemoryShortTermMemory, namespace: tuple[str, ...]
) -> None:
    """Failed before the fix: a keyed put saves its record, then writes its entry; when that
    write failed (503), the client's retry of the same put found the record as asked and
    returned, so the record was never found by meaning (a new one), or kept being found by
    its old words (a replaced one). The retry now writes the entry, as a retried placement
    does."""
    index = HookedIndex()
    index.before_upsert = _unreachable
    with pytest.raises(LongTermMemoryUnavailable):
        _put(memory, index, "k:tea", TEA, namespace)
    assert "k:tea" not in _entry_texts(index)
    _put(memory, index, "k:tea", TEA, namespace)  # the client retries
    assert _entry_texts(index)["k:tea"] == TEA
    assert _find(memory, index, query=TEA, namespace_prefix=namespace, limit=1) == ["k:tea"]

    index.before_upsert = _unreachable
    with pytest.raises(LongTermMemoryUnavailable):
        _put(memory, index, "k:tea", "I ride my bike to work", namespace)
    assert _entry_texts(index)["k:tea"] == TEA
    _put(memory, index, "k:tea", "I ride my bike to work", namespace)
    assert _entry_texts(index)["k:tea"] == "I ride my bike to work"


def test_a_put_without_indexing_retried_after_its_delete_failed_removes_the_entry(
    memory: InMemoryShortTermMemory,
) -> None:
    """Failed before the fix: index=False saves the record, then removes its entry; when the
    removal failed, the retry returned at once and the item stayed ranked by meaning."""
    index = _FailingDeletes()
    _put(memory, index, "n:tea", TEA, ("n",))
    index.fail_deletes = 1
    with pytest.raises(LongTermMemoryUnavailable):
        _put(memory, index, "n:tea", TEA, ("n",), indexed=False)
    assert "n:tea" in _entry_texts(index)
    kept = _put(memory, index, "n:tea", TEA, ("n",), indexed=False)
    assert not kept.indexed and "n:tea" not in _entry_texts(index)


def test_a_summary_put_again_while_it_is_deleted_leaves_no_entry(
    memory: InMemoryShortTermMemory, index: HookedIndex
) -> None:
    """Failed before the fix: a session's summary put again as it is (a client retrying, or
    LangGraph's store putting what it read) writes its entry again; deleted (and purged) just
    before that write, the entry was left in the index for good, with nothing to remove it.
    Every other entry write checks for that after writing (entries.write_record_entries)."""
    sid = told(memory, "alice", at(2), "I live in Porto and I cycle to work")
    assert consolidate(memory, index, sid, now=at(2)).outcome == "consolidated"
    [summary] = [r for r in memory.records_of_owner("alice") if r.type == "summary"]
    index.before_upsert = lambda: profile.delete_record_now(
        memory, "alice", summary.record_id, index=index
    )
    _put(memory, index, summary.record_id, summary.text, ())
    assert memory.get_record("alice", summary.record_id) is None
    assert summary.record_id not in {e.get("record_id") for e in entries(index, "alice").values()}
