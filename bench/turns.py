"""Turn overhead and cost growth: DynamoDB requests, consumed capacity and handler latency per
chat turn at turn 10, 100 and 1,000, against DynamoDB Local with a model of zero latency.

Every turn goes through the real chat Lambda handler (an API Gateway proxy event, Powertools
routing and validation, the service, the DynamoDB adapter). Requests and capacity are read off
the boto3 client (ReturnConsumedCapacity=TOTAL is added to every call that supports it).
The same run drives a naive baseline that reads the whole history each turn, as the original
design did, and reports the ratio.

    python -m bench.turns [--turns 10,100,1000] [--sample 10] [--json]
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


def _summary(window: list[tuple[int, float, float, float]]) -> dict[str, float]:
    latencies = sorted(w[3] for w in window)
    return {
        "requests": statistics.mean(w[0] for w in window),
        "read_units": round(statistics.mean(w[1] for w in window), 2),
        "write_units": round(statistics.mean(w[2] for w in window), 2),
        "p50_ms": round(statistics.median(latencies), 2),
        "p95_ms": round(latencies[max(0, int(len(latencies) * 0.95) - 1)], 2),
    }


def run(checkpoints: list[int], sample: int) -> dict[str, Any]:
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
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    checkpoints = sorted(int(t) for t in args.turns.split(","))
    result = run(checkpoints, args.sample)
    header = ["requests", "RCU", "WCU", "p50 ms", "p95 ms"]
    print(f"{'variant':<9} {'turn':>5} " + " ".join(f"{h:>9}" for h in header))
    for variant in ("windowed", "naive"):
        for turn, row in result[variant].items():
            print(
                f"{variant:<9} {turn:>5} {row['requests']:>9.1f} {row['read_units']:>9.2f} "
                f"{row['write_units']:>9.2f} {row['p50_ms']:>9.2f} {row['p95_ms']:>9.2f}"
            )
    print(f"naive / windowed at turn {checkpoints[-1]}: {result['ratio_at_last']}")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
