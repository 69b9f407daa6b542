"""Facts and preferences extracted from LoCoMo, scored against the dataset's observations.

Through the real pipeline, as bench/locomo.py builds it: each conversation's sessions are
imported as sessions of one user (speaker A's lines are the user's inputs, speaker B's the
assistant's; POST /sessions/import's path, on moto's in-process DynamoDB), ended and
consolidated into the embedded index with the configured extractor (wiring.extractor: the
offline PatternExtractor unless a text model is configured). Then the user's records of type
fact or preference (not summaries; superseded ones included: they were extracted too) are
scored against the dataset's `observation` annotations, which are only read here, never
indexed:

* `observation_coverage`: share of gold observations one of whose evidence turns is the
  provenance of at least one record (a provenance (session, turn) stands for the dia_id of
  that turn's input);
* `record_precision`: share of records one of whose provenances is an evidence turn of some
  observation;
* `records_per_session`; and `evidence_turn_share`, the share of the user's turns that are
  evidence of one of their observations: the precision of keeping every turn, for reference.

Each is reported against speaker A's observations (the user's own facts: the extractor reads
only the user's lines) and against all observations (speaker B's are out of its reach).

Open questions (what a session left unsettled, records of type open_question) are counted,
with the sessions that left any, but not scored: the observations annotate what was said, not
what was left open, so they would only lower the precision of the facts for no reason.

    python -m bench.facts --data ../shared/data/locomo-dev.json [--json]

With a text model, the settings come from the environment (chatmemory.settings, the variables
of schema.py) and the extractor is ModelExtractor (one call per chunk of the user's lines, at
most 8 per session); summaries stay extractive (they are not scored: no model calls spent on
them). For example an OpenAI-compatible server (Ollama, vLLM, llama.cpp's server):

    TEXT_BACKEND=openai OPENAI_BASE_URL=http://127.0.0.1:11434/v1 TEXT_MODEL_ID=llama3.1:8b \\
        python -m bench.facts --data ../shared/data/locomo-dev.json --json

or Amazon Bedrock with the usual AWS credentials (DynamoDB stays mocked; the model's runtime
requests pass through to AWS):

    TEXT_BACKEND=bedrock TEXT_MODEL_ID=anthropic.claude-3-haiku-20240307-v1:0 \\
        AWS_DEFAULT_REGION=us-east-1 python -m bench.facts --json

The same holds for TEXT_BACKEND=sagemaker with TEXT_ENDPOINT and TEXT_FORMAT.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.locomo import export_document, gold_turns, mock_stores, sessions_of


@dataclass
class Scored:
    """One conversation's sessions, records and gold observations, as dia_ids."""

    user: str
    sessions: int = 0
    user_turns: int = 0
    records: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    # dia_ids each record was drawn from (one set per record)
    drawn_from: list[set[str]] = field(default_factory=list)
    # evidence dia_ids of each gold observation, per speaker role ("A" or "B")
    gold: dict[str, list[set[str]]] = field(default_factory=lambda: {"A": [], "B": []})
    user_dias: set[str] = field(default_factory=set)
    open_questions: int = 0
    sessions_left_open: set[str] = field(default_factory=set)


