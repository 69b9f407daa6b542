"""`make smoke`: every route and stream path of a running chat memory, checked end to end.

Against a deployed stack (`make smoke STACK=ChatMemory-dev`): the API URL, the user pool and
the operator functions come from the stack's outputs; two temporary Cognito users are created
(a user, and an agent in the agents' group) and deleted at the end with everything they stored.
Your credentials need cloudformation:DescribeStacks, the cognito-idp Admin* calls on the pool,
and lambda:InvokeFunction on the Ingest function. With auth=iam the user's requests are signed
with your own credentials (SigV4) and the agent's checks are skipped.

Against local mode (`make smoke ARGS="--url http://127.0.0.1:8000"`, what the test suite does):
callers are X-User-Id headers, the agent is `agent` (make run's --agents), documents are
ingested in-process into local mode's index.

Each check prints PASS or FAIL (with the request that failed) or SKIP (with why); the exit
code is 1 when one failed. What it leaves behind: nothing of the temporary users (their data
is forgotten, the users deleted), and one verified document, `chatmemory-smoke.md`, which every
run overwrites.
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests
from chatmemory_client import ChatMemoryClient
from chatmemory_client.errors import ChatMemoryError, NotFound

SMOKE_DOC = "chatmemory-smoke.md"
SMOKE_TEXT = (
    "# Smoke test policy\n\nThe smoke test's lighthouse keeper is called Ormond.\n\n"
    "Ormond lights the lamp every evening at nine."
)


class Failed(Exception):
    """A check's expectation did not hold."""


@dataclass
class Recorder:
    """The last HTTP exchange of a client: what a failed check prints."""

    last: str = ""

    def hook(self, answer: requests.Response, *args: Any, **kwargs: Any) -> None:
        body = answer.text[:300].replace("\n", " ")
        self.last = f"{answer.request.method} {answer.request.url} -> {answer.status_code} {body}"

    def session(self) -> requests.Session:
        http = requests.Session()
        http.hooks["response"].append(self.hook)
        return http


@dataclass
class Run:
    user: ChatMemoryClient
    agent: ChatMemoryClient | None
    recorder: Recorder
    ingest: Callable[[], None] | None
    wait_seconds: float
    results: list[tuple[str, str, str]] = field(default_factory=list)  # (status, name, detail)
    state: dict[str, Any] = field(default_factory=dict)

    def check(self, name: str, action: Callable[[], str], *, needs: tuple[str, ...] = ()) -> None:
        missing = [n for n in needs if n not in self.state]
        if missing:
            self._report("SKIP", name, f"needs {', '.join(missing)}")
            return
        started = time.monotonic()
        self.recorder.last = ""
        try:
            detail = action()
        except (ChatMemoryError, Failed, requests.RequestException, AssertionError) as error:
            request = f"\n        request: {self.recorder.last}" if self.recorder.last else ""
            self._report("FAIL", name, f"{error}{request}")
            return
        self._report("PASS", name, f"{detail} ({time.monotonic() - started:.1f} s)")

    def _report(self, status: str, name: str, detail: str) -> None:
        self.results.append((status, name, detail))
        print(f"{status}  {name}: {detail}", flush=True)

    def until(self, what: str, probe: Callable[[], Any]) -> Any:
        """Poll `probe` until it returns something true (stream paths are asynchronous)."""
        deadline = time.monotonic() + self.wait_seconds
        while True:
            found = probe()
            if found:
                return found
            if time.monotonic() > deadline:
                raise Failed(f"{what}: not within {self.wait_seconds:.0f} s")
            time.sleep(2.0)


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failed(message)


