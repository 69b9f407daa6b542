"""Turn overhead and cost growth: DynamoDB requests, consumed capacity and handler latency per
chat turn at turn 10, 100 and 1,000, against DynamoDB Local with a model of zero latency.

Every turn is realistic: a ~60-word message and a ~80-word answer (made here from fixed sentences
with a seeded generator, the same for every variant and every run). Each goes through the real
chat Lambda handler (an API Gateway proxy event, Powertools routing and validation, the service,
the DynamoDB adapter). Requests and capacity are read off the boto3 client
(ReturnConsumedCapacity=TOTAL is added to every call that supports it). The same run drives a
naive baseline that reads the whole history each turn, as the original design did, and reports
the ratio.

`langchain-dynamodb`: the same texts through LangChain's DynamoDBChatMessageHistory
(langchain-community) behind a RunnableWithMessageHistory, as LangChain chats on AWS commonly
keep their history: one item per session in the table its documentation asks for, read twice and
rewritten whole every turn, counted the same way on its own client. It fails once that item would
pass DynamoDB's 400 KB: the turn and the error are reported, and a few turns after it show what
the chain does then (it logs a warning, answers, and the stored history stops growing).

Auto-recall on and off (`--recall-turns`, 0 to skip): the same messages through the same handler
with long-term memory on (the embedded index holding 200 memories of 20 past sessions, the
offline MiniLM embedder), once with AUTO_RECALL on and once off, alternating turn by turn.
Reported per turn: DynamoDB requests, embedding calls, index searches, p50/p95 latency, and the
ratio on/off. The messages alternate between one that matches a memory (the live check then
adds a BatchGetItem) and one that matches nothing.

    python -m bench.turns [--turns 10,100,1000] [--sample 10] [--recall-turns 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import tempfile
import time
import warnings as python_warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from uuid import uuid4

from chatmemory import wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.domain import Turn
from chatmemory.ports import Generation, GenerationOptions, Piece, TextGenerator, whole
from chatmemory.settings import Settings
from local.dynamodb_local import DynamoDBLocal, ensure_tables, free_port, table_names
from local.gateway import load_routes, proxy_event
from local.lambda_context import LocalLambdaContext

# Operations that accept ReturnConsumedCapacity.
_CAPACITY_OPS = {
    "GetItem", "Query", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems",
    "TransactGetItems", "BatchWriteItem", "BatchGetItem", "Scan",
}  # fmt: skip


class ZeroLatencyModel(TextGenerator):
    """A text model that answers at once, so only the memory work is measured."""

    name = "zero-latency"
    context_tokens = 512
    reply = "ok, noted."  # the bench sets each turn's answer here

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        return whole(Generation(self.reply, self.name))


# Sentences that realistic turns are drawn from: a user's news and questions, an assistant's
# answers. Made up here, so the bench needs no data set.
_USER_SENTENCES = [
    "We planted tomatoes and basil in the raised beds last weekend and the seedlings look strong.",
    "My sister Ana moved to Porto for a job at the children's hospital and loves the river.",
    "I am training for a half marathon in October and run four times a week before work.",
    "We are adopting a rescue greyhound named Biscuit next month, so the garden needs a fence.",
    "The kitchen renovation is delayed again because half of the tiles arrived broken.",
    "I started learning Japanese with an app, twenty minutes every morning on the train.",
    "Our trip to Lisbon is booked for the first week of May and we still need a hotel.",
    "My daughter's school play is on Friday evening and she plays the fox in the second act.",
    "I switched to decaf in the afternoon because coffee was keeping me awake at night.",
    "The book club is reading a long novel about a lighthouse keeper and his three daughters.",
    "Could you help me plan the week so that I still have time for the garden and the dog?",
    "What would you suggest for a birthday present for my father, who likes maps and trains?",
    "I keep forgetting to water the herbs on the balcony when the weather turns hot.",
    "Next Tuesday I have a job interview at a small design studio near the old harbour.",
]
_ANSWER_SENTENCES = [
    "That sounds like a good plan, and it leaves some room in case the weather changes.",
    "Tomatoes like a sunny spot and deep watering twice a week rather than a little every day.",
    "A half marathon plan usually adds one longer run each week and keeps the other runs easy.",
    "Greyhounds are calm indoors and need a secure fence, because they can run very fast.",
    "For the tiles, ask the supplier for a photo report of the damage and a firm delivery date.",
    "Twenty minutes a day adds up quickly, and reading short stories aloud helps with kana.",
    "In May Lisbon is busy with festivals, so booking a hotel near the centre early is wise.",
    "A small bouquet after the play is a classic gesture, and a photo with the cast is a keepsake.",
    "Caffeine can stay in the body for many hours, so an earlier cut-off often helps sleep.",
    "A lighthouse novel sounds lovely for a book club, with plenty to talk about at the end.",
    "You could block two evenings for the garden and take the dog along on the weekend walk.",
    "An old railway map in a frame or a ticket for a heritage train ride could make him happy.",
    "A self-watering pot or a reminder on the phone can keep the balcony herbs alive in summer.",
    "Before the interview, prepare two projects to show and a question about how the team works.",
]


def _compose(sentences: Sequence[str], words: int, seed: str) -> str:
    """`words` words of sentences in a seeded order: the same text for the same seed."""
    order = random.Random(seed).sample(sentences, len(sentences))
    drawn = [word for sentence in order for word in sentence.split()]
    return " ".join(drawn[:words]).rstrip(",.?") + "."


def user_message(turn: int) -> str:
    """The user's message of a turn: 60 words."""
    return _compose(_USER_SENTENCES, 60, f"message {turn}")


