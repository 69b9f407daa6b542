"""Summaries that fit the model: map-reduce over chunks of a transcript.

FLAN-T5 reads 512 tokens, so a long session is cut into chunks that fit with the instruction,
each chunk is summarized, and the partial summaries are combined (again in chunks if needed).
"""

from __future__ import annotations

from collections.abc import Sequence

from chatmemory.ports import TextGenerator
from chatmemory.services.prompt import clip_to_tokens, estimate_tokens

SUMMARY_INSTRUCTION = "Summarize this conversation, keeping names, facts, dates and decisions:"
COMBINE_INSTRUCTION = "Combine these summaries of one conversation into one summary:"
EXTEND_INSTRUCTION = (
    "Here is a summary of a conversation so far and the turns that followed. "
    "Write the updated summary, keeping names, facts, dates and decisions:"
)


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


class ModelSummarizer:
    """Summarizer on a TextGenerator, respecting its context limit."""

    def __init__(self, generator: TextGenerator, *, max_new_tokens: int = 150) -> None:
        self.generator = generator
        self.name = f"summary:{generator.name}"
        self.max_new_tokens = max_new_tokens
        self.calls = 0

    def _budget(self, instruction: str) -> int:
        # Leave room for the instruction and a margin for the token estimate's error.
        return int(self.generator.context_tokens * 0.9) - estimate_tokens(instruction) - 4

    def _call(self, instruction: str, body: str) -> str:
        self.calls += 1
        prompt = f"{instruction}\n{body}\nSummary:"
        return self.generator.generate(prompt, max_new_tokens=self.max_new_tokens).text.strip()

    def summarize(self, text: str) -> str:
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            return ""
        parts = [
            self._call(SUMMARY_INSTRUCTION, chunk)
            for chunk in split_lines(lines, self._budget(SUMMARY_INSTRUCTION))
        ]
        while len(parts) > 1:
            chunks = split_lines(parts, self._budget(COMBINE_INSTRUCTION))
            if len(chunks) == len(parts) and len(parts) > 1:
                # Each partial fills a chunk alone: pair them up so the loop always shrinks.
                chunks = ["\n".join(parts[i : i + 2]) for i in range(0, len(parts), 2)]
                chunks = [clip_to_tokens(c, self._budget(COMBINE_INSTRUCTION)) for c in chunks]
            parts = [self._call(COMBINE_INSTRUCTION, chunk) for chunk in chunks]
        return parts[0]

    def extend(self, summary: str, new_text: str) -> str:
        """Rolling summary: the existing summary plus the newer turns, into one summary."""
        body_budget = self._budget(EXTEND_INSTRUCTION)
        summary = clip_to_tokens(summary, body_budget // 3) if summary else ""
        new_budget = body_budget - estimate_tokens(summary)
        if estimate_tokens(new_text) > new_budget:
            new_text = self.summarize(new_text)
        body = f"Summary so far: {summary}\nNew turns:\n{new_text}" if summary else new_text
        return self._call(EXTEND_INSTRUCTION, body)
