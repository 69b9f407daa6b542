"""Whether a statement is lasting or passing, by meaning: a linear model over the embedder's
vectors, fitted on general labelled sentences (scripts/lasting: four writers' chat messages, none
from a benchmark's data).

The pattern rules (traits.passing) know the forms their authors thought of; a new writer's
remarks ("eating a massive bowl of pho rn", "the grandchildren are with us until Tuesday") pass
them. Fitted on three writers and tried on the fourth, in turn, the rules kept 27% of the
passing remarks as lasting facts, the rules and this model together 6%, for 3.1% of lasting
statements lost instead of 2.7% (`python -m scripts.lasting`). The model only takes out what the
rules kept and are not sure of (extract.PatternExtractor: what says it lasts is not judged):
what they leave out stays out.

Weights exist for the embedders they were fitted for (`lasting_weights.json`, by the embedder's
`name`); for any other embedder (Bedrock, SageMaker, a served model, the tests' hashing one)
there is no judge and the rules decide alone. In AWS the extraction is the text model's
(extract.ModelExtractor), told to leave passing remarks out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from chatmemory.model_ports import Embedder

WEIGHTS = Path(__file__).with_name("lasting_weights.json")


@dataclass(frozen=True)
class LastingModel:
    """A logistic model: the chance that a statement is a passing remark."""

    weights: tuple[float, ...]
    bias: float
    # Above it, a statement is passing (chosen leaving one writer out, scripts/lasting).
    threshold: float

    def passing_chance(self, vector: Sequence[float]) -> float:
        score = self.bias + sum(w * x for w, x in zip(self.weights, vector, strict=True))
        return 1.0 / (1.0 + math.exp(-score))


class LastingJudge:
    """Which statements are passing remarks, for one embedder."""

    def __init__(self, embedder: Embedder, model: LastingModel) -> None:
        self.embedder = embedder
        self.model = model

    def passing(self, texts: Sequence[str]) -> list[bool]:
        if not texts:
            return []
        vectors = self.embedder.embed(list(texts))
        return [self.model.passing_chance(v) > self.model.threshold for v in vectors]


@cache
def _models(path: Path = WEIGHTS) -> dict[str, LastingModel]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return {
        name: LastingModel(tuple(entry["weights"]), entry["bias"], entry["threshold"])
        for name, entry in data.items()
    }


def judge_for(embedder: Embedder) -> LastingJudge | None:
    """The judge of `embedder`'s vectors, or None when no weights were fitted for it."""
    model = _models().get(embedder.name)
    if model is None or len(model.weights) != embedder.dimension:
        return None
    return LastingJudge(embedder, model)