def assistant_answer(turn: int) -> str:
    """The assistant's answer of a turn: 80 words."""
    return _compose(_ANSWER_SENTENCES, 80, f"answer {turn}")


class NaiveShortTermMemory(DynamoShortTermMemory):
    """The original design's read path: every turn queries the session's whole history."""

    def recent_turns(self, session_id: str, count: int) -> list[Turn]:
        history = list(self.all_turns(session_id))
        return history[-count:] if count > 0 else []


@dataclass
class Meter:
    """Counts DynamoDB requests and the capacity they consumed, per turn."""

    requests: Counter[str] = field(default_factory=Counter)
    read_units: float = 0.0
    write_units: float = 0.0

    def attach(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.dynamodb.*", self._ask_capacity)
        client.meta.events.register("after-call.dynamodb.*", self._count)

    def detach(self, client: Any) -> None:
        client.meta.events.unregister("provide-client-params.dynamodb.*", self._ask_capacity)
        client.meta.events.unregister("after-call.dynamodb.*", self._count)

    def reset(self) -> None:
        self.requests.clear()
        self.read_units = self.write_units = 0.0

    @staticmethod
    def _ask_capacity(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in _CAPACITY_OPS:
            params["ReturnConsumedCapacity"] = "TOTAL"

    def _count(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        self.requests[model.name] += 1
        consumed = parsed.get("ConsumedCapacity") or []
        for entry in consumed if isinstance(consumed, list) else [consumed]:
            self.read_units += float(entry.get("ReadCapacityUnits", 0.0) or 0.0)
            self.write_units += float(entry.get("WriteCapacityUnits", 0.0) or 0.0)
            if "ReadCapacityUnits" not in entry and "WriteCapacityUnits" not in entry:
                # Only a total is given: reads and writes are told apart by the operation.
                total = float(entry.get("CapacityUnits", 0.0) or 0.0)
                if model.name in ("GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"):
                    self.read_units += total
                else:
                    self.write_units += total


_ROUTES = load_routes()


def _call(handler: Any, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One request through the chat handler, as the local gateway (and API Gateway) shape it."""
    event = proxy_event(
        method=method,
        target=path,
        headers=[("Content-Type", "application/json")],
        body=None if body is None else json.dumps(body),
        user_id="bench-user",
        routes=_ROUTES,
    )
    answer = handler(event, LocalLambdaContext("chat-api"))
    if answer["statusCode"] >= 300:
        raise RuntimeError(f"{method} {path}: {answer['statusCode']} {answer['body']}")
    return json.loads(answer["body"])


@contextmanager
def dynamodb_local() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp:
        server = DynamoDBLocal(Path(tmp) / "db", free_port()).start()
        try:
            yield server.endpoint
        finally:
            server.stop()


VARIANTS = {"windowed": DynamoShortTermMemory, "naive": NaiveShortTermMemory}
LANGCHAIN = "langchain-dynamodb"
AFTER_FAILURE = 5  # LangChain turns driven after its first failure, to show what follows


class _Warnings(logging.Handler):
    """Keeps the warnings a logger emits (LangChain reports a failed history write so)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class LangChainVariant:
    """LangChain's DynamoDBChatMessageHistory behind a RunnableWithMessageHistory, with a chat
    model that answers at once: the history is one item per session, which the chain reads
    for the prompt and `add_messages` reads again and rewrites whole with the turn appended.
    A failed write is logged by LangChain's callback manager, not raised: the logger is watched.
    """

    LOGGER = "langchain_core.callbacks.manager"

    def __init__(self, endpoint: str, answers: Sequence[str], table: str = "SessionTable") -> None:
        import boto3

        self.endpoint, self.table, self.meter, self.warnings = endpoint, table, Meter(), _Warnings()
        self.session = boto3.Session()
        client = self.session.client("dynamodb", endpoint_url=endpoint)
        # The table its documentation asks for: one item per session, hash key SessionId.
        client.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": "SessionId", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "SessionId", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.get_waiter("table_exists").wait(TableName=table)
        self.histories: dict[str, Any] = {}
        self.session_id = str(uuid4())
        self.chain = self._chain(answers)

    def __enter__(self) -> LangChainVariant:
        logging.getLogger(self.LOGGER).addHandler(self.warnings)
        return self

    def __exit__(self, *_: object) -> None:
        logging.getLogger(self.LOGGER).removeHandler(self.warnings)

    def warm_up(self, turns: int) -> None:
        chain = self._chain([f"warm-up answer {n}" for n in range(turns)])
        for n in range(turns):
            chain.invoke({"input": f"warm-up {n}"}, {"configurable": {"session_id": "warm-up"}})

    def turn(self, message: str) -> tuple[str, str | None]:
        """One turn of the measured session: the answer, and the warning it logged if any."""
        logged = len(self.warnings.messages)
        reply = self.chain.invoke(
            {"input": message}, {"configurable": {"session_id": self.session_id}}
        )
        warning = self.warnings.messages[-1] if len(self.warnings.messages) > logged else None
        return str(reply.content), warning

    def stored_messages(self) -> int:
        """How many messages the measured session's item holds, read outside the count."""
        client = self._history(self.session_id).table.meta.client
        self.meter.detach(client)
        try:
            return len(self._history(self.session_id).messages)
        finally:
            self.meter.attach(client)

    def _history(self, session_id: str) -> Any:
        """One history object per session, kept (as a warm Lambda keeps its clients), its
        client counted by the meter."""
        with _quiet():
            from langchain_community.chat_message_histories import DynamoDBChatMessageHistory

        if session_id not in self.histories:
            history = DynamoDBChatMessageHistory(
                table_name=self.table,
                session_id=session_id,
                endpoint_url=self.endpoint,
                boto3_session=self.session,
            )
            self.meter.attach(history.table.meta.client)
            self.histories[session_id] = history
        return self.histories[session_id]

    def _chain(self, answers: Sequence[str]) -> Any:
        """The usual chat chain: a prompt with the history, a model answering `answers` in turn."""
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
        from langchain_core.runnables.history import RunnableWithMessageHistory

        prompt = ChatPromptTemplate.from_messages(
            [
                ("system", "You are a helpful assistant."),
                MessagesPlaceholder("history"),
                ("human", "{input}"),
            ]
        )
        with _quiet():
            return RunnableWithMessageHistory(
                prompt | FakeListChatModel(responses=list(answers)),
                self._history,
                input_messages_key="input",
                history_messages_key="history",
            )


@contextmanager
def _quiet() -> Iterator[None]:
    """Without the two warnings LangChain's pieces give on use: both are true, and RESULTS.md
    says them once."""
    with python_warnings.catch_warnings():
        python_warnings.filterwarnings("ignore", "RunnableWithMessageHistory is deprecated")
        python_warnings.filterwarnings("ignore", "`langchain-community` is being sunset")
        yield


def drive(checkpoints: list[int], sample: int, langchain_turns: int = 1000) -> dict[str, Any]:
    """One session per variant, driven turn by turn in alternation (so all see the same warm
    JVM and machine); per checkpoint, the mean over the `sample` turns that end at it.
    LangChain's variant goes on past the last checkpoint until AFTER_FAILURE turns after its
    first failure, `langchain_turns` turns at most (0: not at all)."""
    from handlers import chat_api

    wiring.clear_caches()
    settings = wiring.settings()
    client = wiring.aws_client("dynamodb", settings.dynamodb_endpoint)
    meter = Meter()
    meter.attach(client)
    deps = wiring.chat_deps()
    model = ZeroLatencyModel()
    deps.generator = model
    memories = {
        name: memory_class(client, settings.sessions_table, settings.conversations_table)
        for name, memory_class in VARIANTS.items()
    }
    paths: dict[str, str] = {}
    for name, memory in memories.items():
        deps.memory = memory
        warm = _call(chat_api.handler, "POST", "/sessions", {"name": "warm-up"})["session"]
        for turn in range(50):  # imports, connections and the JVM's JIT warm up first
            _call(chat_api.handler, "POST", f"/sessions/{warm['session_id']}/messages",
                  {"content": f"warm-up {turn}"})  # fmt: skip
        session = _call(chat_api.handler, "POST", "/sessions", {"name": name})["session"]
        paths[name] = f"/sessions/{session['session_id']}/messages"
    last = max(checkpoints)
    rows: dict[str, Any] = {name: {} for name in VARIANTS}
    windows: dict[str, list[tuple[int, float, float, float]]] = {}

    def record(name: str, turn: int, used: Meter, elapsed: float) -> None:
        sample_row = (sum(used.requests.values()), used.read_units, used.write_units, elapsed)
        windows[name] = [*windows.get(name, [])[-(sample - 1) :], sample_row]
        if turn in checkpoints:
            rows[name][turn] = _summary(windows[name])

    with ExitStack() as stack:
        langchain = None
        if langchain_turns:
            answers = [assistant_answer(turn) for turn in range(1, langchain_turns + 1)]
            langchain = stack.enter_context(LangChainVariant(settings.dynamodb_endpoint, answers))
            langchain.warm_up(10)
            rows[LANGCHAIN] = {}
        failed_at: int | None = None
        answered_after = 0
        for turn in range(1, max(last, langchain_turns) + 1):
            message, answer = user_message(turn), assistant_answer(turn)
            if turn <= last:
                model.reply = answer
                # A UUID per message, as real clients send: the session keeps the last 50.
                body = {"content": message, "client_message_id": str(uuid4())}
                for name, memory in memories.items():
                    deps.memory = memory
                    meter.reset()
                    started = time.perf_counter()
                    _call(chat_api.handler, "POST", paths[name], body)
                    record(name, turn, meter, (time.perf_counter() - started) * 1000)
            over = failed_at is not None and turn > failed_at + AFTER_FAILURE
            if langchain is None or turn > langchain_turns or over:
                continue
            langchain.meter.reset()
            started = time.perf_counter()
            reply, warning = langchain.turn(message)
            elapsed = (time.perf_counter() - started) * 1000
            if warning and failed_at is None:
                failed_at = turn
                rows["langchain_error"] = warning
                rows["langchain_messages_stored_at_failure"] = langchain.stored_messages()
            if failed_at is None:
                record(LANGCHAIN, turn, langchain.meter, elapsed)
                rows["langchain_last_good_turn"] = {
                    "turn": turn,
                    "requests": sum(langchain.meter.requests.values()),
                    "read_units": round(langchain.meter.read_units, 2),
                    "write_units": round(langchain.meter.write_units, 2),
                }
            elif reply == answer:
                answered_after += 1
        if langchain is not None:
            rows["langchain_versions"] = {
                package: metadata.version(package)
                for package in ("langchain-community", "langchain-core")
            }
            rows["langchain_fails_at_turn"] = failed_at
            if failed_at is not None:
                # The failing turn and those after it: answered, logged, not stored.
                rows["langchain_turns_from_failure"] = {
                    "driven": AFTER_FAILURE + 1,
                    "answered": answered_after,
                    "warnings_logged": len(langchain.warnings.messages),
                    "messages_stored_at_end": langchain.stored_messages(),
                }
    return rows


TOPICS = [
    "we planted tomatoes and basil in the garden and the seedlings look strong",
    "my sister Ana moved to Porto for a job at the children's hospital",
    "I am training for a half marathon in October, running four times a week",
    "we are adopting a rescue greyhound named Biscuit next month",
    "the kitchen renovation is delayed because the tiles arrived broken",
    "I started learning Japanese with an app, twenty minutes every morning",
    "our trip to Lisbon is booked for the first week of May",
    "my daughter's school play is on Friday and she plays the fox",
    "I switched to decaf because coffee was keeping me awake",
    "the book club is reading a novel about a lighthouse keeper",
]
RECALL_MESSAGES = [
    "how are the tomatoes in my garden doing?",  # matches a memory: injected
    "please convert three miles into kilometres",  # matches nothing: searched, quiet
]


class CountingEmbedder:
    """The configured embedder, counting embedding requests."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.calls = inner, inner.name, 0
        self.dimension, self.max_batch = inner.dimension, inner.max_batch
        self.pins_model = inner.pins_model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return list(self.inner.embed(texts))


def drive_recall(turns: int) -> dict[str, dict[str, float]]:
    """Auto-recall on and off, alternating turn by turn on one session each."""

    from chatmemory.adapters.embedded import EmbeddedLongTermIndex
    from chatmemory.ports import MemoryDoc
    from chatmemory.schema import MEMORY_INDEX, MemoryKind
    from handlers import chat_api

    class CountingIndex(EmbeddedLongTermIndex):
        searches = 0

        def hybrid_search(self, *args: Any, **kwargs: Any) -> Any:
            CountingIndex.searches += 1
            return super().hybrid_search(*args, **kwargs)

    wiring.clear_caches()
    settings = wiring.settings()
    client = wiring.aws_client("dynamodb", settings.dynamodb_endpoint)
    meter = Meter()
    meter.attach(client)
    deps = wiring.chat_deps()
    deps.generator = ZeroLatencyModel()
    deps.memory = DynamoShortTermMemory(
        client, settings.sessions_table, settings.conversations_table
    )
    embedder = CountingEmbedder(wiring.embedder(settings))
    index = CountingIndex()
    deps.embedder, deps.long_term = embedder, index
    docs = []
    for n in range(20):
        past = _call(chat_api.handler, "POST", "/sessions", {"name": f"past {n}"})["session"]
        for w in range(10):
            docs.append(
                MemoryDoc(
                    doc_key=f"{past['session_id']}#w{w}",
                    user_id="bench-user",
                    kind=MemoryKind.CHUNK,
                    text=f"User: {TOPICS[(n + w) % len(TOPICS)]} (note {n}.{w})",
                    created_at=past["started_at"],
                    session_id=past["session_id"],
                    title=past["name"],
                    turn_from=w + 1,
                )
            )
    for doc, vector in zip(docs, embedder.embed([d.text for d in docs]), strict=True):
        doc.embedding = vector
    index.upsert(MEMORY_INDEX, docs)
    base = wiring.chat_policy(settings)
    policies = {
        "auto_recall_on": base._replace(auto_recall=base.auto_recall._replace(enabled=True)),
        "auto_recall_off": base._replace(auto_recall=base.auto_recall._replace(enabled=False)),
    }
    paths = {}
    for name in policies:
        session = _call(chat_api.handler, "POST", "/sessions", {"name": name})["session"]
        paths[name] = f"/sessions/{session['session_id']}/messages"
    original = wiring.chat_policy
    samples: dict[str, list[tuple[float, float, float, float, float]]] = {n: [] for n in policies}
    try:
        for turn in range(-10, turns):  # ten turns to warm up, not counted
            content = RECALL_MESSAGES[turn % len(RECALL_MESSAGES)]
            for name, policy in policies.items():
                wiring.chat_policy = lambda cfg=None, policy=policy: policy  # type: ignore[misc]
                meter.reset()
                embeds, searches = embedder.calls, CountingIndex.searches
                started = time.perf_counter()
                answer = _call(chat_api.handler, "POST", paths[name], {"content": content})
                elapsed = (time.perf_counter() - started) * 1000
                if turn >= 0:
                    samples[name].append(
                        (
                            sum(meter.requests.values()),
                            embedder.calls - embeds,
                            CountingIndex.searches - searches,
                            elapsed,
                            float(bool(answer["turn"]["sources"])),
                        )
                    )
    finally:
        wiring.chat_policy = original  # type: ignore[misc]
    out: dict[str, dict[str, float]] = {}
    for name, rows in samples.items():
        latencies = sorted(r[3] for r in rows)
        out[name] = {
            "requests": round(statistics.mean(r[0] for r in rows), 2),
            "embed_calls": round(statistics.mean(r[1] for r in rows), 2),
            "searches": round(statistics.mean(r[2] for r in rows), 2),
            "p50_ms": round(statistics.median(latencies), 2),
            "p95_ms": round(latencies[max(0, int(len(latencies) * 0.95) - 1)], 2),
            "injected_share": round(statistics.mean(r[4] for r in rows), 2),
        }
    return out


def _summary(window: list[tuple[int, float, float, float]]) -> dict[str, float]:
    latencies = sorted(w[3] for w in window)
    return {
        "requests": statistics.mean(w[0] for w in window),
        "read_units": round(statistics.mean(w[1] for w in window), 2),
        "write_units": round(statistics.mean(w[2] for w in window), 2),
        "p50_ms": round(statistics.median(latencies), 2),
        "p95_ms": round(latencies[max(0, int(len(latencies) * 0.95) - 1)], 2),
    }


def run(
    checkpoints: list[int], sample: int, recall_turns: int = 100, langchain_turns: int = 1000
) -> dict[str, Any]:
    with dynamodb_local() as endpoint:
        os.environ.update(
            {
                "DYNAMODB_ENDPOINT_URL": endpoint,
                "AWS_ACCESS_KEY_ID": "local",
                "AWS_SECRET_ACCESS_KEY": "local",
                "AWS_DEFAULT_REGION": "us-east-1",
                "LONG_TERM_BACKEND": "none",
                "POWERTOOLS_LOG_LEVEL": "WARNING",
                "POWERTOOLS_METRICS_NAMESPACE": "Bench",
                "POWERTOOLS_METRICS_DISABLED": "1",
            }
        )
        wiring.clear_caches()
        ensure_tables(wiring.aws_client("dynamodb", endpoint), table_names(Settings.from_env()))
        sample = min(sample, min(checkpoints))
        result: dict[str, Any] = drive(checkpoints, sample, langchain_turns)
        if recall_turns:
            recall = drive_recall(recall_turns)
            on, off = recall["auto_recall_on"], recall["auto_recall_off"]
            recall["ratio_on_off"] = {
                key: round(on[key] / off[key], 2) if off[key] else None
                for key in ("requests", "p50_ms", "p95_ms")
            }
            result["auto_recall"] = recall
    last = max(checkpoints)
    windowed, naive = result["windowed"][last], result["naive"][last]
    result["ratio_at_last"] = {
        key: round(naive[key] / windowed[key], 1) if windowed[key] else None
        for key in ("requests", "read_units", "p50_ms")
    }
    if LANGCHAIN in result:
        # Where LangChain's history still works: its cost per turn over ours (windowed).
        result["ratio_langchain_windowed"] = {
            turn: {
                key: round(row[key] / result["windowed"][turn][key], 1)
                for key in ("requests", "read_units", "write_units")
            }
            for turn, row in result[LANGCHAIN].items()
            if turn in result["windowed"]
        }
    turns = range(1, last + 1)
    result["texts"] = {
        "message_words": len(user_message(1).split()),
        "answer_words": len(assistant_answer(1).split()),
        "message_bytes": round(statistics.mean(len(user_message(t).encode()) for t in turns)),
        "answer_bytes": round(statistics.mean(len(assistant_answer(t).encode()) for t in turns)),
    }
    return result


def main() -> None:
    import warnings

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="10,100,1000")
    parser.add_argument("--sample", type=int, default=10, help="turns averaged per checkpoint")
    parser.add_argument(
        "--recall-turns", type=int, default=100, help="auto-recall on/off turns (0: skip)"
    )
    parser.add_argument(
        "--langchain-turns",
        type=int,
        default=1000,
        help=f"LangChain's turns at most; it stops {AFTER_FAILURE} turns after failing (0: skip)",
    )
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    checkpoints = sorted(int(t) for t in args.turns.split(","))
    result = run(checkpoints, args.sample, args.recall_turns, args.langchain_turns)
    texts = result["texts"]
    print(
        f"turns of a {texts['message_words']}-word message ({texts['message_bytes']} bytes) and "
        f"a {texts['answer_words']}-word answer ({texts['answer_bytes']} bytes)"
    )
    header = ["requests", "RCU", "WCU", "p50 ms", "p95 ms"]
    print(f"{'variant':<18} {'turn':>5} " + " ".join(f"{h:>9}" for h in header))
    for variant in [*VARIANTS, LANGCHAIN]:
        for turn, row in result.get(variant, {}).items():
            print(
                f"{variant:<18} {turn:>5} {row['requests']:>9.1f} {row['read_units']:>9.2f} "
                f"{row['write_units']:>9.2f} {row['p50_ms']:>9.2f} {row['p95_ms']:>9.2f}"
            )
    print(f"naive / windowed at turn {checkpoints[-1]}: {result['ratio_at_last']}")
    if LANGCHAIN in result:
        for turn, ratio in result["ratio_langchain_windowed"].items():
            print(f"{LANGCHAIN} / windowed at turn {turn}: {ratio}")
        print(f"{LANGCHAIN} fails at turn: {result['langchain_fails_at_turn']}")
        for key in (
            "langchain_versions",
            "langchain_error",
            "langchain_last_good_turn",
            "langchain_messages_stored_at_failure",
            "langchain_turns_from_failure",
        ):
            if key in result:
                print(f"{key}: {result[key]}")
    if "auto_recall" in result:
        recall = result["auto_recall"]
        names = ["requests", "embed_calls", "searches", "p50_ms", "p95_ms", "injected_share"]
        print(f"{'auto-recall':<16} " + " ".join(f"{n:>14}" for n in names))
        for variant in ("auto_recall_on", "auto_recall_off"):
            print(f"{variant:<16} " + " ".join(f"{recall[variant][n]:>14}" for n in names))
        print(f"on / off: {recall['ratio_on_off']}")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
