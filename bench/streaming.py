"""Streamed answers in local mode: time to the first delta, what the service adds before it, the
total time against the buffered route, and the memory of an open stream.

A stand-in OpenAI-compatible model server runs in this process (POST /v1/chat/completions): it
writes an answer of `--tokens` tokens, one every `--token-ms` milliseconds, the first one
`--token-ms` after the request (its own time to first token), as server-sent events with
`"stream": true` and whole after the same time without. Local mode (DynamoDB Local, the gateway,
the embedded index, the offline embedder) runs with TEXT_BACKEND=openai pointed at it, as
`TEXT_BACKEND=openai OPENAI_BASE_URL=... make run` would.

Per streamed turn (each in a session of its own, after `--warmup` turns):
- time to first delta: from the request's first byte sent to the first `event: delta` read;
- its overhead over the model's own first token: that time less the stand-in's time from the
  request it received to its first token written, split into before the model was asked
  (admission, the window, auto-recall, the prompt) and after its first token (the adapter, the
  output filters, the turn's thread, the gateway's chunked write);
- total: to the last byte, against the same message on the buffered route.
Memory per open stream: the process's resident memory with `--open` streams held open at once
on a slow answer, less before, divided by their number (the process holds the gateway, the
streams' threads and this bench's readers).

What the part before the model is made of: the DynamoDB requests the turn sends from the
request's first byte to the model's request (botocore's events on the stack's client; the
stream poller's and the idle sweeper's own left out), per turn: how many of each operation, and
their times (each request's own time; requests sent side by side count each).

    python -m bench.streaming [--turns 50] [--token-ms 20] [--tokens 40] [--open 20]
                              [--no-recall] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.openai_standin import PacedModel as StandIn
from chatmemory import schema

USER = "bench"


class Requests:
    """Every DynamoDB request the stack's client sends: (thread, operation, started, ended),
    perf_counter, from botocore's before-call and after-call events."""

    BACKGROUND = ("stream-poller", "idle-sweeper")

    def __init__(self, client: Any) -> None:
        self.sent: list[tuple[str, str, float, float]] = []
        self._lock = threading.Lock()
        client.meta.events.register("before-call.dynamodb.*", self._before)
        client.meta.events.register("after-call.dynamodb.*", self._after)

    @staticmethod
    def _before(context: dict[str, Any], **_: Any) -> None:
        context["bench_started"] = time.perf_counter()

    def _after(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        ended = time.perf_counter()
        started = context.get("bench_started", ended)
        with self._lock:
            self.sent.append((threading.current_thread().name, model.name, started, ended))

    def of_turn(self, sent: float, asked: float) -> list[tuple[str, float]]:
        """(operation, milliseconds) of the turn's requests between `sent` and `asked`."""
        with self._lock:
            return [
                (operation, (ended - started) * 1000)
                for thread, operation, started, ended in self.sent
                if not thread.startswith(self.BACKGROUND) and sent <= started and ended <= asked
            ]


class Api:
    """The local gateway, over HTTP as a client reads it."""

    def __init__(self, port: int) -> None:
        self.port = port

    def post(self, path: str, body: Any) -> Any:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        connection.request("POST", path, json.dumps(body), self._headers())
        answer = connection.getresponse()
        data = answer.read()
        connection.close()
        return json.loads(data) if data else None

    def session(self) -> str:
        return str(self.post("/sessions", {"name": "bench"})["session"]["session_id"])

    def streamed(self, session_id: str, text: str) -> tuple[float, float, float]:
        """(request sent, first delta read, last byte read), perf_counter."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        body = json.dumps({"content": text})
        sent = time.perf_counter()
        connection.request("POST", f"/sessions/{session_id}/messages/stream", body, self._headers())
        answer = connection.getresponse()
        assert answer.status == 200, answer.read()
        first = 0.0
        while line := answer.readline():
            if not first and line.startswith(b"event: delta"):
                first = time.perf_counter()
        done = time.perf_counter()
        connection.close()
        assert first, "no delta"
        return sent, first, done

    def buffered(self, session_id: str, text: str) -> float:
        started = time.perf_counter()
        answer = self.post(f"/sessions/{session_id}/messages", {"content": text})
        assert answer["turn"]["response"], answer
        return time.perf_counter() - started

    @staticmethod
    def _headers() -> dict[str, str]:
        return {"Content-Type": "application/json", "X-User-Id": USER}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(args: argparse.Namespace) -> dict[str, Any]:
    stand_in = StandIn(args.token_ms, args.tokens)
    state = Path(tempfile.mkdtemp(prefix="bench-streaming-"))
    from local.dynamodb_local import free_port

    dynamodb_port, api_port = free_port(), free_port()
    os.environ.update(
        {
            schema.ENV_TEXT_BACKEND: "openai",
            schema.ENV_OPENAI_BASE_URL: stand_in.url,
            schema.ENV_TEXT_MODEL_ID: "standin",
            schema.ENV_AUTO_RECALL: "false" if args.no_recall else "true",
        }
    )
    from local.config import apply_local_defaults

    apply_local_defaults(dynamodb_port=dynamodb_port, state_dir=state)
    from local.stack import LocalStack, StackOptions, quiet_warnings

    quiet_warnings()
    stack = LocalStack(
        StackOptions(
            state_dir=state,
            api_port=api_port,
            dynamodb_port=dynamodb_port,
            sweep_seconds=0,
        ),
        echo=lambda line: None,
    )
    stack.start()
    try:
        from chatmemory import wiring

        requests = Requests(wiring.aws_client("dynamodb", wiring.settings().dynamodb_endpoint))
        api = Api(api_port)
        message = "Tell me about the trip we planned to Lisbon and what to pack for it."
        for _ in range(args.warmup):
            api.streamed(api.session(), message)
            api.buffered(api.session(), message)
        ttfd, before, after, streamed_total, buffered_total = [], [], [], [], []
        per_turn: list[list[tuple[str, float]]] = []
        for _ in range(args.turns):
            stand_in.firsts.clear()
            sent, first, done = api.streamed(api.session(), message)
            [(received, token)] = stand_in.firsts
            per_turn.append(requests.of_turn(sent, received))
            ttfd.append((first - sent) * 1000)
            before.append((received - sent) * 1000)
            after.append((first - token) * 1000)
            streamed_total.append((done - sent) * 1000)
            buffered_total.append(api.buffered(api.session(), message) * 1000)
        model_first = args.token_ms
        overhead = [t - model_first for t in ttfd]
        memory = _open_streams(api, args, message)
    finally:
        stack.stop()
        stand_in.server.shutdown()
        shutil.rmtree(state, ignore_errors=True)  # its DynamoDB Local and index: 5 MB a run

    def stats(values: list[float]) -> dict[str, float]:
        return {
            "p50": round(statistics.median(values), 1),
            "p95": round(_percentile(values, 0.95), 1),
        }

    return {
        "turns": args.turns,
        "auto_recall": not args.no_recall,
        "token_ms": args.token_ms,
        "tokens": args.tokens,
        "load_1min": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
        "time_to_first_delta_ms": stats(ttfd),
        "overhead_over_model_first_token_ms": stats(overhead),
        "before_the_model_was_asked_ms": stats(before),
        "after_its_first_token_ms": stats(after),
        "streamed_total_ms": stats(streamed_total),
        "buffered_total_ms": stats(buffered_total),
        "dynamodb_before_the_model": _requests(per_turn, stats),
        "open_streams": memory,
    }


def _requests(per_turn: list[list[tuple[str, float]]], stats: Any) -> dict[str, dict[str, float]]:
    """Per operation: requests a turn sent before the model was asked (mean), and their times."""
    operations = sorted({operation for turn in per_turn for operation, _ in turn})
    found = {}
    for operation in operations:
        times = [ms for turn in per_turn for name, ms in turn if name == operation]
        found[operation] = {"per_turn": round(len(times) / len(per_turn), 2), **stats(times)}
    return found


def _open_streams(api: Api, args: argparse.Namespace, message: str) -> dict[str, Any]:
    """RSS with `args.open` streams open at once (a slow answer: 10x the tokens), less before."""
    slow = StandIn(args.token_ms, args.tokens * 10)
    # The stream function's model is the configured one: point it at the slow stand-in.
    os.environ[schema.ENV_OPENAI_BASE_URL] = slow.url
    from chatmemory import wiring

    wiring.clear_caches()
    sessions = [api.session() for _ in range(args.open)]
    before = _rss_mb()
    threads = [
        threading.Thread(target=api.streamed, args=(sid, message), daemon=True) for sid in sessions
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while len(slow.firsts) < args.open and time.monotonic() < deadline:
        time.sleep(0.05)
    opened = len(slow.firsts)
    during = _rss_mb()
    for thread in threads:
        thread.join(120)
    slow.server.shutdown()
    return {
        "streams": opened,
        "rss_before_mb": round(before, 1),
        "rss_open_mb": round(during, 1),
        "per_stream_kb": round((during - before) * 1024 / max(opened, 1), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.streaming", description=__doc__)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--token-ms", type=float, default=20.0)
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--open", type=int, default=20)
    parser.add_argument(
        "--no-recall",
        action="store_true",
        help="AUTO_RECALL off: no embedding or search of long-term memory before the answer",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"stand-in model: {args.tokens} tokens, one every {args.token_ms:g} ms")
    print(
        f"load {result['load_1min']} on {result['cpus']} cores; {args.turns} turns each way; "
        f"auto-recall {'on' if result['auto_recall'] else 'off'}"
    )
    for key in (
        "time_to_first_delta_ms",
        "overhead_over_model_first_token_ms",
        "before_the_model_was_asked_ms",
        "after_its_first_token_ms",
        "streamed_total_ms",
        "buffered_total_ms",
    ):
        print(f"  {key:38s} p50 {result[key]['p50']:8.1f}  p95 {result[key]['p95']:8.1f}")
    print("  DynamoDB requests before the model was asked, per turn (each one's own time):")
    for operation, found in result["dynamodb_before_the_model"].items():
        print(
            f"    {operation:20s} {found['per_turn']:5.2f} a turn  "
            f"p50 {found['p50']:6.1f}  p95 {found['p95']:6.1f} ms"
        )
    print(f"  open streams: {result['open_streams']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