def checks(run: Run) -> None:
    """The checks, in order; each stores what later ones need in run.state."""
    user, s = run.user, run.state
    word = secrets.token_hex(3)

    def reachable() -> str:
        sessions = list(user.list_sessions(page_size=5))
        s["api"] = True
        return f"GET /sessions answered ({len(sessions)} sessions)"

    def chat() -> str:
        session = user.create_session("smoke test")
        s["session"] = session.session_id
        first = user.send_message(session.session_id, f"My smoke code word is {word}.")
        second = user.send_message(session.session_id, "And my favourite tea is oolong.")
        expect(bool(first.reply) and bool(second.reply), "a message was not answered")
        turns = list(user.list_turns(session.session_id))
        expect([t.turn for t in turns] == [1, 2], f"turns {[t.turn for t in turns]}")
        user.set_feedback(session.session_id, 2, "up")
        expect(user.get_turn(session.session_id, 2).feedback is not None, "feedback not kept")
        return "POST /sessions, two messages answered, listed, rated"

    def stored_turn() -> str:
        stored = user.store_turn(s["session"], "What did my own agent say?")
        done = user.complete_turn(s["session"], stored.turn, response="It said hello.")
        expect(done.response == "It said hello.", "the stored turn did not keep its answer")
        return f"POST /turns and PATCH turn {stored.turn}"

    def profile() -> str:
        record = user.remember("I prefer window seats on trains.")
        listed = [r.record_id for r in user.list_records()]
        expect(record.record_id in listed, "the new record is not listed")
        found = user.search_records("train seats")
        expect(any(r.record_id == record.record_id for r in found), "search missed the record")
        corrected = user.correct_record(record.record_id, "I prefer aisle seats on trains.")
        expect("aisle" in corrected.text, "the correction was not kept")
        user.delete_record(record.record_id)
        try:
            user.get_record(record.record_id)
        except NotFound:
            return "records created, listed, searched, corrected and deleted (then 404)"
        raise Failed("a deleted record is still readable")

    def remember_command() -> str:
        turn = user.send_message(s["session"], "/remember I am allergic to cats")
        expect(turn.intent == "remember", f"intent {turn.intent}")
        return "/remember answered"

    def handoff() -> str:
        assert run.agent is not None
        session = user.create_session("smoke hand-off")
        user.send_message(session.session_id, "Hello, I need help with an order.")
        waiting = user.request_handoff(session.session_id, "smoke test")
        expect(waiting.handoff_state == "WAITING", f"handoff_state {waiting.handoff_state}")
        held = user.send_message(session.session_id, "Is somebody there?")
        expect(held.for_agent, "a message while handed off was answered by the bot")
        queue = [q.session_id for q in run.agent.list_handoffs(state="WAITING")]
        expect(session.session_id in queue, "the session is not in the agents' queue")
        run.agent.read_handoff(session.session_id)
        reply = run.agent.agent_reply(session.session_id, "Hi, this is the smoke agent.")
        expect(reply.origin == "agent", f"origin {reply.origin}")
        run.agent.hand_back(session.session_id)
        after = user.send_message(session.session_id, "Thanks, bye.")
        expect(bool(after.reply) and not after.for_agent, "the bot did not answer again")
        user.delete_session(session.session_id)
        return "handed off, held for the agent, queued, answered by the agent, handed back"

    def export_import() -> str:
        document = user.export_session(s["session"])
        copy = user.import_session(document)
        expect(copy.num_turns == len(document["messages"]), "the import lost messages")
        user.delete_session(copy.session_id)
        return f"exported {len(document['messages'])} messages and imported them"

    def consolidated() -> str:
        user.end_session(s["session"])
        started = time.monotonic()
        status = run.until(
            "consolidation",
            lambda: (
                user.get_session(s["session"]).status in ("CONSOLIDATED", "FAILED")
                and user.get_session(s["session"]).status
            ),
        )
        expect(status == "CONSOLIDATED", f"the session ended {status}")
        s["consolidated"] = True
        return f"ended, consolidated by the stream after {time.monotonic() - started:.0f} s"

    def recalled() -> str:
        memories = run.until(
            "recall",
            lambda: [
                m
                for m in user.search_memories(f"smoke code word {word}")
                if m.session_id == s["session"]
            ],
        )
        session = user.create_session("smoke recall")
        s["recall_session"] = session.session_id
        past = user.send_message(session.session_id, "/past what was my smoke code word?")
        cited = [src.id for src in past.sources]
        expect(s["session"] in cited, f"/past cited {cited}")
        return f"GET /memories found it (score {memories[0].score:.2f}); /past cited it"

    def continued() -> str:
        follow = user.continue_session(s["session"])
        turn = user.send_message(follow.session_id, "Back again.")
        expect(bool(turn.reply), "the continuation was not answered")
        s["continued"] = follow.session_id
        return "continue_from an ended session, answered"

    def verified() -> str:
        assert run.ingest is not None
        run.ingest()
        turn = user.send_message(s["recall_session"], "/verified who is the lighthouse keeper?")
        cited = [src.doc_id for src in turn.sources]
        expect(SMOKE_DOC in cited, f"/verified cited {cited}")
        return f"{SMOKE_DOC} ingested and cited"

    def deleted() -> str:
        user.delete_session(s["continued"])
        user.delete_session(s["session"])
        try:
            user.get_session(s["session"])
            raise Failed("a deleted session is still readable")
        except NotFound:
            pass
        left = [
            m
            for m in user.search_memories(f"smoke code word {word}")
            if m.session_id == s["session"]
        ]
        expect(not left, "a deleted session is still recalled")
        run.until("the purge", lambda: user.deletion_status().sessions_pending == 0)
        return "DELETE /sessions: not readable, not recalled, purged"

    def forgotten() -> str:
        user.forget_everything()
        expect(not list(user.list_sessions()), "sessions listed after DELETE /memories")
        run.until("the forget's purge", lambda: user.deletion_status().complete)
        return "DELETE /memories: nothing listed, purge complete"

    run.check("API reachable as the user", reachable)
    run.check("chat", chat, needs=("api",))
    run.check("store-only turn", stored_turn, needs=("session",))
    run.check("profile records", profile, needs=("api",))
    run.check("/remember", remember_command, needs=("session",))
    if run.agent is None:
        run._report("SKIP", "hand-off to a person", "no agent identity (auth=iam)")
    else:
        run.check("hand-off to a person", handoff, needs=("api",))
    run.check("export and import", export_import, needs=("session",))
    run.check("end and consolidation (sessions stream)", consolidated, needs=("session",))
    run.check("recall", recalled, needs=("consolidated",))
    run.check("continuation", continued, needs=("consolidated",))
    if run.ingest is None:
        run._report("SKIP", "/verified", "no way to ingest a document here")
    else:
        run.check("/verified", verified, needs=("recall_session",))
    run.check("delete a session (purge stream)", deleted, needs=("continued",))
    run.check("forget everything (users stream)", forgotten, needs=("api",))


