"""Memory in every turn: what the caller told us before, brought into an ordinary chat turn when
it is relevant, within a token budget, each piece cited with its date.

Per turn at most one embedding request and one search request (both methods of the hybrid
search in one `_msearch`), then one consistent read that drops anything deleted meanwhile.
Nothing is injected, and nothing is searched, when the message has nothing to look up:

1. No content: a message whose words are all function words or the vocabulary of greeting,
   thanking, agreeing, reacting and leaving ("thanks!", "ok cool", "see you") is small talk.
   This costs nothing and keeps most small talk from reaching the index at all.
2. Small talk by meaning: the message's embedding is compared with a few dozen phrasings of
   small talk (embedded once, then cached across cold starts) and with the best memory the
   search found. A message closer to small talk than to any memory is small talk ("can you
   hear me?" shares the word "hear" with many memories, but it means what "are you there?"
   means).
3. Relevance: the best memory must reach `min_similarity` by meaning or match the message's
   rarer words; then memories are kept while they reach `relative_floor` of the best score.

A cosine threshold alone cannot do 2: "hi" is as close to a chat history full of greetings as a
real question is to its answer. The measurements behind each gate are in bench/RESULTS.md
(`python -m bench.locomo --mode chat`).

What goes in: lines of transcript windows and profile records, the likeliest to hold what the
message asks about first (`LineWeights`: a linear score of the search's ranking, the message's
rarer words in the line and around it, who speaks, length; fitted on LoCoMo conversations and
measured on others), while they fit the budget; one session's lines form one dated excerpt, so
no line is paid twice. Records are facts and preferences (a superseded one says until when it
was true) and open questions (said not to be settled then; once a later answer settled it, it
stays out). A follow-up ("what about May?") is made standalone first: with a text model by
asking it, offline by borrowing the previous message's words when the message is elliptical
(see `standalone_query`; measured in the same benchmark's sequential mode).

If the embedder or the index is down, the turn goes on without long-term memory (`degraded`).
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import re
import threading
from array import array
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from chatmemory.domain import Source, Turn
from chatmemory.errors import ChatMemoryError
from chatmemory.ports import (
    Candidate,
    Embedder,
    LongTermIndex,
    MemoryDoc,
    RecordStore,
    Search,
    TextGenerator,
    VectorCache,
    embed_queries,
)
from chatmemory.schema import MEMORY_INDEX, Intent, MemoryKind
from chatmemory.services.longterm.scoring import RecallWeights, fuse, with_time
from chatmemory.services.longterm.terms import content_terms, term_share
from chatmemory.services.longterm.when import TimeWindow, time_window
from chatmemory.services.prompt import clip_to_tokens, estimate_tokens

if TYPE_CHECKING:
    from chatmemory.services.longterm.recall_block import RecalledItem

# Ways of saying nothing to recall, embedded once per process for gate 2. Written for this
# module: greetings, thanks, agreement, reactions, checks of the line, leaving, chit-chat.
SMALL_TALK = (
    "hello",
    "hi there, how are you?",
    "good morning!",
    "hey, what's up?",
    "how is it going?",
    "how are you doing today?",
    "nice to meet you",
    "thank you so much",
    "thanks, that helps",
    "I appreciate it",
    "you're welcome",
    "ok",
    "okay, got it",
    "sounds good to me",
    "sure, why not",
    "yes, exactly",
    "no, not really",
    "I agree",
    "that makes sense",
    "fair point",
    "cool",
    "wow, amazing",
    "haha, that's funny",
    "lol",
    "oh no, that's sad",
    "interesting",
    "hmm, let me think",
    "are you there?",
    "can you hear me?",
    "hello? anyone there?",
    "sorry, what did you say?",
    "could you say that again?",
    "go on",
    "tell me more",
    "please continue",
    "never mind",
    "forget about it",
    "anyway",
    "bye",
    "see you later",
    "good night",
    "talk to you soon",
    "have a great day",
    "take care",
    "I'm back",
    "just checking in",
    "what do you think?",
    "really?",
    "I see",
    "oops, my mistake",
)
# An opening that continues the previous message ("and in May?", "what about her sister?").
# Not "when", "where", "why": "When did Melanie paint a sunrise?" is a question of its own (on
# LoCoMo's questions the rule fired on 64 of 762 standalone questions with them, and borrowing
# lowered evidence_in_prompt; see bench/RESULTS.md).
_FOLLOW_UP = re.compile(
    r"^\s*(?:and|but|also|then|so|or|what about|how about|and what about|what else|"
    r"anything else|how come|why not|which one|who else|same for)\b",
    re.I,
)
_REFERS_BACK = re.compile(
    r"\b(?:it|its|that|this|those|these|they|them|their|there|then|he|she|him|her|one)\b", re.I
)
# A capitalised word after the first: the message names whom or what it is about.
_NAMES = re.compile(r"(?<=\s)[A-Z][a-z]+")


# Words weigh twice meaning: all-MiniLM-L6-v2 alone put a gold turn in the prompt for 0.51 of
# LoCoMo's questions, with BM25 at 0.6 0.64, at 2.0 0.71 (bench.locomo --mode chat). A message
# that names a time ("in May", "last week") favours memories from then: `time` inside it, halving
# every `time_half_life_days` outside (3.0 chosen leaving one LoCoMo conversation out among
# 0.5-10; /past's is 1.5 on its scale of 2, this one's is 3).
AUTO_RECALL_WEIGHTS = RecallWeights(
    vector=1.0, lexical=2.0, recency=0.05, half_life_days=30.0, time=3.0, time_half_life_days=7.0
)


class LineWeights(NamedTuple):
    """A linear score of how likely a piece of memory (a line of a window, or a record) is what
    the message asks about; the block takes pieces best first while they fit. Each weight
    multiplies one feature of `piece_features`, all computed from the message and the search's
    candidates (no model call, no extra request):

    - `window`: the score of the best window holding the line (or of the record), over the
      best memory's: how the search ranked it.
    - `second_window`: the score of the other window holding the line (windows overlap by a
      turn), over the best memory's, 0 when the search did not return it: a line both its
      windows are close to is likelier the relevant one than the line it shares its best
      window with.
    - `words`: the share of the message's content words the line holds, each word weighed by
      how rare it is among the candidates (a name on every line weighs little);
      `words_before`, `words_after`: the same for the lines before and after it in the window
      (an answer follows the line that asks: a match in the line before makes a line likelier
      to be the answer, a match in the line after makes it likelier to be the question).
    - `speaker_named`: the line's speaker label ("Melanie:") is named in the message;
      `other_named`: another speaker of the window is, and not this line's.
    - `record`: a profile record (a fact, a preference, an open question), short and drawn from
      what the user said.
    - `length`: the piece's tokens over 50 (short reactions, "Wow, that's great!", rarely hold
      what is asked).
    - `question`: the line ends with a question mark.
    - `time_for_when`: the message asks when or how long, and the line says when (a date, a
      weekday, "last week", "yesterday"); `line_for_when`: the message asks when (a line
      against a record).

    Fitted by `python -m bench.fit_line_weights` (a logistic regression of "the line is a gold
    evidence turn") on LoCoMo's conv-26 and conv-30 only; measured on the three conversations
    never used to fit (bench/RESULTS.md).
    """

    window: float
    second_window: float
    words: float
    words_before: float
    words_after: float
    speaker_named: float
    other_named: float
    record: float
    length: float
    question: float
    time_for_when: float
    line_for_when: float


# Printed by `python -m bench.fit_line_weights --conversations conv-26,conv-30`.
LINE_WEIGHTS = LineWeights(
    window=6.165,
    second_window=0.706,
    words=1.882,
    words_before=0.446,
    words_after=-1.1,
    speaker_named=0.833,
    other_named=-1.33,
    record=3.055,
    length=0.738,
    question=-0.485,
    time_for_when=1.907,
    line_for_when=-1.027,
)


class AutoRecallPolicy(NamedTuple):
    """The knobs of auto-recall (AUTO_RECALL, MEMORY_TOKEN_BUDGET; the rest measured)."""

    enabled: bool = True
    token_budget: int = 400
    # Candidates fetched per retrieval method.
    depth: int = 48
    # The best memory must be at least this close by meaning (cosine), or match by words.
    min_similarity: float = 0.35
    # ...and words match when the best BM25 document shares this share of the query's terms.
    min_term_share: float = 0.5
    # Memories below this share of the best one's score are left out.
    relative_floor: float = 0.5
    # How each line of a window and each record is worth its place in the block (LineWeights).
    line_weights: LineWeights = LINE_WEIGHTS
    # ...and what its length costs: pieces go in by their score less this times the log of
    # their tokens (recall_block.build_block). 0.5 chosen leaving one LoCoMo conversation out
    # among 0-1.5 (in every fold but one, which chose 0.25 or 0.75; bench/RESULTS.md).
    cost_exponent: float = 0.5
    # Gate 2: quiet when the best small-talk phrasing is closer than the best memory minus this.
    small_talk_margin: float = 0.0
    # How meaning, words, recency and a named time weigh (AUTO_RECALL_WEIGHTS).
    weights: RecallWeights = AUTO_RECALL_WEIGHTS
    # A message with at most this many content words that reads as a follow-up borrows the
    # previous message's words (offline), or is rewritten by the text model.
    follow_up_terms: int = 3
    rewrite_tokens: int = 48


@dataclass
class Recalled:
    """What auto-recall put in the prompt (nothing when `block` is empty) and why."""

    query: str
    block: str = ""
    items: list[RecalledItem] = field(default_factory=list)
    tokens: int = 0
    # "injected" | "off" | "no content" | "small talk" | "not relevant" | "unavailable"
    reason: str = "injected"
    degraded: bool = False

    @property
    def sources(self) -> list[Source]:
        return [item.source for item in self.items]


# --- the query ----------------------------------------------------------------------------------

REWRITE_PROMPT = """Rewrite the user's last message as one standalone question or statement that \
can be understood without the conversation. Keep its meaning; add only what it refers to.

Previous message: {previous}
Last message: {message}
Standalone:"""


def is_follow_up(message: str, policy: AutoRecallPolicy) -> bool:
    """Elliptical: few content words and an opening or a word that points back ("and in May?",
    "what about her sister?", "when was that?")."""
    if len(content_terms(message)) > policy.follow_up_terms:
        return False
    if _FOLLOW_UP.match(message):
        return True
    # "What did she paint?" points back; "What has Melanie done with her family?" does not.
    return bool(_REFERS_BACK.search(message)) and not _NAMES.search(message)


def standalone_query(
    message: str,
    history: Sequence[Turn],
    policy: AutoRecallPolicy,
    rewriter: TextGenerator | None = None,
) -> str:
    """The message as a search query. A follow-up is completed from the previous user message:
    rewritten by the text model when one is configured (one short call, only for follow-ups),
    else the previous message's words are put before it."""
    previous = next(
        (t.input for t in reversed(history) if t.input and t.intent == Intent.CHAT), None
    )
    if previous is None or not is_follow_up(message, policy):
        return message
    if rewriter is not None:
        try:
            answer = rewriter.generate(
                REWRITE_PROMPT.format(previous=previous, message=message),
                max_new_tokens=policy.rewrite_tokens,
            ).text
        except ChatMemoryError:
            answer = ""
        lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
        if lines and content_terms(lines[0]):
            return lines[0][:500]
    return f"{clip_to_tokens(previous, 60)} {message}"


# --- gates --------------------------------------------------------------------------------------

_small_talk_vectors: dict[str, list[list[float]]] = {}
_small_talk_lock = threading.Lock()
# A cached phrasing's vector and the same phrasing embedded now are the same model's when they
# are at least this close (the same model gives 1.0 up to float rounding and batching; another
# model's vector of the same text is nowhere near).
SAME_MODEL_COSINE = 0.99


def small_talk_similarity(
    embedder: Embedder, vector: Sequence[float], cache: VectorCache | None = None
) -> float:
    """Cosine of the message to the closest small-talk phrasing (plain Python, as the Lambda
    asset has no numpy). The phrasings' vectors are had once per process: from `cache` when
    it holds them (then, unless the embedder's name pins its model, one phrasing is embedded to
    check they are still the model's), else embedded (one request per phrasing with Titan) and
    kept there for the next cold starts."""
    key = f"{embedder.name}:{embedder.dimension}"
    with _small_talk_lock:
        vectors = _small_talk_vectors.get(key)
        if vectors is None:
            vectors = _small_talk_vectors[key] = _small_talk_phrasings(embedder, cache)
    return max(dot(v, vector) for v in vectors)


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The dot product of two vectors of one dimension (ValueError for two). The products run
    in C (map with operator.mul), in the order and with the sum a generator's would have: 40%
    fewer instructions for the small-talk gate's 50 vectors at every message (10 M of them)."""
    if len(a) != len(b):
        raise ValueError(f"vectors of {len(a)} and {len(b)} dimensions")
    return sum(map(operator.mul, a, b))


def small_talk_cache_key(embedder: Embedder) -> str:
    """Where the phrasings' vectors are cached: one key per model, dimension and phrase set, so
    a change of any of them embeds them anew."""
    named = json.dumps([embedder.name, embedder.dimension, list(SMALL_TALK)]).encode()
    return f"small-talk#{hashlib.sha256(named).hexdigest()[:32]}"


def _small_talk_phrasings(embedder: Embedder, cache: VectorCache | None) -> list[list[float]]:
    if cache is None:
        return embed_queries(embedder, list(SMALL_TALK))
    key = small_talk_cache_key(embedder)
    try:
        cached = cache.load(key)
    except ChatMemoryError:
        cached = None  # the store is down: embed them, as without a cache
    if (
        cached is not None
        and len(cached) == len(SMALL_TALK)
        and all(len(v) == embedder.dimension for v in cached)
    ):
        if embedder.pins_model:
            return cached  # its name is one model's: vectors kept under it are that model's
        # An endpoint keeps its name when another model is deployed behind it.
        [probe] = embed_queries(embedder, [SMALL_TALK[0]])
        if _cosine(probe, cached[0]) >= SAME_MODEL_COSINE:
            return cached
    # float32, as the cache keeps them: every container compares with the same numbers.
    vectors = [array("f", v).tolist() for v in embed_queries(embedder, list(SMALL_TALK))]
    with suppress(ChatMemoryError):  # not kept: the next cold start embeds them again
        cache.save(key, vectors)
    return vectors


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot(a, b) / norms if norms else 0.0


# --- ranking and the block ----------------------------------------------------------------------


def rank_memories(
    vector_hits: Sequence[Candidate],
    lexical_hits: Sequence[Candidate],
    policy: AutoRecallPolicy,
    now: datetime,
    window: TimeWindow | None = None,
) -> list[tuple[MemoryDoc, float]]:
    """Every document once: weighted cosine plus weighted BM25 (normalised by the query's best)
    plus a little recency, plus closeness to the time the message names (`window`). Openings
    (a session's first lines, repeated) and session summaries are left out: a summary restates
    the windows at several times their cost in the budget (with them, 0.03 fewer questions had
    a gold turn in the prompt); /past uses them."""
    weights = policy.weights
    ranked = [
        (doc, with_time(score, doc.created_at, weights, now, window))
        for doc, score in fuse(vector_hits, lexical_hits, weights, records_apart=False).values()
        if doc.kind not in (MemoryKind.OPENING, MemoryKind.SUMMARY) and not _settled(doc)
    ]
    ranked.sort(key=lambda pair: (-pair[1], pair[0].doc_key))
    return ranked


def _settled(doc: MemoryDoc) -> bool:
    """An open question a later answer settled (services/profile/placing.py): nothing to pick up."""
    return doc.kind == MemoryKind.OPEN_QUESTION and bool(doc.valid_until)


# --- one turn -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecallSources:
    """Where a turn's memories come from: the caller's records (`owner`'s), the embedder and
    the index; `rewriter` makes follow-ups standalone, `cache` keeps the small-talk phrasings'
    vectors across cold starts (small_talk_similarity)."""

    owner: str
    memory: RecordStore
    embedder: Embedder
    index: LongTermIndex
    now: datetime
    rewriter: TextGenerator | None = None
    cache: VectorCache | None = None


# What a search of the message found: the memories past the gates, best first, or why none.
SearchFound = Recalled | list[tuple[MemoryDoc, float]]


class Searched(NamedTuple):
    """What `search_memories` found for `query`: a search a turn started before its window was
    read (its query is the message's own text), taken by `recall_for_turn` when the query it
    makes is the same."""

    query: str
    found: SearchFound


class Asked(NamedTuple):
    """What a turn asks auto-recall: its message, the window before it, the records the prompt
    holds already (`held`, id -> text: the profile block's) and a search started early."""

    message: str
    history: Sequence[Turn] = ()
    held: Mapping[str, str] | None = None
    searched: Searched | None = None


def recall_for_turn(asked: Asked, sources: RecallSources, policy: AutoRecallPolicy) -> Recalled:
    """The long-term memory relevant to the message, ready for the prompt, or why there is none.
    Records `asked.held` are in the prompt already: never recalled again, nor the lines they
    were drawn from."""
    found = memories_for_turn(asked, sources, policy)
    if isinstance(found, Recalled):
        return found
    query, ranked = found
    # The block's module is imported by the first turn that has memories to put in it.
    from chatmemory.services.longterm.recall_block import build_block

    known = list(asked.held.values()) if asked.held else []
    block, items = build_block(
        ranked, policy.token_budget, query, policy.line_weights, known, policy.cost_exponent
    )
    if not items:
        return Recalled(query, reason="not relevant")
    return Recalled(query, block=block, items=items, tokens=estimate_tokens(block))


def memories_for_turn(
    asked: Asked, sources: RecallSources, policy: AutoRecallPolicy
) -> Recalled | tuple[str, list[tuple[MemoryDoc, float]]]:
    """The query and the live memories that passed the gates, best first (what the block is
    made of), or the `Recalled` that says why there are none. The entries of the records
    `asked.held` (in the prompt's profile block) are left out after the gates: the gates judge
    the message against everything, the block gets what the prompt does not hold yet."""
    if not policy.enabled or policy.token_budget <= 0:
        return Recalled(asked.message, reason="off")
    query = standalone_query(asked.message, asked.history, policy, sources.rewriter)
    searched = asked.searched
    if searched is not None and searched.query == query:
        found = searched.found
    else:
        found = search_memories(query, sources, policy)
    if isinstance(found, Recalled):
        return found
    held = asked.held or {}
    ranked = [pair for pair in found if pair[0].record_id not in held]
    from chatmemory.services.longterm.recall_block import live_documents

    docs = live_documents(sources.memory, sources.owner, [d for d, _ in ranked])
    alive = {d.doc_key for d in docs}
    return query, [pair for pair in ranked if pair[0].doc_key in alive]


def query_without_history(message: str, policy: AutoRecallPolicy) -> str | None:
    """The search query of `message` whatever the window holds (the message itself, when it
    does not read as a follow-up), or None: its query needs the window (standalone_query)."""
    if not policy.enabled or policy.token_budget <= 0 or is_follow_up(message, policy):
        return None
    return message


def search_memories(query: str, sources: RecallSources, policy: AutoRecallPolicy) -> SearchFound:
    """The memories that pass the gates for `query`, best first, down to the relative floor
    (before the profile block's records and the deleted ones are left out), or the `Recalled`
    that says why there are none. Reads nothing of the session: the embedding and the search."""
    if not content_terms(query):
        return Recalled(query, reason="no content")
    try:
        [vector] = embed_queries(sources.embedder, [query])
        vector_hits, lexical_hits = sources.index.hybrid_search(
            Search(MEMORY_INDEX, vector, query, policy.depth, sources.owner)
        )
        best_vector = max((c.vector_score or 0.0 for c in vector_hits), default=0.0)
        small_talk = small_talk_similarity(sources.embedder, vector, sources.cache)
        if small_talk > best_vector - policy.small_talk_margin:
            return Recalled(query, reason="small talk")
    except ChatMemoryError as failure:
        if failure.status < 500:
            raise
        return Recalled(query, reason="unavailable", degraded=True)
    ranked = rank_memories(
        vector_hits, lexical_hits, policy, sources.now, time_window(query, sources.now)
    )
    if not ranked:
        return Recalled(query, reason="not relevant")
    best_words = max((term_share(query, c.doc.text) for c in lexical_hits[:3]), default=0.0)
    if best_vector < policy.min_similarity and best_words < policy.min_term_share:
        return Recalled(query, reason="not relevant")
    floor = ranked[0][1] * policy.relative_floor
    return [pair for pair in ranked if pair[1] >= floor]
