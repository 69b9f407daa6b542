"""Fit the model that judges a statement lasting or passing by meaning (services/profile/
lasting.py) for an embedder, from general labelled chat messages (sentences.jsonl: four writers
asked for casual texting, formal British, English as a second language and chatty American; none
from a benchmark's data), and say how it does on a writer it never saw.

    python -m scripts.lasting                # MiniLM (the local default): report and write
    python -m scripts.lasting --report-only  # the leave-one-writer-out table only

The regularisation and the threshold are chosen leaving one writer out: a statement the rules
keep as lasting (extract.PatternExtractor) and are not sure of is taken out when the model's
chance that it is passing is above the threshold; the choice counts a lasting statement lost
twice and a passing remark kept once (a lost fact is a question answered without it, an allergy
ignored; a kept remark is a line the user sees on the page and can delete). The weights are then
fitted on all four writers.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from chatmemory.services.profile.extract import PatternExtractor
from chatmemory.services.profile.lasting import WEIGHTS
from chatmemory.services.profile.traits import said_to_last

SENTENCES = Path(__file__).with_name("sentences.jsonl")
STRENGTHS = (0.3, 1.0, 3.0, 10.0)
# What a lasting statement lost counts, a passing remark kept counting 1.
LOST = 2
THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(7))


def examples(path: Path = SENTENCES) -> list[tuple[str, int, str]]:
    """(text, 1 if passing else 0, writer): a compound gives its facts and its passing parts."""
    rows: list[tuple[str, int, str]] = []
    for line in path.read_text().splitlines():
        item = json.loads(line)
        writer = item["writer"]
        if item["label"] == "compound":
            rows += [(fact, 0, writer) for fact in item["facts"]]
            rows += [(part, 1, writer) for part in item.get("passing", [])]
        else:
            rows.append((item["text"], int(item["label"] == "passing"), writer))
    return rows


def kept_by_rules(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Whether the rules keep each text, and whether they are sure of it (it says it lasts:
    the judge does not read it)."""
    extractor = PatternExtractor()
    kept = [extractor.statements(t) for t in texts]
    sure = [bool(found) and all(said_to_last(f.text) for f in found) for found in kept]
    return np.array([bool(found) for found in kept]), np.array(sure)


def _fit(x: np.ndarray, y: np.ndarray, strength: float):  # type: ignore[no-untyped-def]
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=strength, max_iter=5000, class_weight="balanced").fit(x, y)


def leave_one_writer_out(
    x: np.ndarray, y: np.ndarray, writers: np.ndarray, rules: np.ndarray, sure: np.ndarray
) -> dict[tuple[float, float], tuple[int, int]]:
    """(strength, threshold) -> (passing remarks kept, lasting statements lost) over the writers
    each left out."""
    chances: dict[float, np.ndarray] = {}
    for strength in STRENGTHS:
        chance = np.zeros(len(y))
        for writer in sorted(set(writers)):
            out = writers == writer
            chance[out] = _fit(x[~out], y[~out], strength).predict_proba(x[out])[:, 1]
        chances[strength] = chance
    table = {}
    for strength, chance in chances.items():
        for threshold in THRESHOLDS:
            kept = rules & (sure | (chance <= threshold))
            table[strength, threshold] = (
                int((kept & (y == 1)).sum()),
                int((~kept & (y == 0)).sum()),
            )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    from chatmemory.adapters.offline.embedder import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    rows = examples()
    texts = [t for t, _, _ in rows]
    y = np.array([label for _, label, _ in rows])
    writers = np.array([w for _, _, w in rows])
    x = np.array(embedder.embed(texts))
    rules, sure = kept_by_rules(texts)
    passing, lasting = int((y == 1).sum()), int((y == 0).sum())
    print(
        f"{len(rows)} statements of {len(set(writers))} writers: "
        f"{passing} passing, {lasting} lasting"
    )
    print(
        f"rules alone: passing kept {int((rules & (y == 1)).sum())}/{passing}, "
        f"lasting lost {int((~rules & (y == 0)).sum())}/{lasting}"
    )
    table = leave_one_writer_out(x, y, writers, rules, sure)
    for (strength, threshold), (kept, lost) in table.items():
        print(
            f"C={strength:<5} threshold={threshold:.2f}: "
            f"passing kept {kept}/{passing}, lasting lost {lost}/{lasting}"
        )
    strength, threshold = min(table, key=lambda k: (table[k][0] + LOST * table[k][1], k))
    kept, lost = table[strength, threshold]
    print(
        f"chosen: C={strength} threshold={threshold:.2f} (passing kept {kept}, lasting lost {lost})"
    )
    if args.report_only:
        return
    model = _fit(x, y, strength)
    fitted = json.loads(WEIGHTS.read_text()) if WEIGHTS.exists() else {}
    fitted[embedder.name] = {
        "weights": [round(float(w), 6) for w in model.coef_[0]],
        "bias": round(float(model.intercept_[0]), 6),
        "threshold": threshold,
        "strength": strength,
        "leave_one_writer_out": {
            "passing_kept": kept,
            "passing": passing,
            "lasting_lost": lost,
            "lasting": lasting,
        },
    }
    WEIGHTS.write_text(json.dumps(fitted, indent=1) + "\n")
    print(f"written: {WEIGHTS}")


if __name__ == "__main__":
    main()