# --- where it runs ------------------------------------------------------------------------------


def _local(args: argparse.Namespace, recorder: Recorder) -> tuple[Run, Callable[[], None]]:
    user_id = f"smoke-{uuid.uuid4().hex[:8]}"
    user = ChatMemoryClient(args.url, user_id=user_id, session=recorder.session())
    agent = ChatMemoryClient(args.url, user_id=args.agent, session=recorder.session())

    def ingest() -> None:
        from chatmemory import wiring
        from chatmemory.services.background.ingest import SourceDocument, ingest_documents
        from local.config import apply_local_defaults

        apply_local_defaults()
        index = wiring.long_term_index()
        assert index is not None
        ingest_documents(
            [SourceDocument(doc_id=SMOKE_DOC, text=SMOKE_TEXT, title="Smoke test policy")],
            embedder=wiring.embedder(),
            index=index,
        )

    run = Run(user, agent, recorder, ingest if args.ingest else None, args.wait)
    return run, lambda: None


def _stack(args: argparse.Namespace, recorder: Recorder) -> tuple[Run, Callable[[], None]]:
    import json

    import boto3

    outputs = {
        o["OutputKey"]: o["OutputValue"]
        for o in boto3.client("cloudformation")
        .describe_stacks(StackName=args.stack)["Stacks"][0]
        .get("Outputs", [])
    }
    url = outputs["ApiUrl"]
    cleanup: list[Callable[[], None]] = []
    ingest = None
    if outputs.get("IngestFunctionName"):

        def ingest() -> None:
            answer = boto3.client("lambda").invoke(
                FunctionName=outputs["IngestFunctionName"],
                Payload=json.dumps(
                    {"documents": [{"doc_id": SMOKE_DOC, "text": SMOKE_TEXT, "title": "Smoke"}]}
                ).encode(),
            )
            if answer.get("FunctionError"):
                raise Failed(f"the Ingest function failed: {answer['Payload'].read()[:300]!r}")

    if "UserPoolId" not in outputs:
        user = ChatMemoryClient(url, iam=True, session=recorder.session())
        return Run(user, None, recorder, ingest, args.wait), lambda: None
    cognito = boto3.client("cognito-idp")
    pool, client_id = outputs["UserPoolId"], outputs["UserPoolClientId"]

    def temporary_user(group: str | None) -> str:
        name = f"smoke-{uuid.uuid4().hex[:10]}@example.invalid"
        password = secrets.token_urlsafe(18) + "aA1!"
        cognito.admin_create_user(
            UserPoolId=pool,
            Username=name,
            MessageAction="SUPPRESS",
            UserAttributes=[
                {"Name": "email", "Value": name},
                {"Name": "email_verified", "Value": "true"},
            ],
        )
        cleanup.append(lambda: cognito.admin_delete_user(UserPoolId=pool, Username=name))
        cognito.admin_set_user_password(
            UserPoolId=pool, Username=name, Password=password, Permanent=True
        )
        if group:
            cognito.admin_add_user_to_group(UserPoolId=pool, Username=name, GroupName=group)
        tokens = cognito.initiate_auth(
            ClientId=client_id,
            AuthFlow="USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": name, "PASSWORD": password},
        )
        return str(tokens["AuthenticationResult"]["IdToken"])

    user = ChatMemoryClient(url, token=temporary_user(None), session=recorder.session())
    agent = ChatMemoryClient(
        url, token=temporary_user(outputs["AgentGroupName"]), session=recorder.session()
    )

    def remove() -> None:
        for step in reversed(cleanup):
            step()

    return Run(user, agent, recorder, ingest, args.wait), remove


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", help="a deployed stack's name (ChatMemory-dev)")
    where.add_argument("--url", help="local mode's URL (http://127.0.0.1:8000)")
    parser.add_argument("--agent", default="agent", help="local mode: the agent's X-User-Id")
    parser.add_argument(
        "--no-ingest", dest="ingest", action="store_false", help="local mode: skip /verified"
    )
    parser.add_argument(
        "--wait", type=float, default=300.0, help="seconds a stream path may take (default 300)"
    )
    args = parser.parse_args(argv)
    recorder = Recorder()
    started = time.monotonic()
    run, cleanup = _stack(args, recorder) if args.stack else _local(args, recorder)
    try:
        checks(run)
    finally:
        with contextlib.suppress(ChatMemoryError):
            run.user.forget_everything()
        cleanup()
    counts = {k: sum(1 for r in run.results if r[0] == k) for k in ("PASS", "FAIL", "SKIP")}
    print(
        f"smoke: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped "
        f"in {time.monotonic() - started:.0f} s"
    )
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
