"""What a person told it, used when it matters: local mode over HTTP, as a person uses it.

Each entry of the data (`../shared/data/implied-dev.jsonl`, see its README) is a person who
tells one fact about themselves in a short session among small talk, sometimes with a passing
remark that must not become a lasting fact, and later asks, in a new session, a question that
needs the fact but shares no word with it. Everything goes through local mode whole: the HTTP
gateway, the real handlers, the stream poller (consolidation when a session ends) and the
offline models, on a DynamoDB Local of its own.

Two ways to tell the facts:

* `forty`: forty people, each their own user: one telling session, then each question in a new
  session.
* `busy`: one person tells all forty facts over eight sessions (five to a session, with the same
  small talk and passing remarks), then asks every question, each in a new session: the profile
  holds forty facts, and what fits its budget is what its ranking keeps.

Per question: `used` (a word of `expect` is in the answer or in the memories the turn names: its
sources, as the page's "Memories used" shows them) and `in_prompt` (in the memory the model's
prompt held: the profile block or auto-recall's block, read from the stored prompt). Per
person: passing remarks kept as lasting records (an ACTIVE record without expiry
holding a word of `transient_expect_absent`: a fact, a preference or an open question) and,
apart, in session summaries (episodic memory, what happened in a session, which issue 44 lets
keep them: they are counted, not held against it), compound statements split (no record
made of it holds a word only the first fact has together with a word only the second has, and
each fact is in some record; a record a later statement superseded was made all the same: the
busy person, one profile of forty people's facts, moves house). Memory tokens per turn are
reported apart: the profile block's and episodic memory's (auto-recall's block).

    python -m bench.person --data ../shared/data/implied-dev.jsonl [--mode forty|busy|both]
        [--profile-budgets 0,100,200,300] [--json] [--show]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SESSION_SIZE = 5  # facts told in one session by the busy person


@dataclass
class Person:
    id: str
    said: str
    ask: str
    expect: list[str]
    before: list[str]
    after: list[str]
    transient: str | None = None
    transient_absent: list[str] = field(default_factory=list)
    ask2: str | None = None
    expect2: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Person:
        return cls(
            id=str(data["id"]),
            said=str(data["said"]),
            ask=str(data["ask"]),
            expect=[str(w) for w in data["expect"]],
            before=[str(s) for s in data.get("before", [])],
            after=[str(s) for s in data.get("after", [])],
            transient=data.get("transient"),
            transient_absent=[str(w) for w in data.get("transient_expect_absent", [])],
            ask2=data.get("ask2"),
            expect2=[str(w) for w in data.get("expect2", [])],
        )

    def questions(self) -> list[tuple[str, list[str]]]:
        asked = [(self.ask, self.expect)]
        if self.ask2:
            asked.append((self.ask2, self.expect2))
        return asked


def load(path: Path) -> list[Person]:
    return [Person.of(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def mentions(text: str, words: list[str]) -> bool:
    """A word of `words` at the start of a word of `text`, case folded (the data's rule)."""
    folded = text.casefold()
    return any(re.search(r"(?<!\w)" + re.escape(w.casefold()), folded) for w in words)


# --- local mode ---------------------------------------------------------------------------------


@contextmanager
def local_mode(env: Mapping[str, str]) -> Iterator[Any]:
    """Local mode whole (DynamoDB Local, the gateway on a free port, the poller stepped by
    hand) in a temporary folder, with `env` on top of local mode's defaults."""
    from chatmemory import schema
    from local.config import apply_local_defaults
    from local.dynamodb_local import free_port
    from local.stack import LocalStack, StackOptions

    saved = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        port = free_port()
        os.environ.update(env)
        os.environ[schema.ENV_STORE_PROMPT] = "true"
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
        apply_local_defaults(dynamodb_port=port, state_dir=state)
        options = StackOptions(
            state_dir=state,
            api_port=0,
            dynamodb_port=port,
            sweep_seconds=0,
            poll_in_background=False,
            retry_backoff_seconds=0.0,
            # The models loaded before the first message (under load, a first message that
            # loads them may run out of its request's time).
            warm_models=True,
            workers=1,
        )
        stack = LocalStack(options, echo=lambda _: None).start()
        try:
            _warm_up(stack)
            yield stack
        finally:
            stack.stop()
            os.environ.clear()
            os.environ.update(saved)


def _warm_up(stack: Any) -> None:
    """One message of a user of its own: the first message of a process loads what later ones
    reuse (the embedding model, the small-talk phrasings' vectors)."""
    client = Client(stack, "warm-up")
    session_id = client.call("POST", "/sessions", {})["session"]["session_id"]
    client.say(session_id, "What should I cook for dinner on Friday?")


# How often a message is sent (the same client_message_id) before the run gives up.
ATTEMPTS = 5


class Unavailable(RuntimeError):
    """A 503: the request ran out of time (retry it with the same client_message_id)."""


class Client:
    """The API as a person's page calls it."""

    def __init__(self, stack: Any, user: str) -> None:
        from urllib.parse import urlsplit

        self.stack = stack
        self.user = user
        parts = urlsplit(stack.gateway.url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80

    def call(self, method: str, path: str, body: Any = None) -> Any:
        import http.client

        connection = http.client.HTTPConnection(self.host, self.port, timeout=180)
        headers = {"Content-Type": "application/json", "X-User-Id": self.user}
        connection.request(method, path, None if body is None else json.dumps(body), headers)
        answer = connection.getresponse()
        text = answer.read().decode()
        connection.close()
        if answer.status == 503:
            raise Unavailable(f"{method} {path}: {text[:300]}")
        if not 200 <= answer.status < 300:
            raise RuntimeError(f"{method} {path}: {answer.status} {text[:300]}")
        return json.loads(text) if text else None

    def session(self, lines: list[str]) -> str:
        session_id = self.call("POST", "/sessions", {})["session"]["session_id"]
        for line in lines:
            self.say(session_id, line)
        return str(session_id)

    def say(self, session_id: str, text: str) -> dict[str, Any]:
        """Send a message as a client should: with an id, sent again with it when the answer
        did not come (a 503, or no answer in time: a loaded machine)."""
        body = {"content": text, "client_message_id": uuid.uuid4().hex}
        for attempt in range(ATTEMPTS):
            try:
                answer = self.call("POST", f"/sessions/{session_id}/messages", body)
                return dict(answer["turn"])
            except (Unavailable, TimeoutError) as failure:
                if attempt == ATTEMPTS - 1:
                    raise RuntimeError(f"not answered: {text!r}") from failure
                time.sleep(1)
        raise AssertionError("unreachable")

    def end(self, session_id: str) -> None:
        self.call("POST", f"/sessions/{session_id}/end", {})
        self.stack.poller.drain(timeout=300)

    def records(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        token = None
        while True:
            query = "?limit=100" + (f"&next_token={token}" if token else "")
            page = self.call("GET", f"/memories/records{query}")
            found += page["records"]
            token = page.get("next_token")
            if not token:
                return found

    def prompt(self, session_id: str, turn: int) -> str:
        from chatmemory import wiring

        stored = wiring.short_term_memory().get_turn(session_id, turn)
        return (stored.prompt or "") if stored else ""


def lasting(
    records: list[dict[str, Any]], types: tuple[str, ...] = ("fact", "preference")
) -> list[str]:
    """The texts of the lasting records of `types`: ACTIVE ones that do not expire."""
    return [
        r["text"]
        for r in records
        if r["status"] == "ACTIVE" and r["type"] in types and not r.get("expires_at")
    ]


def made(records: list[dict[str, Any]]) -> list[str]:
    """The texts of the facts and preferences extraction made that are still kept: those that
    hold now and those a later statement superseded (history)."""
    return [
        r["text"]
        for r in records
        if r["status"] in ("ACTIVE", "SUPERSEDED") and r["type"] in ("fact", "preference")
    ]


# The records of what the user is (the profile): a passing remark must be in none of them.
LASTING_TYPES = ("fact", "preference", "open_question")


def remark_kept(person: Person, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the person's passing remark was kept: the lasting records holding its words, and
    apart the session summaries (episodic memory) that do."""

    def holding(types: tuple[str, ...]) -> list[str]:
        return [t for t in lasting(records, types) if mentions(t, person.transient_absent)]

    return {
        "id": person.id,
        "remark": person.transient,
        "kept_in": holding(LASTING_TYPES),
        "in_summaries": holding(("summary",)),
    }


def told(person: Person) -> list[str]:
    """What the person says in their telling session, in order."""
    middle = [person.said] + ([person.transient] if person.transient else [])
    return [*person.before, *middle, *person.after]


def split_ok(person: Person, texts: list[str]) -> bool:
    """Two facts in one sentence became two records: one holds a word only the first fact has
    and none only the second has, and another one holds a word only the second has (a name both
    facts share, "My sister Hannah lives in Melbourne and her birthday's 3 March", may be in
    both)."""
    only_first = [w for w in person.expect if w not in person.expect2]
    only_second = [w for w in person.expect2 if w not in person.expect]
    first = [t for t in texts if mentions(t, only_first) and not mentions(t, only_second)]
    second = [t for t in texts if mentions(t, only_second)]
    return bool(first) and any(t not in first for t in second)


# --- the prompt's memory ------------------------------------------------------------------------


def memory_parts(prompt: str) -> tuple[str, str]:
    """The profile block and auto-recall's block of a stored prompt ("" where absent)."""
    from chatmemory.schema import (
        PROMPT_MEMORY_FOOTER,
        PROMPT_MEMORY_HEADER,
        PROMPT_PROFILE_FOOTER,
        PROMPT_PROFILE_HEADER,
    )

    def between(start: str, end: str) -> str:
        if start not in prompt:
            return ""
        head = prompt.index(start)
        stop = prompt.find(end, head)
        return prompt[head : stop + len(end) if stop >= 0 else len(prompt)]

    return (
        between(PROMPT_PROFILE_HEADER, PROMPT_PROFILE_FOOTER),
        between(PROMPT_MEMORY_HEADER, PROMPT_MEMORY_FOOTER),
    )


def ask(client: Client, question: str, expect: list[str]) -> dict[str, Any]:
    from chatmemory.services.prompt import estimate_tokens

    session_id = client.call("POST", "/sessions", {})["session"]["session_id"]
    turn = client.say(session_id, question)
    named = " \n".join(str(s.get("title") or "") for s in turn.get("sources") or [])
    profile, episodic = memory_parts(client.prompt(session_id, turn["turn"]))
    return {
        "question": question,
        "used": mentions(f"{turn.get('response') or ''}\n{named}", expect),
        "in_prompt": mentions(f"{profile}\n{episodic}", expect),
        "in_answer": mentions(turn.get("response") or "", expect),
        "profile_tokens": estimate_tokens(profile) if profile else 0,
        "episodic_tokens": estimate_tokens(episodic) if episodic else 0,
    }


# --- the two ways ---------------------------------------------------------------------------------


def run_forty(stack: Any, people: list[Person]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    compound: list[bool] = []
    for person in people:
        client = Client(stack, f"person-{person.id}")
        client.end(client.session(told(person)))
        records = client.records()
        if person.transient:
            kept.append(remark_kept(person, records))
        if person.ask2:
            compound.append(split_ok(person, made(records)))
        for question, expect in person.questions():
            rows.append({"id": person.id} | ask(client, question, expect))
    return summary(rows, kept, compound)


def run_busy(stack: Any, people: list[Person]) -> dict[str, Any]:
    client = Client(stack, "busy-person")
    for start in range(0, len(people), SESSION_SIZE):
        group = people[start : start + SESSION_SIZE]
        first, last = group[0], group[-1]
        middle = [
            line
            for person in group
            for line in [person.said] + ([person.transient] if person.transient else [])
        ]
        client.end(client.session([*first.before, *middle, *last.after]))
    records = client.records()
    texts = lasting(records)
    kept = [remark_kept(p, records) for p in people if p.transient]
    compound = [split_ok(p, made(records)) for p in people if p.ask2]
    rows = [
        {"id": p.id} | ask(client, question, expect)
        for p in people
        for question, expect in p.questions()
    ]
    return summary(rows, kept, compound) | {"lasting_records": len(texts)}


def summary(
    rows: list[dict[str, Any]], kept: list[dict[str, Any]], compound: list[bool]
) -> dict[str, Any]:
    def p95(values: list[int]) -> int:
        ordered = sorted(values) or [0]
        return ordered[min(len(ordered) - 1, int(0.95 * len(ordered) + 0.999) - 1)]

    profile = [r["profile_tokens"] for r in rows]
    episodic = [r["episodic_tokens"] for r in rows]
    return {
        "questions": len(rows),
        "used": sum(r["used"] for r in rows),
        "in_prompt": sum(r["in_prompt"] for r in rows),
        "in_answer": sum(r["in_answer"] for r in rows),
        "remarks": len(kept),
        "remarks_kept": sum(bool(k["kept_in"]) for k in kept),
        "remarks_in_summaries": sum(bool(k["in_summaries"]) for k in kept),
        "compound": len(compound),
        "compound_split": sum(compound),
        "profile_tokens_p50": int(statistics.median(profile or [0])),
        "profile_tokens_p95": p95(profile),
        "episodic_tokens_p50": int(statistics.median(episodic or [0])),
        "episodic_tokens_p95": p95(episodic),
        "missed": [r["question"] for r in rows if not r["used"]],
        "not_in_answer": [r["question"] for r in rows if r["used"] and not r["in_answer"]],
        "remarks_kept_in": [k for k in kept if k["kept_in"]],
    }


def run(data: Path, modes: list[str], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    people = load(data)
    out: dict[str, Any] = {}
    for mode in modes:
        started = time.perf_counter()
        with local_mode(env or {}) as stack:
            result = run_forty(stack, people) if mode == "forty" else run_busy(stack, people)
        out[mode] = result | {"seconds": round(time.perf_counter() - started, 1)}
    return out


def _print(mode: str, result: dict[str, Any], show: bool) -> None:
    r = result
    print(
        f"{mode:<6} used {r['used']}/{r['questions']} (in prompt {r['in_prompt']}, in the offline "
        f"answer {r['in_answer']}); passing remarks kept {r['remarks_kept']}/{r['remarks']} "
        f"(in session summaries {r['remarks_in_summaries']}); "
        f"compound split {r['compound_split']}/{r['compound']}; memory tokens per turn: profile "
        f"p50 {r['profile_tokens_p50']} p95 {r['profile_tokens_p95']}, episodic p50 "
        f"{r['episodic_tokens_p50']} p95 {r['episodic_tokens_p95']}"
        + (f"; {r['lasting_records']} lasting records" if "lasting_records" in r else "")
        + f" ({r['seconds']} s)"
    )
    if show:
        for question in r["missed"]:
            print(f"  missed: {question}")
        for question in r["not_in_answer"]:
            print(f"  not in the offline answer: {question}")
        for remark in r["remarks_kept_in"]:
            print(f"  kept: {remark['remark']!r} in {remark['kept_in']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/implied-dev.jsonl"))
    parser.add_argument("--mode", choices=("forty", "busy", "both"), default="both")
    parser.add_argument(
        "--profile-budgets",
        default="",
        help="comma-separated PROFILE_TOKEN_BUDGET values to run with (default: the setting's)",
    )
    parser.add_argument(
        "--show",
        action="store_true",
        help="list missed questions, those the offline answer did not show, and remarks kept",
    )
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    modes = ["forty", "busy"] if args.mode == "both" else [args.mode]
    budgets = [b.strip() for b in args.profile_budgets.split(",") if b.strip()] or [None]
    results: dict[str, Any] = {}
    for budget in budgets:
        env = {} if budget is None else {"PROFILE_TOKEN_BUDGET": budget}
        result = run(args.data, modes, env)
        key = "default" if budget is None else f"profile_budget_{budget}"
        results[key] = result
        if budget is not None:
            print(f"PROFILE_TOKEN_BUDGET={budget}")
        for mode, values in result.items():
            _print(mode, values, args.show)
    if args.json:
        trimmed = {
            key: {
                mode: {
                    k: v
                    for k, v in values.items()
                    if k not in ("missed", "not_in_answer", "remarks_kept_in")
                }
                for mode, values in result.items()
            }
            for key, result in results.items()
        }
        print(json.dumps(trimmed))


if __name__ == "__main__":
    main()