class TimedExtractor:
    """The configured extractor, timed; counts sessions and facts it returned."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0
        self.sessions = 0
        self.facts = 0

    def extract(self, turns: Sequence[Any]) -> list[Any]:
        return self.extract_knowing(turns, frozenset())

    def extract_knowing(self, turns: Sequence[Any], people: frozenset[str]) -> list[Any]:
        """As consolidation calls it: with the names the profile holds, when the inner
        extractor reads them (model_ports.PeopleExtractor)."""
        from chatmemory.ports import PeopleExtractor

        tick = time.perf_counter()
        if isinstance(self.inner, PeopleExtractor):
            found = self.inner.extract_knowing(turns, people)
        else:
            found = self.inner.extract(turns)
        self.seconds += time.perf_counter() - tick
        self.sessions += 1
        self.facts += len(found)
        return list(found)


def observations(raw: dict[str, Any], speaker_a: str) -> dict[str, list[set[str]]]:
    """The evidence dia_ids of every observation, by speaker role ("A": the user)."""
    out: dict[str, list[set[str]]] = {"A": [], "B": []}
    for per_session in raw.get("observation", {}).values():
        for speaker, items in per_session.items():
            for item in items:
                evidence = item[1] if len(item) > 1 else []
                ids = gold_turns(evidence if isinstance(evidence, list) else [evidence])
                if ids:
                    out["A" if speaker == speaker_a else "B"].append(ids)
    return out


def build_and_score(data: Path, settings: Any) -> tuple[list[Scored], TimedExtractor]:
    """Import, end and consolidate every conversation (inside moto's mock), then score."""
    import boto3

    from chatmemory import schema, wiring
    from chatmemory.adapters.dynamodb import DynamoShortTermMemory
    from chatmemory.adapters.embedded import EmbeddedLongTermIndex
    from chatmemory.api_models import ImportDocument
    from chatmemory.schema import RecordType, TextBackend
    from chatmemory.services.background.consolidation import (
        ConsolidationPolicy,
        consolidate_session,
    )
    from chatmemory.services.conversation.sessions import end_session, import_session
    from chatmemory.services.prompt import Roles

    embedder = wiring.embedder(settings)
    summarizer = wiring.summarizer(settings.replace(text_backend=TextBackend.OFFLINE))
    extractor = TimedExtractor(wiring.extractor(settings))
    client = boto3.client("dynamodb", region_name="us-east-1")
    for spec in schema.TABLES:
        client.create_table(**spec.create_table_kwargs(spec.logical_name))
    memory = DynamoShortTermMemory(client, "sessions", "conversations")
    index = EmbeddedLongTermIndex()
    scored: list[Scored] = []
    for raw in json.loads(data.read_text()):
        conv = raw["conversation"]
        user = raw["sample_id"]
        policy = ConsolidationPolicy(roles=Roles(conv["speaker_a"], conv["speaker_b"]))
        item = Scored(user=user, gold=observations(raw, conv["speaker_a"]))
        turn_ids: dict[tuple[str, int], str | None] = {}
        for number, when, messages in sessions_of(conv):
            document, ids = export_document(number, when, messages, conv["speaker_a"])
            session = import_session(
                memory, user, ImportDocument.model_validate(document).imported()
            )
            end_session(
                memory, user, session.session_id, clock=lambda w=when: w + timedelta(hours=1)
            )
            for turn, (said, _) in enumerate(ids, start=1):
                turn_ids[(session.session_id, turn)] = said
                if said:
                    item.user_dias.add(said)
            consolidate_session(
                session.session_id,
                memory=memory,
                summarizer=summarizer,
                embedder=embedder,
                index=index,
                policy=policy,
                now=datetime.now(UTC),
                extractor=extractor,
            )
            item.sessions += 1
        item.user_turns = len(item.user_dias)
        for record in memory.records_of_owner(user):
            if record.type == RecordType.OPEN_QUESTION:
                item.open_questions += 1
                item.sessions_left_open.update(record.sessions)
            if record.type not in (RecordType.FACT, RecordType.PREFERENCE):
                continue
            item.records += 1
            item.by_type[str(record.type)] = item.by_type.get(str(record.type), 0) + 1
            drawn = {turn_ids.get((p.session_id, p.turn)) for p in record.provenance}
            item.drawn_from.append({d for d in drawn if d})
        scored.append(item)
    return scored, extractor


def metrics(items: Sequence[Scored]) -> dict[str, Any]:
    """Coverage and precision against speaker A's observations and against all of them."""
    out: dict[str, Any] = {}
    sessions = sum(i.sessions for i in items)
    records = sum(i.records for i in items)
    for name, roles in (("user", ("A",)), ("all", ("A", "B"))):
        gold = 0
        covered = 0
        precise = 0
        evidence_turns = 0
        for item in items:
            drawn = set().union(*item.drawn_from) if item.drawn_from else set()
            observed = [ids for role in roles for ids in item.gold[role]]
            evidence = set().union(*observed) if observed else set()
            gold += len(observed)
            covered += sum(bool(ids & drawn) for ids in observed)
            precise += sum(bool(d & evidence) for d in item.drawn_from)
            evidence_turns += len(item.user_dias & evidence)
        out[name] = {
            "observations": gold,
            "observation_coverage": round(covered / max(gold, 1), 3),
            "record_precision": round(precise / max(records, 1), 3),
            "evidence_turn_share": round(
                evidence_turns / max(sum(i.user_turns for i in items), 1), 3
            ),
        }
    by_type: dict[str, int] = {}
    for item in items:
        for kind, n in item.by_type.items():
            by_type[kind] = by_type.get(kind, 0) + n
    return out | {
        "sessions": sessions,
        "records": records,
        "records_per_session": round(records / max(sessions, 1), 2),
        "records_by_type": dict(sorted(by_type.items())),
        "open_questions": sum(i.open_questions for i in items),
        "sessions_left_open": sum(len(i.sessions_left_open) for i in items),
    }


def run(data: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Build, extract and score; the settings come from `env` (default: the environment)."""
    from chatmemory.schema import EmbedBackend, TextBackend
    from chatmemory.settings import Settings

    settings = Settings.from_env(os.environ if env is None else env)
    offline = (
        settings.text_backend == TextBackend.OFFLINE
        and settings.embed_backend == EmbedBackend.OFFLINE
    )
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
    # Offline, nothing leaves the machine: moto's fake credentials do. With a model, its
    # runtime requests go to AWS with the caller's own credentials.
    started = time.perf_counter()
    with mock_stores("offline" if offline else "environment"):
        scored, extractor = build_and_score(data, settings)
    result = metrics(scored)
    calls = getattr(extractor.inner, "calls", None)
    return result | {
        "extractor": extractor.name,
        "per_conversation": {i.user: metrics([i]) for i in scored},
        "extract_seconds": round(extractor.seconds, 2),
        "model_calls": calls,
        "model_calls_per_session": round(calls / max(extractor.sessions, 1), 2)
        if calls is not None
        else None,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _print(result: dict[str, Any], as_json: bool) -> None:
    header = (
        f"{'conversation':<13} {'sessions':>8} {'records':>7} {'per sess':>8} "
        f"{'A coverage':>10} {'A precision':>11} {'all coverage':>12} {'all precision':>13} "
        f"{'A evidence share':>16}"
    )
    print(f"extractor {result['extractor']}")
    print(header)
    rows = list(result["per_conversation"].items()) + [("overall", result)]
    for name, m in rows:
        print(
            f"{name:<13} {m['sessions']:>8} {m['records']:>7} {m['records_per_session']:>8} "
            f"{m['user']['observation_coverage']:>10} {m['user']['record_precision']:>11} "
            f"{m['all']['observation_coverage']:>12} {m['all']['record_precision']:>13} "
            f"{m['user']['evidence_turn_share']:>16}"
        )
    print(
        f"observations: {result['user']['observations']} of speaker A (the user), "
        f"{result['all']['observations']} in all; records by type {result['records_by_type']}; "
        f"{result['open_questions']} open questions from {result['sessions_left_open']} "
        f"sessions; extraction {result['extract_seconds']} s"
        + (f", {result['model_calls']} model calls" if result["model_calls"] is not None else "")
        + f"; took {result['seconds']} s"
    )
    if as_json:
        keys = ("records", "sessions", "records_per_session", "records_by_type", "extractor")
        keys += ("open_questions", "sessions_left_open")
        summary = {k: result[k] for k in keys} | {
            "observation_coverage": result["user"]["observation_coverage"],
            "record_precision": result["user"]["record_precision"],
            "user": result["user"],
            "all": result["all"],
            "model_calls": result["model_calls"],
            "model_calls_per_session": result["model_calls_per_session"],
        }
        print(json.dumps(summary))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo-dev.json"))
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    _print(run(args.data), args.json)


if __name__ == "__main__":
    main()
