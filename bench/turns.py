"""Turn overhead and cost growth: DynamoDB requests, consumed capacity and handler latency per
chat turn at turn 10, 100 and 1,000, against DynamoDB Local with a model of zero latency.

Every turn goes through the real chat Lambda handler (an API Gateway proxy event, Powertools
routing and validation, the service, the DynamoDB adapter). Requests and capacity are read off
the boto3 client (ReturnConsumedCapacity=TOTAL is added to every call that supports it).
The same run drives a naive baseline that reads the whole history each turn, as the original
design did, and reports the ratio.

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
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

from chatmemory import wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.domain import Turn
from chatmemory.ports import Generation
from chatmemory.settings import Settings
from local.dynamodb_local import DynamoDBLocal, ensure_tables, free_port, table_names
from local.gateway import load_routes, proxy_event
from local.lambda_context import LocalLambdaContext

# Operations that accept ReturnConsumedCapacity.
_CAPACITY_OPS = {
    "GetItem", "Query", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems",
    "TransactGetItems", "BatchWriteItem", "BatchGetItem", "Scan",
}  # fmt: skip


class ZeroLatencyModel:
    """A text model that answers at once, so only the memory work is measured."""

    name = "zero-latency"
    context_tokens = 512

    def generate(self, prompt: str, *, max_new_tokens: int, stop: Sequence[str] = ()) -> Generation:
        return Generation("ok, noted.", self.name)


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


def drive(checkpoints: list[int], sample: int) -> dict[str, dict[int, dict[str, float]]]:
    """One session per variant, driven turn by turn in alternation (so both see the same warm
    JVM and machine); per checkpoint, the mean over the `sample` turns that end at it."""
    from handlers import chat_api

    wiring.clear_caches()
    settings = wiring.settings()
    client = wiring.aws_client("dynamodb", settings.dynamodb_endpoint)
    meter = Meter()
    meter.attach(client)
    deps = wiring.chat_deps()
    deps.generator = ZeroLatencyModel()
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
    rows: dict[str, dict[int, dict[str, float]]] = {name: {} for name in VARIANTS}
    windows: dict[str, list[tuple[int, float, float, float]]] = {name: [] for name in VARIANTS}
    for turn in range(1, max(checkpoints) + 1):
        # A UUID per message, as real clients send: the session keeps the last 50.
        body = {"content": f"message {turn}: it is sunny", "client_message_id": str(uuid4())}
        for name, memory in memories.items():
            deps.memory = memory
            meter.reset()
            started = time.perf_counter()
            _call(chat_api.handler, "POST", paths[name], body)
            elapsed = (time.perf_counter() - started) * 1000
            sample_row = (
                sum(meter.requests.values()),
                meter.read_units,
                meter.write_units,
                elapsed,
            )
            windows[name] = [*windows[name][-(sample - 1) :], sample_row]
            if turn in checkpoints:
                rows[name][turn] = _summary(windows[name])
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

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return list(self.inner.embed(texts))


def drive_recall(turns: int) -> dict[str, dict[str, float]]:
    """Auto-recall on and off, alternating turn by turn on one session each."""
    from dataclasses import replace

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
        "auto_recall_on": replace(base, auto_recall=replace(base.auto_recall, enabled=True)),
        "auto_recall_off": replace(base, auto_recall=replace(base.auto_recall, enabled=False)),
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


def run(checkpoints: list[int], sample: int, recall_turns: int = 100) -> dict[str, Any]:
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
        result: dict[str, Any] = dict(drive(checkpoints, sample))
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
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    checkpoints = sorted(int(t) for t in args.turns.split(","))
    result = run(checkpoints, args.sample, args.recall_turns)
    header = ["requests", "RCU", "WCU", "p50 ms", "p95 ms"]
    print(f"{'variant':<9} {'turn':>5} " + " ".join(f"{h:>9}" for h in header))
    for variant in ("windowed", "naive"):
        for turn, row in result[variant].items():
            print(
                f"{variant:<9} {turn:>5} {row['requests']:>9.1f} {row['read_units']:>9.2f} "
                f"{row['write_units']:>9.2f} {row['p50_ms']:>9.2f} {row['p95_ms']:>9.2f}"
            )
    print(f"naive / windowed at turn {checkpoints[-1]}: {result['ratio_at_last']}")
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
