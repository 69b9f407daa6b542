"""Consolidation's work against session length, with a simulated remote model.

For each session length: a session of realistic turns (a ~60-word message and a ~80-word
answer) on DynamoDB Local, ended, then consolidated by the real service with a text model and
an embedding model that each answer after a fixed latency (as a SageMaker endpoint would) and
read `context_tokens` at most. A "live" session has a current rolling summary (compaction keeps
it a few turns behind, as in chat); an "imported" one has none (a long import). Invocations get
Lambda's 5 minutes and hand over when short of time, as deployed.

Reported per row: model calls, sequential model rounds (the calls on the critical path, as the
summarizer counts them), the profile's extraction calls (services/profile/extract.ModelExtractor, on
its own simulated model: one more round, all at once), embedding requests and their rounds, Lambda
invocations, seconds.

    python -m bench.consolidation --model-latency 0.5 --context-tokens 512 \\
        --turns 10,100,1000,10000 --json
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from chatmemory import wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.domain import Turn
from chatmemory.ports import Generation, GenerationOptions, Piece, TextGenerator, whole
from chatmemory.services.background.consolidation import ConsolidationPolicy, consolidate_session
from chatmemory.services.conversation import sessions
from chatmemory.services.longterm.summarize import ModelSummarizer
from chatmemory.services.profile.extract import ModelExtractor
from chatmemory.settings import Settings
from local.dynamodb_local import DynamoDBLocal, ensure_tables, free_port, table_names

MESSAGE = (
    "I have been thinking about the trip to Porto in May and whether we should take the "
    "train from Lisbon or rent a car, because my sister Ana wants to visit the wine cellars "
    "and I would like to see the bookshop and the river, and we also need to find a hotel "
    "near the centre that accepts our dog Biscuit for three nights"
)  # ~60 words
ANSWER = (
    "That sounds like a lovely plan. The train from Lisbon to Porto takes about three hours "
    "and arrives at Campanha, from where the centre is a short metro ride away; a car gives "
    "you freedom for the Douro valley but parking in the old town is hard. Several hotels "
    "near Aliados accept dogs; book early for May, since it is a busy month with festivals, "
    "and check whether the wine cellars in Gaia allow pets on the tours you choose"
)  # ~80 words
FUNCTION_SECONDS = 300.0  # the consolidation function's timeout


class RemoteTextModel(TextGenerator):
    """Answers after `latency` seconds; reads at most `context_tokens`."""

    name = "simulated-remote"

    def __init__(self, latency: float, context_tokens: int) -> None:
        self.latency = latency
        self.context_tokens = context_tokens

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        time.sleep(self.latency)
        return whole(Generation("The user plans a May trip to Porto with Ana and the dog Biscuit."))


class RemoteEmbedder:
    """A remote embedding endpoint: 16 texts a request (JumpStart GPT-J's batch), `latency`
    seconds each, counted."""

    name = "simulated-remote-embedder"
    dimension = 16
    max_batch = 16
    pins_model = False

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.requests = 0
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.requests += 1
        time.sleep(self.latency)
        return [[1.0] + [0.0] * (self.dimension - 1) for _ in texts]


def _session(memory: DynamoShortTermMemory, turns: int, *, live: bool) -> str:
    session = sessions.create_session(memory, "bench")
    stamp = "2026-11-23T10:00:00.000Z"
    memory.put_turns(
        [Turn(session.session_id, n, "bench", MESSAGE, ANSWER, created_at=stamp)
         for n in range(1, turns + 1)]
    )  # fmt: skip
    # The counters an import or a chat would have left on the session item.
    memory._db.update_item(
        TableName=memory._sessions,
        Key={"session_id": {"S": session.session_id}},
        UpdateExpression="SET num_turns = :n",
        ExpressionAttributeValues={":n": {"N": str(turns)}},
    )
    if live and turns > 6:  # compaction keeps the summary a window (6 turns) behind
        memory.update_running_summary(
            session.session_id, "The user planned trips and talked about Biscuit.", turns - 6, 0
        )
    memory.end_session(session.session_id, stamp)
    return session.session_id


def run(turn_counts: Sequence[int], latency: float, context_tokens: int) -> dict[str, Any]:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = DynamoDBLocal(Path(tmp) / "db", free_port()).start()
        try:
            cfg = Settings()
            client = wiring.aws_client("dynamodb", server.endpoint)
            ensure_tables(client, table_names(cfg))
            memory = DynamoShortTermMemory(
                client,
                cfg.sessions_table,
                cfg.conversations_table,
                cfg.users_table,
                cfg.records_table,
            )
            policy = ConsolidationPolicy()
            for count in turn_counts:
                for live in (True, False):
                    sid = _session(memory, count, live=live)
                    generator = RemoteTextModel(latency, context_tokens)
                    summarizer = ModelSummarizer(generator)
                    extractor = ModelExtractor(RemoteTextModel(latency, context_tokens))
                    embedder = RemoteEmbedder(latency)
                    index = EmbeddedLongTermIndex(Path(tmp) / f"memory-{count}-{live}.sqlite3")
                    invocations = 0
                    started = time.perf_counter()
                    while True:
                        invocations += 1
                        begun = time.monotonic()
                        result = consolidate_session(
                            sid, memory=memory, summarizer=summarizer, embedder=embedder,
                            index=index, policy=policy, now=_now(), extractor=extractor,
                            time_left=lambda b=begun: FUNCTION_SECONDS - (time.monotonic() - b),
                        )  # fmt: skip
                        if result.outcome != "continued":
                            break
                    seconds = time.perf_counter() - started
                    per_round = max(policy.embed_concurrency, 1)
                    rows.append(
                        {
                            "turns": count,
                            "rolling_summary": "current" if live else "none",
                            "outcome": result.outcome,
                            "model_calls": summarizer.calls,
                            "sequential_rounds": summarizer.rounds,
                            "extraction_calls": extractor.calls,
                            "embedding_requests": embedder.requests,
                            "embedding_rounds": -(-embedder.requests // per_round),
                            "invocations": invocations,
                            "seconds": round(seconds, 1),
                        }
                    )
                    print(rows[-1], flush=True)
        finally:
            server.stop()
    return {
        "model_latency_s": latency,
        "context_tokens": context_tokens,
        "function_timeout_s": FUNCTION_SECONDS,
        "rows": rows,
    }


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)
