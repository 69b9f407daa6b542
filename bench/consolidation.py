"""Consolidation throughput, end to end: sessions end in DynamoDB Local, the stream poller hands
the records to the consolidation Lambda handler, which summarizes, embeds (all-MiniLM-L6-v2 on
the CPU) and writes the embedded long-term index. Reported: sessions per second, Lambda
invocations, and model and index requests per session; batched requests (what the code does)
side by side with one request per document.

Sessions are DialogSum dialogues (../shared/data, read at run time), imported as chats.

    python -m bench.consolidation [--data ../shared/data] [--sessions 40] [--json]
    python -m bench.consolidation --model-latency 0.5 --context-tokens 512 --turns 10,100 --json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chatmemory import wiring
from chatmemory.api_models import ImportDocument
from chatmemory.ports import Embedder, LongTermIndex, MemoryDoc
from chatmemory.services.conversation.sessions import end_session, import_session
from local.dynamodb_local import DynamoDBLocal, ensure_tables, free_port, table_names
from local.poller import MAPPINGS, default_poller

USER = "bench-user"


class CountingEmbedder:
    """Counts requests; with one_per_call, sends one text per request like an endpoint that
    takes no batches."""

    def __init__(self, inner: Embedder, *, one_per_call: bool) -> None:
        self._inner = inner
        self.name, self.dimension = inner.name, inner.dimension
        self.max_batch = 1 if one_per_call else inner.max_batch
        self.pins_model = inner.pins_model
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return self._inner.embed(texts)


class CountingIndex:
    """Counts write requests; with one_per_call, writes one document per request instead of
    one bulk request per session."""

    def __init__(self, inner: LongTermIndex, *, one_per_call: bool) -> None:
        self._inner = inner
        self._one = one_per_call
        self.writes = 0

    def upsert(self, index: str, docs: Sequence[MemoryDoc]) -> None:
        for part in [[d] for d in docs] if self._one else [list(docs)]:
            self.writes += 1
            self._inner.upsert(index, part)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def dialogues(data: Path, count: int) -> list[list[str]]:
    rows = (data / "dialogsum.dev.jsonl").read_text(encoding="utf-8").splitlines()[:count]
    return [
        [line.split(": ", 1)[-1] for line in json.loads(r)["dialogue"].splitlines() if line]
        for r in rows
    ]


def _document(lines: list[str], number: int) -> dict[str, Any]:
    pairs = [lines[i : i + 2] for i in range(0, len(lines), 2)]
    return {
        "session": {"name": f"dialogue {number}"},
        "messages": [{"input": p[0], "response": p[1] if len(p) > 1 else None} for p in pairs],
    }


def run_variant(data: Path, sessions: int, *, one_per_call: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        server = DynamoDBLocal(Path(tmp) / "db", free_port()).start()
        try:
            os.environ.update(
                {
                    "DYNAMODB_ENDPOINT_URL": server.endpoint,
                    "LONG_TERM_BACKEND": "embedded",
                    "MEMORY_PATH": str(Path(tmp) / "memory.sqlite3"),
                }
            )
            wiring.clear_caches()
            cfg = wiring.settings()
            ensure_tables(wiring.aws_client("dynamodb", cfg.dynamodb_endpoint), table_names(cfg))
            deps = wiring.consolidation_deps()
            deps.embedder = CountingEmbedder(deps.embedder, one_per_call=one_per_call)
            deps.index = CountingIndex(deps.index, one_per_call=one_per_call)
            deps.embedder.embed(["warm up the model"])
            deps.embedder.calls = 0
            turns = 0
            for number, lines in enumerate(dialogues(data, sessions)):
                document = ImportDocument.model_validate(_document(lines, number))
                session = import_session(deps.memory, USER, document.imported())
                end_session(deps.memory, USER, session.session_id)
                turns += session.num_turns
            poller = default_poller(
                cfg,
                checkpoint_path=Path(tmp) / "checkpoints.json",
                dead_letter_path=Path(tmp) / "dead-letters.jsonl",
                mappings=[m for m in MAPPINGS if m.name == "consolidate"],
            )
            started = time.perf_counter()
            poller.drain(timeout=600)
            seconds = time.perf_counter() - started
            done = sum(
                1
                for s in deps.memory.list_sessions(USER, 100, None).items
                if s.status == "CONSOLIDATED"
            )
        finally:
            server.stop()
    return {
        "sessions": sessions,
        "consolidated": done,
        "turns_per_session": round(turns / sessions, 1),
        "seconds": round(seconds, 2),
        "sessions_per_s": round(done / seconds, 2),
        "lambda_invocations": poller.invocations,
        "embed_requests_per_session": round(deps.embedder.calls / sessions, 2),
        "index_writes_per_session": round(deps.index.writes / sessions, 2),
        "summarizer_model_calls_per_session": getattr(deps.summarizer, "calls", 0) / sessions,
    }


def run(data: Path, sessions: int) -> dict[str, Any]:
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": "us-east-1",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "POWERTOOLS_METRICS_DISABLED": "1",
        }
    )
    batched = run_variant(data, sessions, one_per_call=False)
    single = run_variant(data, sessions, one_per_call=True)
    return {
        "batched": batched,
        "one_per_call": single,
        "speedup": round(batched["sessions_per_s"] / single["sessions_per_s"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument(
        "--model-latency",
        type=float,
        help="seconds per call of a simulated remote model: measure work against session "
        "length instead (bench/consolidation_scaling.py)",
    )
    parser.add_argument("--context-tokens", type=int, default=512)
    parser.add_argument("--turns", default="10,100,1000,10000", help="session lengths")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    if args.model_latency is not None:
        from bench import consolidation_scaling

        counts = [int(t) for t in args.turns.split(",")]
        scaling = consolidation_scaling.run(counts, args.model_latency, args.context_tokens)
        if args.json:
            print(json.dumps(scaling))
        return
    result = run(args.data, args.sessions)
    keys = [
        "sessions_per_s",
        "seconds",
        "lambda_invocations",
        "embed_requests_per_session",
        "index_writes_per_session",
        "summarizer_model_calls_per_session",
    ]
    print(f"{'variant':<13} " + " ".join(f"{k:>22}" for k in keys))
    for name in ("batched", "one_per_call"):
        print(f"{name:<13} " + " ".join(f"{result[name][k]:>22}" for k in keys))
    print(f"batched / one per call: {result['speedup']}x sessions per second")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
