"""Recall of past sessions on LoCoMo, through the real pipeline.

For each conversation: import every session as a session of one user (the same path as
POST /sessions/import, on moto's in-process DynamoDB), end it, consolidate it with the offline
models into the embedded index, then ask every question of categories 1-4 through the retrieval
that /past uses. A question's gold sessions come from its evidence ids (D<session>:<turn>).

    python -m bench.locomo --data ../shared/data/locomo-dev.json [--k 1,3,5,10] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D:?(\d+):")


def gold_sessions(evidence: list[str]) -> set[int]:
    """Session numbers of evidence ids, parsed leniently ("D8:6; D9:17", "D:11:26")."""
    found: set[int] = set()
    for item in evidence:
        found.update(int(n) for n in _EVIDENCE.findall(str(item)))
    return found


def parse_when(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def sessions_of(conversation: dict[str, Any]) -> list[tuple[int, datetime, list[dict[str, Any]]]]:
    numbers = sorted(
        int(k.split("_")[1])
        for k, v in conversation.items()
        if re.fullmatch(r"session_\d+", k) and isinstance(v, list) and v
    )
    return [
        (n, parse_when(conversation[f"session_{n}_date_time"]), conversation[f"session_{n}"])
        for n in numbers
    ]


def utterance(message: dict[str, Any]) -> str:
    text = str(message.get("text", "")).strip()
    caption = message.get("blip_caption")
    return f"{text} [shares a photo of {caption}]".strip() if caption else text


def export_document(number: int, when: datetime, messages: list[dict[str, Any]], speaker_a: str):
    """One LoCoMo session as an exported chat: speaker A's lines are inputs, B's responses."""
    from chatmemory.schema import EXPORT_FORMAT

    turns: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        stamp = (when + timedelta(seconds=30 * i)).isoformat()
        if message["speaker"] == speaker_a or not turns or turns[-1]["response"] is not None:
            if message["speaker"] == speaker_a:
                turns.append({"input": utterance(message), "response": None, "created_at": stamp})
            else:
                turns.append({"input": "", "response": utterance(message), "created_at": stamp})
        else:
            turns[-1]["response"] = utterance(message)
    return {
        "format": EXPORT_FORMAT,
        "session": {"name": f"session {number}", "started_at": when.isoformat()},
        "messages": turns,
    }


def ndcg(ranked: list[int], gold: set[int], k: int) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, s in enumerate(ranked[:k]) if s in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def mrr(ranked: list[int], gold: set[int]) -> float:
    return next((1 / (i + 1) for i, s in enumerate(ranked) if s in gold), 0.0)


def run(data: Path, ks: list[int]) -> dict[str, Any]:
    import boto3
    from moto import mock_aws

    from chatmemory import schema, wiring
    from chatmemory.adapters.dynamodb import DynamoShortTermMemory
    from chatmemory.adapters.embedded import EmbeddedLongTermIndex
    from chatmemory.api_models import ImportDocument
    from chatmemory.services.consolidation import ConsolidationPolicy, consolidate_session
    from chatmemory.services.prompt import Roles
    from chatmemory.services.recall import search_sessions
    from chatmemory.services.sessions import end_session, import_session
    from chatmemory.settings import Settings

    settings = Settings.from_env({})
    embedder = wiring.embedder(settings)
    summarizer = wiring.summarizer(settings)
    weights = wiring.chat_policy(settings).recall_weights
    conversations = json.loads(data.read_text())
    per_question: list[dict[str, Any]] = []
    started = time.perf_counter()
    timings = defaultdict(float)
    for env_key, value in {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    }.items():
        os.environ.setdefault(env_key, value)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for spec in schema.TABLES:
            client.create_table(**spec.create_table_kwargs(spec.logical_name))
        memory = DynamoShortTermMemory(client, "sessions", "conversations")
        index = EmbeddedLongTermIndex()
        for conversation in conversations:
            conv = conversation["conversation"]
            user = conversation["sample_id"]
            policy = ConsolidationPolicy(roles=Roles(conv["speaker_a"], conv["speaker_b"]))
            number_of: dict[str, int] = {}
            last = None
            tick = time.perf_counter()
            for number, when, messages in sessions_of(conv):
                document = export_document(number, when, messages, conv["speaker_a"])
                session = import_session(memory, user, ImportDocument.model_validate(document))
                end_session(
                    memory, user, session.session_id, clock=lambda w=when: w + timedelta(hours=1)
                )
                number_of[session.session_id] = number
                last = when
            timings["import"] += time.perf_counter() - tick
            tick = time.perf_counter()
            for session_id in number_of:
                consolidate_session(
                    session_id,
                    memory=memory,
                    summarizer=summarizer,
                    embedder=embedder,
                    index=index,
                    policy=policy,
                    now=datetime.now(UTC),
                )
            timings["consolidate"] += time.perf_counter() - tick
            tick = time.perf_counter()
            asked_at = (last or datetime.now(UTC)) + timedelta(days=1)
            for qa in conversation["qa"]:
                if qa.get("category") not in CATEGORIES:
                    continue
                gold = gold_sessions(qa.get("evidence", []))
                if not gold:
                    continue
                found = search_sessions(
                    str(qa["question"]),
                    user_id=user,
                    embedder=embedder,
                    index=index,
                    weights=weights,
                    now=asked_at,
                    k=max(ks),
                )
                ranked = [number_of[s.session_id] for s in found]
                per_question.append({"category": qa["category"], "gold": gold, "ranked": ranked})
            timings["questions"] += time.perf_counter() - tick
    return summarize_metrics(per_question, ks) | {
        "seconds": round(time.perf_counter() - started, 1),
        "timings": {k: round(v, 1) for k, v in timings.items()},
    }


def summarize_metrics(rows: list[dict[str, Any]], ks: list[int]) -> dict[str, Any]:
    def metrics(subset: list[dict[str, Any]]) -> dict[str, float]:
        out: dict[str, float] = {}
        n = len(subset) or 1
        for k in ks:
            out[f"recall_any@{k}"] = sum(bool(set(r["ranked"][:k]) & r["gold"]) for r in subset) / n
            out[f"recall_all@{k}"] = sum(r["gold"] <= set(r["ranked"][:k]) for r in subset) / n
        out["ndcg@5"] = sum(ndcg(r["ranked"], r["gold"], 5) for r in subset) / n
        out["mrr"] = sum(mrr(r["ranked"], r["gold"]) for r in subset) / n
        return {k: round(v, 3) for k, v in out.items()}

    by_category = {
        CATEGORIES[c]: metrics([r for r in rows if r["category"] == c])
        | {"questions": sum(1 for r in rows if r["category"] == c)}
        for c in sorted(CATEGORIES)
    }
    return {"overall": metrics(rows) | {"questions": len(rows)}, "by_category": by_category}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo-dev.json"))
    parser.add_argument("--k", default="1,3,5,10")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    ks = sorted({int(k) for k in args.k.split(",")} | {5})
    result = run(args.data, ks)
    names = [f"recall_any@{k}" for k in ks] + [f"recall_all@{k}" for k in ks] + ["ndcg@5", "mrr"]
    print(f"{'category':<12} {'n':>4} " + " ".join(f"{n:>13}" for n in names))
    rows = list(result["by_category"].items()) + [("overall", result["overall"])]
    for name, values in rows:
        print(
            f"{name:<12} {values['questions']:>4} " + " ".join(f"{values[n]:>13.3f}" for n in names)
        )
    print(f"took {result['seconds']} s ({result['timings']})")
    if args.json:
        o = result["overall"]
        print(
            json.dumps(
                {
                    "recall_any@5": o["recall_any@5"],
                    "recall_all@5": o["recall_all@5"],
                    "ndcg@5": o["ndcg@5"],
                    "mrr": o["mrr"],
                    "questions": o["questions"],
                }
            )
        )


if __name__ == "__main__":
    main()
