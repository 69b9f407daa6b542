"""A property-based test of the chat API: random sequences of what callers do (create, message,
store, end, continue, import, hand off, reply as an agent, hand back, state and delete records,
delete sessions, forget everything, consolidate, sweep) for two users and an agent, against the
chat Lambda's handler on DynamoDB Local, with the invariants checked after every step:

- no answer is a 5xx (the model and the index never fail here: a 5xx is a bug);
- isolation: nothing of one user reaches another (nor an agent outside a handed-off session),
  and another user's session answers 404;
- deleted is unreachable: every text planted in the conversation carries a unique secret,
  and a secret may appear in an answer only while something that holds it (a session, a
  record) still exists for its owner; no hand-off event ever holds one;
- numbering is contiguous (turns 1..num_turns) and an ended session takes no turn.

The model repeats every secret its prompt holds, so a secret that reaches a prompt reaches an
answer, and the answer holds it from then on (it becomes that session's).

`make test` runs a bounded number of examples (about a minute); set CHATMEMORY_PROPERTY_EXAMPLES
to run more (e.g. 500), and CHATMEMORY_PROPERTY_STEPS for longer sequences."""

from __future__ import annotations

import itertools
import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from chatmemory import schema, wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.adapters.events_file import JsonLinesEventPublisher
from chatmemory.services.background.consolidation import ConsolidationPolicy, consolidate_session
from chatmemory.services.background.maintenance import (
    CompactionPolicy,
    compact_session,
    sweep_idle_sessions,
)
from chatmemory.services.conversation.chat import ChatDeps
from local.dynamodb_local import DynamoDBLocal, ensure_tables
from tests.fakes import FakeEmbedder, FakeGenerator, FakeSummarizer
from tests.unit.test_handoff import Api

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("CHATMEMORY_PROPERTY_EXAMPLES", "12"))
STEPS = int(os.environ.get("CHATMEMORY_PROPERTY_STEPS", "30"))
SECRET = re.compile(r"sec\d+q")
AGENT = "desk-agent"
VISIBLE = {"OPEN", "ENDED", "CONSOLIDATED", "FAILED"}
_examples = itertools.count(1)


def _parrot(prompt: str) -> str:
    """A model that repeats every secret its prompt holds (and says "ok" otherwise)."""
    found = sorted(set(SECRET.findall(prompt)))
    return "heard " + " ".join(found) if found else "ok"


@dataclass
class SessionModel:
    owner: str
    deleted: bool = False


@dataclass
class RecordModel:
    owner: str
    deleted: bool = False
    # The sessions a record drawn by consolidation came from (it lives while one of them does).
    provenance: list[str] = field(default_factory=list)


@dataclass
class World:
    api: Api
    deps: ChatDeps
    events_dir: Path


