"""The profile block (services/profile/block.py): what the user told about themselves that lasts
is in every chat prompt, within its own budget, most important first, and what it holds is
named by the turn and never recalled twice.

Through the chat API on moto's DynamoDB (the profile index included), the embedded index and
the bag-of-words fake embedder; records are drawn by the offline extractor at consolidation,
or stated with /remember, as a person makes them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.schema import (
    PROMPT_MEMORY_HEADER,
    PROMPT_PROFILE_FOOTER,
    PROMPT_PROFILE_HEADER,
)
from chatmemory.services.background.consolidation import ConsolidationPolicy, consolidate_session
from chatmemory.services.conversation.chat import ChatDeps
from chatmemory.services.longterm import auto_recall
from chatmemory.services.profile.block import ProfileBlockPolicy
from chatmemory.services.profile.extract import PatternExtractor
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer
from tests.unit.test_chat_api import Api


@pytest.fixture(autouse=True)
def _fresh_small_talk_cache() -> None:
    auto_recall._small_talk_vectors.clear()


@pytest.fixture
def setup(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any):
    from handlers import chat_api

    deps = ChatDeps(
        memory=wiring.short_term_memory(),
        generator=FakeGenerator(),
        embedder=FakeEmbedder(dimension=4096),
        long_term=EmbeddedLongTermIndex(),
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    return Api(chat_api.handler, lambda_context), deps


def _told(api: Api, deps: ChatDeps, texts: list[str], user: str = "alice") -> str:
    """A session in which `user` said `texts`, ended and consolidated (offline extractor)."""
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
        extractor=PatternExtractor(),
    )
    assert result.outcome == "consolidated"
    return sid


def _block(prompt: str) -> list[str]:
    """The profile block's lines of a prompt."""
    if PROMPT_PROFILE_HEADER not in prompt:
        return []
    inside = prompt.split(PROMPT_PROFILE_HEADER, 1)[1].split(PROMPT_PROFILE_FOOTER, 1)[0]
    return [line.removeprefix("- ") for line in inside.strip().splitlines()]


def _episodic(prompt: str) -> str:
    return prompt.split(PROMPT_MEMORY_HEADER, 1)[1] if PROMPT_MEMORY_HEADER in prompt else ""


def _records(api: Api, user: str = "alice") -> list[dict[str, Any]]:
    return api.call("GET", "/memories/records", user=user)[1]["records"]


def test_a_fact_is_in_the_prompt_of_a_question_that_shares_no_word_with_it(setup: Any) -> None:
    """The newcomer's case: told an allergy and a sister's name in one sentence, then asked
    what to avoid cooking, in a new session."""
    api, deps = setup
    _told(api, deps, ["I'm allergic to peanuts and my sister is called Ana."])

    turn = api.say(api.new_session(), "What should I avoid cooking for myself?")

    prompt = deps.generator.prompts[-1]
    assert _block(prompt) == ["I'm allergic to peanuts.", "My sister is called Ana."]
    assert _episodic(prompt) == ""  # nothing was close enough to be recalled
    records = {r["text"]: r["record_id"] for r in _records(api)}
    named = [(s["kind"], s["id"], s["title"]) for s in turn["sources"]]
    assert named == [
        ("profile", records["I'm allergic to peanuts."], "I'm allergic to peanuts."),
        ("profile", records["My sister is called Ana."], "My sister is called Ana."),
    ]
    assert all(s["score"] is None for s in turn["sources"])  # not chosen by similarity
    # As stored: a later read of the turn names them too.
    stored = api.call("GET", f"/sessions/{turn_session(api)}/turns/1")[1]["turn"]
    assert [s["kind"] for s in stored["sources"]] == ["profile", "profile"]


def turn_session(api: Api) -> str:
    sessions = api.call("GET", "/sessions", query={"limit": "1"})[1]["sessions"]
    return str(sessions[0]["session_id"])


