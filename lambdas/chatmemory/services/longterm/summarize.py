"""Summaries that fit the model, with model work that does not grow with the text.

FLAN-T5 reads 512 tokens, so a long text is cut into chunks that fit with the instruction. The
work is bounded whatever the length of the session:

* at most `max_map_calls` chunks are summarized, all at once (`concurrency` calls in flight):
  one round of calls. A text that needs more chunks is first narrowed to its most informative
  lines (Luhn's classic extractive scoring: lines dense in the words the text repeats, the
  opening kept), in their order, so the model still reads the whole conversation's gist;
* one more call combines the partial summaries (and the summary of what came before, `prior`,
  which is how the rolling summary makes consolidation start where compaction left off).

So a summary costs at most `max_map_calls + 1` model calls in at most two sequential rounds,
for ten turns or ten thousand: at 0.5-2 s a call, 1-4 s. `calls` and `rounds` count them.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from chatmemory.ports import TextGenerator
from chatmemory.schema import TEXT_STOPWORDS
from chatmemory.services.prompt import clip_to_tokens, estimate_tokens

SUMMARY_INSTRUCTION = "Summarize this conversation, keeping names, facts, dates and decisions:"
COMBINE_INSTRUCTION = "Combine these summaries of one conversation into one summary:"
EXTEND_INSTRUCTION = (
    "Here is a summary of a conversation so far and the turns that followed. "
    "Write the updated summary, keeping names, facts, dates and decisions:"
)

_WORD = re.compile(r"[a-z0-9']+")
_STOPWORDS = frozenset(TEXT_STOPWORDS)


@dataclass(frozen=True)
class SummaryBudget:
    """How much model work one summary may take."""

    # Chunks summarized per summary: one round at `concurrency` calls in flight. Eight 512-token
    # chunks read about 3,000 words, more than the uncovered tail of a session whose rolling
    # summary is current (the last dozen-odd turns).
    max_map_calls: int = 8
    concurrency: int = 8
    # New tokens of each partial summary: eight of them must fit one combining prompt.
    partial_tokens: int = 48


DEFAULT_BUDGET = SummaryBudget()


def split_lines(lines: Sequence[str], budget: int) -> list[str]:
    """Greedy chunks of whole lines under `budget` tokens; an overlong line is clipped."""
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for line in lines:
        cost = estimate_tokens(line)
        if cost > budget:
            line, cost = clip_to_tokens(line, budget), budget
        if current and used + cost > budget:
            chunks.append("\n".join(current))
            current, used = [], 0
        current.append(line)
        used += cost
    if current:
        chunks.append("\n".join(current))
    return chunks


def select_lines(lines: Sequence[str], budget: int, *, keep_opening: int = 2) -> list[str]:
    """The most informative lines that fit `budget` tokens, in their original order: each line
    is scored by how often the whole text uses its content words (Luhn), per word, so long
    lines do not win by length; the first `keep_opening` lines (what the talk is about) stay."""
    words = [[w for w in _WORD.findall(line.lower()) if w not in _STOPWORDS] for line in lines]
    frequency = Counter(w for ws in words for w in set(ws))
    chosen: set[int] = set()
    used = 0
    for i in range(min(keep_opening, len(lines))):
        chosen.add(i)
        used += estimate_tokens(lines[i])

    def score(i: int) -> float:
        unique = set(words[i])
        return sum(frequency[w] for w in unique) / math.sqrt(len(unique)) if unique else 0.0

    for i in sorted(range(len(lines)), key=lambda i: (-score(i), i)):
        cost = estimate_tokens(lines[i])
        if i in chosen or used + cost > budget:
            continue
        chosen.add(i)
        used += cost
    return [lines[i] for i in sorted(chosen)]


class ModelWork:
    """Work done by calls of a TextGenerator (a summary, an extraction): its bounds, and a count
    of its calls, made from up to `budget.concurrency` threads at once, and of its rounds."""

    kind = "model"
    default_max_new_tokens = 150

    def __init__(
        self,
        generator: TextGenerator,
        *,
        max_new_tokens: int | None = None,
        budget: SummaryBudget = DEFAULT_BUDGET,
    ) -> None:
        self.generator = generator
        self.name = f"{self.kind}:{generator.name}"
        self.max_new_tokens = (
            self.default_max_new_tokens if max_new_tokens is None else max_new_tokens
        )
        self.budget = budget
        self.calls = 0
        self.rounds = 0
        self._count = threading.Lock()

    def _space(self, instruction: str) -> int:
        # Room for the body: the context, less the instruction, the answer cue and a margin for
        # the token estimate's error.
        return int(self.generator.context_tokens * 0.9) - estimate_tokens(instruction) - 4

    def _generate(self, prompt: str, max_new_tokens: int) -> str:
        """One model call, counted."""
        with self._count:
            self.calls += 1
        return self.generator.generate(prompt, max_new_tokens=max_new_tokens).text


class ModelSummarizer(ModelWork):
    """Summarizer on a TextGenerator: its context limit respected, its work bounded (above)."""

    kind = "summary"

    def _call(self, instruction: str, body: str, max_new_tokens: int) -> str:
        return self._generate(f"{instruction}\n{body}\nSummary:", max_new_tokens).strip()

    def summarize(self, text: str, *, prior: str = "") -> str:
        """A summary of `text`, continuing `prior` (the summary of what came before it)."""
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            return prior
        body = f"Summary so far: {prior}\nNew turns:\n{text}" if prior else "\n".join(lines)
        instruction = EXTEND_INSTRUCTION if prior else SUMMARY_INSTRUCTION
        if estimate_tokens(body) <= self._space(instruction):
            self.rounds += 1
            return self._call(instruction, body, self.max_new_tokens)
        partials = self._map(lines)
        return self._combine(prior, partials)

    def extend(self, summary: str, new_text: str) -> str:
        """Rolling summary: the existing summary plus the newer turns, into one summary."""
        return self.summarize(new_text, prior=summary)

    def _map(self, lines: list[str]) -> list[str]:
        """One round: at most max_map_calls chunks, summarized at once."""
        space = self._space(SUMMARY_INSTRUCTION)
        chunks = split_lines(lines, space)
        if len(chunks) > self.budget.max_map_calls:
            # Narrow to what fits the chunks allowed; the margin covers chunk boundaries.
            allowed = int(space * self.budget.max_map_calls * 0.9)
            chunks = split_lines(select_lines(lines, allowed), space)
            chunks = chunks[: self.budget.max_map_calls]
        workers = max(1, min(self.budget.concurrency, len(chunks)))
        self.rounds += math.ceil(len(chunks) / workers)
        with ThreadPoolExecutor(workers, thread_name_prefix="summarize") as pool:
            return list(
                pool.map(
                    lambda chunk: self._call(
                        SUMMARY_INSTRUCTION, chunk, self.budget.partial_tokens
                    ),
                    chunks,
                )
            )

    def _combine(self, prior: str, partials: list[str]) -> str:
        """One call: the prior summary and the partials, each clipped to a fair share."""
        parts = ([f"Summary so far: {prior}"] if prior else []) + partials
        if len(parts) == 1:
            return parts[0]
        share = max(self._space(COMBINE_INSTRUCTION) // len(parts) - 1, 8)
        body = "\n".join(clip_to_tokens(part, share) for part in parts)
        self.rounds += 1
        return self._call(COMBINE_INSTRUCTION, body, self.max_new_tokens)