@pytest.fixture
def world(
    dynamodb_local: DynamoDBLocal,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    lambda_context: Any,
) -> World:
    from handlers import chat_api

    client = wiring.aws_client("dynamodb", dynamodb_local.endpoint)
    names = {spec.logical_name: f"prop-{spec.logical_name}" for spec in schema.TABLES}
    ensure_tables(client, names)
    memory = DynamoShortTermMemory(
        client,
        names[schema.SESSIONS.logical_name],
        names[schema.CONVERSATIONS.logical_name],
        names[schema.USERS.logical_name],
        names[schema.RECORDS.logical_name],
    )
    deps = ChatDeps(
        memory=memory,
        generator=FakeGenerator(reply=_parrot),
        embedder=FakeEmbedder(),
        long_term=EmbeddedLongTermIndex(),
        sleep=lambda seconds: None,
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    return World(Api(chat_api.handler, lambda_context), deps, tmp_path)


def test_random_sequences_of_calls_keep_the_apis_promises(world: World) -> None:
    class Calls(RuleBasedStateMachine):
        """One example: two users and an agent, from nothing."""

        def __init__(self) -> None:
            super().__init__()
            n = next(_examples)
            self.users = [f"x{n}-alice", f"x{n}-bob"]
            self.sessions: dict[str, SessionModel] = {}
            self.records: dict[str, RecordModel] = {}
            # secret -> its owner, and what holds it: ("session", id) or ("record", id).
            self.owner: dict[str, str] = {}
            self.holders: dict[str, set[tuple[str, str]]] = {}
            self.secrets = itertools.count(n * 10_000)
            world.deps.long_term = EmbeddedLongTermIndex()
            # Nothing of an earlier example may decide this one (a replay must run the same).
            self.events_path = world.events_dir / f"events-{n}.jsonl"
            world.deps.events = JsonLinesEventPublisher(self.events_path)
            self.now = datetime.now(UTC)

        # --- the model ------------------------------------------------------------------------

        def secret(self, user: str, holder: tuple[str, str] | None = None) -> str:
            token = f"sec{next(self.secrets)}q"
            self.owner[token] = user
            self.holders[token] = {holder} if holder else set()
            return token

        def alive(self, holder: tuple[str, str]) -> bool:
            kind, key = holder
            if kind == "session":
                return key in self.sessions and not self.sessions[key].deleted
            record = self.records.get(key)
            if record is None or record.deleted:
                return False
            return not record.provenance or any(
                self.alive(("session", s)) for s in record.provenance
            )

        def live_secret(self, token: str) -> bool:
            return any(self.alive(h) for h in self.holders.get(token, set()))

        def seen(self, user: str | None, data: Any, *, session: str | None = None) -> set[str]:
            """Check an answer: each secret in it is the caller's (or, for an agent reading a
            session, that session's owner's) and still held by something that exists. With
            `session`, what it says is that session's from now on (a new turn)."""
            found = set(SECRET.findall(json.dumps(data)))
            for token in found:
                assert token in self.owner, f"a secret nobody planted: {token}"
                if user is not None:
                    assert self.owner[token] == user, f"{token} of {self.owner[token]} to {user}"
                assert self.live_secret(token), f"{token} came back after its delete: {data}"
                if session is not None:
                    self.holders[token].add(("session", session))
            return found

        def ok(self, status: int, data: Any, *allowed: int) -> None:
            """The answer is one of `allowed` (a 5xx only where a step made the model fail)."""
            assert status in allowed, (status, data)

        def live_sessions(self, user: str) -> list[str]:
            return [s for s, m in self.sessions.items() if m.owner == user and not m.deleted]

        def any_session(self, data: Any, user: str) -> str | None:
            """One session of the user, live or deleted (deleted ones must answer 404)."""
            # In the order they were made: ids are random, a replay must draw the same one.
            mine = [s for s, m in self.sessions.items() if m.owner == user]
            return data.draw(st.sampled_from(mine)) if mine else None

        def status_of(self, user: str, sid: str) -> str | None:
            status, data = world.api.call("GET", f"/sessions/{sid}", user=user)
            if self.sessions[sid].deleted:
                self.ok(status, data, 404)
                return None
            self.ok(status, data, 200)
            self.seen(user, data)
            return str(data["session"]["status"])

        # --- rules -------------------------------------------------------------------------------

        @initialize()
        def start(self) -> None:
            for user in self.users:
                self.create(user, named=False, end_previous=False)

        def create(self, user: str, *, named: bool, end_previous: bool) -> str:
            body: dict[str, Any] = {"end_previous": end_previous}
            if named:
                body["name"] = f"about {self.secret(user)}"
            status, data = world.api.call("POST", "/sessions", body, user=user)
            self.ok(status, data, 201)
            sid = data["session"]["session_id"]
            self.sessions[sid] = SessionModel(user)
            for token in SECRET.findall(body.get("name", "")):
                self.holders[token].add(("session", sid))
            self.seen(user, data)
            return sid

        @rule(user=st.integers(0, 1), named=st.booleans(), end_previous=st.booleans())
        def create_session(self, user: int, named: bool, end_previous: bool) -> None:
            self.create(self.users[user], named=named, end_previous=end_previous)

        @rule(user=st.integers(0, 1), data=st.data())
        def continue_session(self, user: int, data: Any) -> None:
            who = self.users[user]
            sid = self.any_session(data, who)
            if sid is None:
                return
            status, answer = world.api.call("POST", "/sessions", {"continue_from": sid}, user=who)
            if self.sessions[sid].deleted:
                self.ok(status, answer, 404)
                return
            self.ok(status, answer, 201)
            new = answer["session"]["session_id"]
            self.sessions[new] = SessionModel(who)
            # A name the caller gave the old session is the new one's from now on (docs/concepts/conversation.md).
            self.seen(who, answer, session=new)

        @rule(user=st.integers(0, 1), data=st.data(), first=st.booleans())
        def continue_then_delete_the_old_one(self, user: int, data: Any, first: bool) -> None:
            """The order a leak needs, made likely: continue a session, maybe talk in the
            continuation, delete the session it continues, talk again, read it back."""
            who = self.users[user]
            live = self.live_sessions(who)
            if not live:
                return
            old = data.draw(st.sampled_from(live))
            status, answer = world.api.call("POST", "/sessions", {"continue_from": old}, user=who)
            self.ok(status, answer, 201)
            new = answer["session"]["session_id"]
            self.sessions[new] = SessionModel(who)
            # A name the caller gave the old session is the new one's from now on (docs/concepts/conversation.md).
            self.seen(who, answer, session=new)
            if first:
                self.say(who, new, "what was my code?")
            status, answer = world.api.call("DELETE", f"/sessions/{old}", user=who)
            self.ok(status, answer, 204)
            self.sessions[old].deleted = True
            self.say(who, new, "and what else did I say?")
            for path in (f"/sessions/{new}/export", "/sessions?limit=100"):
                status, answer = world.api.call("GET", path, user=who)
                self.ok(status, answer, 200)
                self.seen(who, answer)

        def say(self, user: str, sid: str, content: str) -> None:
            status, answer = world.api.call(
                "POST", f"/sessions/{sid}/messages", {"content": content}, user=user
            )
            self.ok(status, answer, 200)
            self.seen(user, answer, session=sid)

        @rule(
            user=st.integers(0, 1),
            kind=st.sampled_from(["secret", "plain", "past", "remember", "human", "repeat"]),
            data=st.data(),
        )
        def message(self, user: int, kind: str, data: Any) -> None:
            who = self.users[user]
            sid = self.any_session(data, who)
            if sid is None:
                return
            before = self.status_of(who, sid)
            content = {
                "secret": lambda: f"my code is {self.secret(who, ('session', sid))}",
                "plain": lambda: "tell me more",
                "past": lambda: "/past what codes did I give you?",
                "remember": lambda: f"/remember my locker is {self.secret(who, ('session', sid))}",
                "human": lambda: f"/human help with {self.secret(who, ('session', sid))}",
                "repeat": lambda: "what was my code?",
            }[kind]()
            status, answer = world.api.call(
                "POST", f"/sessions/{sid}/messages", {"content": content}, user=who
            )
            if before is None:
                self.ok(status, answer, 404)
                return
            if before != "OPEN":
                self.ok(status, answer, 409)
                self.takes_no_turn(who, sid)
                return
            self.ok(status, answer, 200)
            self.seen(who, answer, session=sid)
            for source in answer["turn"]["sources"]:
                if source["kind"] == "record" and kind == "remember":
                    self.records.setdefault(source["id"], RecordModel(who))
                    for token in SECRET.findall(content):
                        self.holders[token].add(("record", source["id"]))

        @rule(user=st.integers(0, 1), answered=st.booleans(), data=st.data())
        def store_turn(self, user: int, answered: bool, data: Any) -> None:
            who = self.users[user]
            sid = self.any_session(data, who)
            if sid is None:
                return
            before = self.status_of(who, sid)
            body: dict[str, Any] = {"input": f"noted {self.secret(who, ('session', sid))}"}
            if answered:
                body["response"] = "stored answer"
            status, answer = world.api.call("POST", f"/sessions/{sid}/turns", body, user=who)
            if before is None:
                self.ok(status, answer, 404)
            elif before != "OPEN":
                self.ok(status, answer, 409)
                self.takes_no_turn(who, sid)
            else:
                self.ok(status, answer, 201)
                self.seen(who, answer)

        @rule(user=st.integers(0, 1), data=st.data())
        def failed_then_retried(self, user: int, data: Any) -> None:
            """The model fails once: the message is kept (503); its retry, with the same
            client_message_id, answers it once, as the same turn."""
            who = self.users[user]
            sid = self.any_session(data, who)
            if sid is None or self.status_of(who, sid) != "OPEN":
                return
            body = {"content": f"again {self.secret(who, ('session', sid))}"}
            body["client_message_id"] = f"m-{SECRET.findall(body['content'])[0]}"
            world.deps.generator.fail_next = 1  # type: ignore[attr-defined]
            status, first = world.api.call("POST", f"/sessions/{sid}/messages", body, user=who)
            world.deps.generator.fail_next = 0  # type: ignore[attr-defined]
            self.ok(status, first, 200, 503)  # 200: handed to a person, no model call
            turns = self.num_turns(who, sid)
            status, again = world.api.call("POST", f"/sessions/{sid}/messages", body, user=who)
            self.ok(status, again, 200, 409)  # 409: ended meanwhile (the sweeper cannot here)
            self.seen(who, again, session=sid)
            assert self.num_turns(who, sid) == turns  # the same turn, not a second one

        def num_turns(self, user: str, sid: str) -> int:
            status, data = world.api.call("GET", f"/sessions/{sid}", user=user)
            self.ok(status, data, 200)
            return int(data["session"]["num_turns"])

        def takes_no_turn(self, user: str, sid: str) -> None:
            """After a 409 for an ended session: its turns are what they were."""
            status, data = world.api.call("GET", f"/sessions/{sid}/messages?limit=100", user=user)
            self.ok(status, data, 200)
            assert len(data["messages"]) == self.num_turns(user, sid)

        @rule(user=st.integers(0, 1), data=st.data())
        def end_session(self, user: int, data: Any) -> None:
            who = self.users[user]
            sid = self.any_session(data, who)
            if sid is None:
                return
            status, answer = world.api.call("POST", f"/sessions/{sid}/end", user=who)
            self.ok(status, answer, 404 if self.sessions[sid].deleted else 200)
            self.seen(who, answer)

        @rule(user=st.integers(0, 1), data=st.data())
        def delete_session(self, user: int, data: Any) -> None:
            who = self.users[user]
            sid = self.any_session(data, who)
            if sid is None:
                return
            status, answer = world.api.call("DELETE", f"/sessions/{sid}", user=who)
            self.ok(status, answer, 404 if self.sessions[sid].deleted else 204)
            self.sessions[sid].deleted = True

        @rule(user=st.integers(0, 1))
        def forget_everything(self, user: int) -> None:
            who = self.users[user]
            status, answer = world.api.call("DELETE", "/memories", user=who)
            self.ok(status, answer, 204)
            for model in (*self.sessions.values(), *self.records.values()):
                if model.owner == who:
                    model.deleted = True

        @rule(
            user=st.integers(0, 1),
            count=st.integers(0, 4),
            through=st.integers(0, 6),
            agent_turn=st.booleans(),
        )
        def import_session(self, user: int, count: int, through: int, agent_turn: bool) -> None:
            who = self.users[user]
            planted: list[str] = []

            def planted_secret() -> str:
                planted.append(self.secret(who))
                return planted[-1]

            messages: list[dict[str, Any]] = [
                {"input": f"imported {planted_secret()}", "response": f"yes {planted_secret()}"}
                for _ in range(count)
            ]
            if agent_turn:  # an export of a handed-off session, or a forged agent reply
                messages.append(
                    {"input": "", "response": "approved", "origin": "agent", "agent_id": AGENT}
                )
            document = {
                "session": {
                    "running_summary": f"earlier {planted_secret()}",
                    "summary_through_turn": through,
                },
                "messages": messages,
            }
            status, answer = world.api.call("POST", "/sessions/import", document, user=who)
            self.ok(status, answer, 201)
            sid = answer["session"]["session_id"]
            self.sessions[sid] = SessionModel(who)
            for token in planted:
                self.holders[token].add(("session", sid))
            status, listed = world.api.call("GET", f"/sessions/{sid}/messages", user=who)
            self.ok(status, listed, 200)
            assert all(m["origin"] != "agent" for m in listed["messages"]), listed

        @rule(user=st.integers(0, 1), data=st.data())
        def hand_off(self, user: int, data: Any) -> None:
            who = self.users[user]
            sid = self.any_session(data, who)
            if sid is None:
                return
            before = self.status_of(who, sid)
            note = f"about {self.secret(who, ('session', sid))}"
            status, answer = world.api.call(
                "POST", f"/sessions/{sid}/handoff", {"note": note}, user=who
            )
            if before is None:
                self.ok(status, answer, 404)
            elif before != "OPEN":
                self.ok(status, answer, 409)
            else:
                self.ok(status, answer, 200)
                self.seen(who, answer)

        @rule(data=st.data(), back=st.booleans())
        def agent_answers(self, data: Any, back: bool) -> None:
            status, queue = world.api.agent("GET", "/agent/sessions")
            self.ok(status, queue, 200)
            mine = [s for s in queue["sessions"] if s["session_id"] in self.sessions]
            for listed in mine:
                assert not self.sessions[listed["session_id"]].deleted, listed
                self.seen(self.sessions[listed["session_id"]].owner, listed)
            if not mine:
                return
            chosen = data.draw(st.sampled_from(mine))
            sid, owner = chosen["session_id"], self.sessions[chosen["session_id"]].owner
            status, view = world.api.agent("GET", f"/agent/sessions/{sid}")
            if self.sessions[sid].deleted:
                self.ok(status, view, 404)
                return
            self.ok(status, view, 200, 404)  # handed back or ended since the queue was read
            if status == 200:
                self.seen(owner, view)
            path = f"/agent/sessions/{sid}/" + ("handback" if back else "messages")
            body = None if back else {"content": "a person answers"}
            status, answer = world.api.agent("POST", path, body)
            self.ok(status, answer, 200, 404, 409)
            self.seen(owner, answer)

        @rule(user=st.integers(0, 1), keyed=st.booleans())
        def state_record(self, user: int, keyed: bool) -> None:
            who = self.users[user]
            token = self.secret(who)
            body: dict[str, Any] = {"text": f"My badge number is {token}"}
            if keyed:  # an id of the client's (an id is no text a correction replaces)
                body["record_id"] = f"badge-{token.removeprefix('sec').removesuffix('q')}"
            status, answer = world.api.call("POST", "/memories/records", body, user=who)
            self.ok(status, answer, 200, 201)
            rid = answer["record"]["record_id"]
            self.records.setdefault(rid, RecordModel(who))
            self.holders[token].add(("record", rid))
            self.seen(who, answer)

        @rule(user=st.integers(0, 1), data=st.data())
        def correct_record(self, user: int, data: Any) -> None:
            """A correction replaces the text: the old one is held by the record no more."""
            who = self.users[user]
            mine = [r for r, m in self.records.items() if m.owner == who]
            if not mine:
                return
            rid = data.draw(st.sampled_from(mine))
            token = self.secret(who)
            status, answer = world.api.call(
                "PATCH", f"/memories/records/{rid}", {"text": f"My pass is {token}"}, user=who
            )
            if not self.alive(("record", rid)):
                self.ok(status, answer, 404)
                return
            self.ok(status, answer, 200)
            for holders in self.holders.values():
                holders.discard(("record", rid))
            # A corrected record is the caller's own, whatever happens to its sessions.
            self.records[rid].provenance = []
            self.holders[token].add(("record", rid))
            self.seen(who, answer)

        @rule(user=st.integers(0, 1), data=st.data())
        def export_and_import(self, user: int, data: Any) -> None:
            """An export imported again: a new session holding what the old one said."""
            who = self.users[user]
            sid = self.any_session(data, who)
            if sid is None:
                return
            status, exported = world.api.call("GET", f"/sessions/{sid}/export", user=who)
            if self.sessions[sid].deleted:
                self.ok(status, exported, 404)
                return
            self.ok(status, exported, 200)
            carried = self.seen(who, exported)
            status, answer = world.api.call("POST", "/sessions/import", exported, user=who)
            self.ok(status, answer, 201)
            new = answer["session"]["session_id"]
            self.sessions[new] = SessionModel(who)
            for token in carried:
                self.holders[token].add(("session", new))

        @rule(user=st.integers(0, 1), data=st.data())
        def answer_a_stored_turn(self, user: int, data: Any) -> None:
            """PATCH a turn's response (only a client's pending turn takes one) and rate it."""
            who = self.users[user]
            sid = self.any_session(data, who)
            if sid is None:
                return
            status, listed = world.api.call("GET", f"/sessions/{sid}/messages?limit=100", user=who)
            if self.sessions[sid].deleted:
                self.ok(status, listed, 404)
                return
            self.ok(status, listed, 200)
            if not listed["messages"]:
                return
            turn = data.draw(st.sampled_from(listed["messages"]))
            path = f"/sessions/{sid}/turns/{turn['turn']}"
            status, answer = world.api.call("PATCH", path, {"response": "later answer"}, user=who)
            self.ok(status, answer, 200, 409)
            self.seen(who, answer)
            status, answer = world.api.call("PUT", f"{path}/feedback", {"rating": "up"}, user=who)
            self.ok(status, answer, 200)
            self.seen(who, answer)

        @rule(user=st.integers(0, 1), data=st.data())
        def delete_record(self, user: int, data: Any) -> None:
            who = self.users[user]
            mine = [r for r, m in self.records.items() if m.owner == who]
            if not mine:
                return
            rid = data.draw(st.sampled_from(mine))
            status, answer = world.api.call("DELETE", f"/memories/records/{rid}", user=who)
            self.ok(status, answer, 404 if not self.alive(("record", rid)) else 204)
            self.records[rid].deleted = True

        @rule()
        def consolidate(self) -> None:
            """The consolidation Lambda, for every ended session (as the stream would)."""
            for sid in list(self.sessions):
                stored = world.deps.memory.get_session(sid)
                if stored is None or stored.status != "ENDED":
                    continue
                consolidate_session(
                    sid,
                    memory=world.deps.memory,
                    summarizer=FakeSummarizer(),
                    embedder=FakeEmbedder(),
                    index=world.deps.long_term,  # type: ignore[arg-type]
                    policy=ConsolidationPolicy(max_attempts=1),
                    now=self.now,
                )
                after = world.deps.memory.get_session(sid)
                assert after is not None and after.status in ("CONSOLIDATED", "DELETING"), (
                    after.status if after else None,
                    after.failure_reason if after else None,
                )

        @rule()
        def compact(self) -> None:
            """The compaction Lambda with a short window: rolling summaries of open sessions
            (which their continuations read)."""
            for sid in list(self.sessions):
                compact_session(
                    sid,
                    memory=world.deps.memory,
                    summarizer=FakeSummarizer(),
                    policy=CompactionPolicy(compact_after_turns=2, keep_recent_turns=1),
                )

        @rule()
        def sweep(self) -> None:
            """The idle sweeper, a day later: every open session not with a person ends."""
            sweep_idle_sessions(
                world.deps.memory, now=datetime.now(UTC) + timedelta(days=1), idle_minutes=30
            )

        @rule(user=st.integers(0, 1), data=st.data())
        def another_user_probes(self, user: int, data: Any) -> None:
            who, other = self.users[user], self.users[1 - user]
            sid = self.any_session(data, other)
            if sid is None:
                return
            for method, suffix, body in (
                ("GET", "", None),
                ("GET", "/messages", None),
                ("GET", "/export", None),
                ("POST", "/messages", {"content": "let me in"}),
                ("POST", "/turns", {"input": "let me in"}),
                ("POST", "/handoff", {}),
                ("POST", "/end", None),
                ("DELETE", "", None),
            ):
                status, answer = world.api.call(method, f"/sessions/{sid}{suffix}", body, user=who)
                self.ok(status, answer, 404)
            status, answer = world.api.call("POST", "/sessions", {"continue_from": sid}, user=who)
            self.ok(status, answer, 404)
            for rid, record in self.records.items():
                if record.owner == other:
                    for method in ("GET", "DELETE"):
                        status, answer = world.api.call(
                            method, f"/memories/records/{rid}", user=who
                        )
                        self.ok(status, answer, 404)

        @rule(user=st.integers(0, 1), data=st.data())
        def read(self, user: int, data: Any) -> None:
            """What the user can read back: their sessions, one session's messages and export,
            their records, a search of their memories."""
            who = self.users[user]
            status, listed = world.api.call("GET", "/sessions?limit=100", user=who)
            self.ok(status, listed, 200)
            self.seen(who, listed)
            shown = {s["session_id"] for s in listed["sessions"]}
            assert shown == set(self.live_sessions(who)), (shown, self.live_sessions(who))
            sid = self.any_session(data, who)
            if sid is not None:
                for suffix in ("/messages?limit=100", "/export"):
                    status, answer = world.api.call("GET", f"/sessions/{sid}{suffix}", user=who)
                    self.ok(status, answer, 404 if self.sessions[sid].deleted else 200)
                    self.seen(who, answer)
            status, records = world.api.call("GET", "/memories/records?limit=100", user=who)
            self.ok(status, records, 200)
            for record in records["records"]:
                known = self.records.get(record["record_id"])
                if known is None:  # drawn by consolidation: it lives with its sessions
                    provenance = [p["session_id"] for p in record["provenance"]]
                    known = self.records[record["record_id"]] = RecordModel(who, False, provenance)
                assert known.owner == who and self.alive(("record", record["record_id"])), record
                self.seen(who, record)
                for token in SECRET.findall(record["text"]):
                    self.holders[token].add(("record", record["record_id"]))
            planted = [t for t, owner in self.owner.items() if owner == who]
            if planted:
                query = data.draw(st.sampled_from(planted))
                for path in (f"/memories?q={query}", f"/memories/records?q={query}"):
                    status, found = world.api.call("GET", path, user=who)
                    self.ok(status, found, 200)
                    self.seen(who, found)

        # --- after every step ---------------------------------------------------------------------

        @invariant()
        def turns_are_numbered_from_1_without_gaps_and_no_event_holds_a_secret(self) -> None:
            for sid, model in list(self.sessions.items())[-3:]:
                status, answer = world.api.call(
                    "GET", f"/sessions/{sid}/messages?limit=100", user=model.owner
                )
                if model.deleted:
                    self.ok(status, answer, 404)
                    continue
                self.ok(status, answer, 200)
                self.seen(model.owner, answer)
                status, session = world.api.call("GET", f"/sessions/{sid}", user=model.owner)
                self.ok(status, session, 200)
                numbers = [m["turn"] for m in answer["messages"]]
                assert numbers == list(range(1, session["session"]["num_turns"] + 1)), numbers
            if self.events_path.exists():
                events = self.events_path.read_text(encoding="utf-8")
                assert not SECRET.search(events), "a hand-off event holds what a user wrote"

    run_state_machine_as_test(
        Calls,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            database=None,
        ),
    )