def test_stated_with_remember_it_is_in_the_very_next_prompt(setup: Any) -> None:
    api, deps = setup
    sid = api.new_session()
    api.say(sid, "/remember I am allergic to peanuts")

    api.say(sid, "What should I avoid cooking for myself?")

    assert _block(deps.generator.prompts[-1]) == ["I am allergic to peanuts"]


def test_small_talk_draws_no_episodic_memory_and_the_profile_is_constant_context(
    setup: Any,
) -> None:
    api, deps = setup
    _told(api, deps, ["I'm a nurse and I work nights."])
    embeds = deps.embedder.calls

    turn = api.say(api.new_session(), "hi!")

    prompt = deps.generator.prompts[-1]
    assert _block(prompt) == ["I'm a nurse.", "I work nights."]
    assert PROMPT_MEMORY_HEADER not in prompt
    assert {s["kind"] for s in turn["sources"]} == {"profile"}
    assert deps.embedder.calls == embeds  # small talk: no embedding, no search


def test_under_a_small_budget_health_and_safety_survive_first(
    setup: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    api, deps = setup
    _told(api, deps, ["I'm allergic to shellfish."])
    _told(api, deps, ["I love hiking in the mountains.", "My bike is a red road bike."])
    _told(api, deps, ["I work as an accountant in Leeds."])
    policy = wiring.chat_policy()
    small = policy._replace(profile=ProfileBlockPolicy(token_budget=45))
    monkeypatch.setattr(wiring, "chat_policy", lambda cfg=None: small)

    api.say(api.new_session(), "What should we do on Saturday?")

    # The allergy was said first (the oldest), yet it is kept; then identity, preferences.
    assert _block(deps.generator.prompts[-1]) == [
        "I'm allergic to shellfish.",
        "I work as an accountant in Leeds.",
    ]


def test_a_fact_said_at_length_is_cut_short_in_the_prompt_and_kept_whole(setup: Any) -> None:
    api, deps = setup
    said = (
        "I've used a wheelchair ever since the car accident when I was twenty-three, which "
        "I've made my peace with, it's just part of how I get around now."
    )
    _told(api, deps, [said])

    api.say(api.new_session(), "Where should we go on Saturday?")

    (line,) = _block(deps.generator.prompts[-1])
    assert line.startswith("I've used a wheelchair ever since the car accident") and line.endswith(
        "…"
    )
    assert len(line.split()) < len(said.split())
    assert [r["text"] for r in _records(api) if r["type"] == "fact"] == [said]


def test_saying_a_fact_again_makes_it_the_newest_of_its_kind(setup: Any) -> None:
    api, deps = setup
    _told(api, deps, ["I love jazz."])
    _told(api, deps, ["I love opera."])
    _told(api, deps, ["I love jazz."])

    api.say(api.new_session(), "hi!")

    assert _block(deps.generator.prompts[-1]) == ["I love jazz.", "I love opera."]


def test_a_passing_remark_is_in_no_lasting_record_and_in_no_later_prompt(setup: Any) -> None:
    api, deps = setup
    _told(api, deps, ["I'm a teacher.", "I'm on the train right now.", "I'm so tired."])

    api.say(api.new_session(), "Any tips for the weekend?")

    texts = [r["text"] for r in _records(api) if r["type"] != "summary"]
    assert not any("train" in t or "tired" in t for t in texts), texts
    assert _block(deps.generator.prompts[-1]) == ["I'm a teacher."]


def test_a_deleted_record_leaves_the_block_at_once_whatever_the_index_still_says(
    setup: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The profile index is read eventually: a record being deleted may still be in it for a
    moment. The consistent read after it keeps it out."""
    api, deps = setup
    _told(api, deps, ["I'm allergic to wasps and I have a cat called Miso."])
    before = deps.memory.profile_records("alice", 80)
    wasps = next(r for r in before if "wasps" in r.text)
    assert api.call("DELETE", f"/memories/records/{wasps.record_id}")[0] == 204
    monkeypatch.setattr(deps.memory, "profile_records", lambda owner, limit: before)

    turn = api.say(api.new_session(), "Can we have a picnic by the lake?")

    assert _block(deps.generator.prompts[-1]) == ["I have a cat called Miso."]
    assert wasps.record_id not in {s["id"] for s in turn["sources"]}


def test_the_records_of_a_deleted_session_leave_the_block_at_once(setup: Any) -> None:
    api, deps = setup
    gone = _told(api, deps, ["I'm allergic to wasps."])
    _told(api, deps, ["I have a cat called Miso."])
    assert api.call("DELETE", f"/sessions/{gone}")[0] == 204

    api.say(api.new_session(), "Can we have a picnic by the lake?")

    assert _block(deps.generator.prompts[-1]) == ["I have a cat called Miso."]


def test_what_the_block_holds_is_not_recalled_again(setup: Any) -> None:
    api, deps = setup
    _told(api, deps, ["My sister Ana lives in Porto."])

    turn = api.say(api.new_session(), "where does my sister Ana live?")

    prompt = deps.generator.prompts[-1]
    assert _block(prompt) == ["My sister Ana lives in Porto."]
    assert "User: My sister Ana lives in Porto." not in _episodic(prompt)
    assert [s["kind"] for s in turn["sources"]].count("profile") == 1


def test_another_users_profile_is_never_in_the_prompt(setup: Any) -> None:
    api, deps = setup
    _told(api, deps, ["I'm allergic to peanuts."], user="bob")

    api.say(api.new_session(), "What should I avoid cooking for myself?")

    assert PROMPT_PROFILE_HEADER not in deps.generator.prompts[-1]


def test_a_budget_of_zero_turns_the_block_off(setup: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    api, deps = setup
    _told(api, deps, ["I'm allergic to peanuts."])
    policy = wiring.chat_policy()
    monkeypatch.setattr(
        wiring,
        "chat_policy",
        lambda cfg=None: policy._replace(profile=ProfileBlockPolicy(token_budget=0)),
    )

    turn = api.say(api.new_session(), "hi!")

    assert PROMPT_PROFILE_HEADER not in deps.generator.prompts[-1] and turn["sources"] == []


def test_a_restatement_supersedes_the_extracted_record_of_the_same_allergen(setup: Any) -> None:
    """Extracted "allergic to peanuts and cashews" is one record per allergen; /remember of one
    of them supersedes that one, as a correction does, and the history stays visible."""
    api, deps = setup
    _told(api, deps, ["I'm allergic to peanuts and cashews."])
    sid = api.new_session()

    api.say(sid, "/remember I am allergic to peanuts")

    records = [r for r in _records(api) if r["type"] == "fact"]
    active = sorted(r["text"] for r in records if r["status"] == "ACTIVE")
    assert active == ["I am allergic to peanuts", "I'm allergic to cashews."]
    [old] = [r for r in records if r["status"] == "SUPERSEDED"]
    stated = next(r for r in records if r["text"] == "I am allergic to peanuts")
    assert old["text"] == "I'm allergic to peanuts." and old["superseded_by"] == stated["record_id"]
    assert old["valid_until"] == stated["created_at"]
    api.say(sid, "hi!")
    assert sorted(_block(deps.generator.prompts[-1])) == active


def test_what_the_block_holds_is_the_line_the_prompt_has() -> None:
    """Auto-recall leaves out what the block holds: a record cut short holds only its start, so
    a transcript line with the rest of it can still be recalled."""
    from chatmemory.domain import MemoryRecord
    from chatmemory.schema import RecordOrigin, RecordType
    from chatmemory.services.profile.block import candidates

    said = (
        "I've used a wheelchair ever since the car accident when I was twenty-three, which "
        "I've made my peace with, it's just part of how I get around now."
    )
    at = "2026-01-01T10:00:00.000Z"
    long = MemoryRecord("r1", "alice", RecordType.FACT, said, at, at, RecordOrigin.EXTRACTED)

    class OneRecord:
        def profile_records(self, owner: str, limit: int) -> list[MemoryRecord]:
            return [long]

    found = candidates("alice", records=OneRecord(), policy=ProfileBlockPolicy(), budget=1000)  # type: ignore[arg-type]
    held = found.held["r1"]
    assert held.endswith("…") and "get around" not in held
