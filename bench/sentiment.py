"""Sentiment of user turns: accuracy of the configured analyzer on human-rated text, and its cost.

The labelled set is the ground truth of VADER's paper (Hutto & Gilbert, "VADER: A Parsimonious
Rule-based Model for Sentiment Analysis of Social Media Text", ICWSM 2014), which ships in the
source distribution of vaderSentiment 3.3.2 on PyPI (additional_resources/hutto_ICWSM_2014.tar.gz,
MIT licence): sentence-level texts, each rated from -4 to +4 by at least 20 screened raters.

* `amazon`: 3,708 snippets of 309 customer reviews of 5 products (Hu & Liu 2004): the closest
  to what users tell a support chat. Not used to build VADER's rules.
* `tweets`: 4,200 tweet-like texts, 200 of them contrived by the authors to measure VADER's
  rules (punctuation, capitals, degree words, "but", negation): optimistic for VADER.
* `movies` (10,605 Rotten Tomatoes snippets) and `nyt` (5,190 opinion-editorial sentences):
  further from chat, for reference.

A text's gold label is its mean rating scaled to [-1, 1] with the paper's thresholds, which are
VADER's own: at least +0.05 positive, at most -0.05 negative, neutral between (a mean rating of
+-0.2 on the raters' scale). The analyzer's label follows the same thresholds on its score.

    python -m bench.sentiment [--json] [--sets amazon,tweets] [--data PATH]

Without --data the source distribution is read from .local/bench/ (fetched there once with
`pip download vaderSentiment==3.3.2 --no-deps --no-binary :all:`; nothing is committed).
--data also takes the inner hutto_ICWSM_2014.tar.gz, a folder of its *_GroundTruth.txt files,
or any tab-separated file of `label<TAB>text` (positive, negative, neutral) or `rating<TAB>text`
or `id<TAB>rating<TAB>text` lines (ratings from -4 to 4): give a set of your own that way.

`--analyzer model` scores the text model of the environment's settings instead (one call per
text: use --limit), falling back to VADER on a malformed answer as chat turns do; for example
`TEXT_BACKEND=bedrock TEXT_MODEL_ID=... python -m bench.sentiment --analyzer model --limit 200`.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chatmemory.ports import SentimentAnalyzer
from chatmemory.schema import SentimentLabel
from chatmemory.services.conversation.sentiment import label_of

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".local" / "bench"
SDIST = "vaderSentiment-3.3.2.tar.gz"
INNER = "additional_resources/hutto_ICWSM_2014.tar.gz"
SET_NAME = "VADER ICWSM-2014 ground truth (Hutto & Gilbert 2014, in vaderSentiment 3.3.2's sdist)"
FILES = {
    "amazon": "amazonReviewSnippets_GroundTruth.txt",
    "tweets": "tweets_GroundTruth.txt",
    "movies": "movieReviewSnippets_GroundTruth.txt",
    "nyt": "nytEditorialSnippets_GroundTruth.txt",
}
LABELS = (SentimentLabel.POSITIVE, SentimentLabel.NEGATIVE, SentimentLabel.NEUTRAL)


@dataclass
class Example:
    text: str
    gold: SentimentLabel


def gold_of_rating(rating: float) -> SentimentLabel:
    """A mean rating on the raters' -4..4 scale, scaled to [-1, 1], labelled as VADER's."""
    return label_of(rating / 4)


def parse_lines(lines: Iterable[str]) -> list[Example]:
    """`id<TAB>rating<TAB>text` (the ground-truth files), `rating<TAB>text` or `label<TAB>text`."""
    examples = []
    for line in lines:
        parts = line.rstrip("\r\n").split("\t")
        if len(parts) < 2 or not parts[-1].strip():
            continue
        text, fields = parts[-1], parts[:-1]
        label = fields[-1].strip().lower()
        if label in set(SentimentLabel):
            examples.append(Example(text, SentimentLabel(label)))
            continue
        try:
            examples.append(Example(text, gold_of_rating(float(label))))
        except ValueError:
            continue  # a header line
    return examples


def _read_archive(data: bytes, sets: Sequence[str]) -> dict[str, list[Example]]:
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        names = archive.getnames()
        inner = next((n for n in names if n.endswith(INNER)), None)
        if inner is not None:  # the sdist: the corpora are a tarball inside it
            member = archive.extractfile(inner)
            assert member is not None
            return _read_archive(member.read(), sets)
        found = {}
        for name in sets:
            path = next((n for n in names if n.endswith("/" + FILES[name])), None)
            if path is None:
                raise SystemExit(f"{FILES[name]} is not in the archive")
            member = archive.extractfile(path)
            assert member is not None
            found[name] = parse_lines(member.read().decode("utf-8", "replace").splitlines())
        return found


def fetch_sdist() -> Path:
    """vaderSentiment's source distribution, downloaded once with pip into .local/bench/."""
    target = CACHE / SDIST
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "vaderSentiment==3.3.2"]
        command += ["--no-deps", "--no-binary", ":all:", "-q", "-d", str(CACHE)]
        subprocess.run(command, check=True)
    return target


def load(data: Path | None, sets: Sequence[str]) -> dict[str, list[Example]]:
    path = data or fetch_sdist()
    if path.is_dir():
        return {
            name: parse_lines((path / FILES[name]).read_text("utf-8", "replace").splitlines())
            for name in sets
        }
    if path.name.endswith((".tar.gz", ".tgz", ".tar")):
        return _read_archive(path.read_bytes(), sets)
    return {path.stem: parse_lines(path.read_text("utf-8", "replace").splitlines())}


def scores(examples: Sequence[Example], predicted: Sequence[SentimentLabel]) -> dict[str, Any]:
    """Accuracy, per-class precision, recall and F1, macro F1 and the confusion counts."""
    pairs = Counter(zip((e.gold for e in examples), predicted, strict=True))
    per_class = {}
    for label in LABELS:
        true_pos = pairs[(label, label)]
        said = sum(count for (_, guess), count in pairs.items() if guess == label)
        real = sum(count for (gold, _), count in pairs.items() if gold == label)
        precision = true_pos / said if said else 0.0
        recall = true_pos / real if real else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[label.value] = {
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(f1, 4),
            "n": real,
        }
    right = sum(pairs[(label, label)] for label in LABELS)
    return {
        "n": len(examples),
        "accuracy": round(right / len(examples), 4) if examples else 0.0,
        "macro_f1": round(sum(c["f1"] for c in per_class.values()) / len(LABELS), 4),
        "per_class": per_class,
        "confusion": {f"{gold}->{guess}": count for (gold, guess), count in sorted(pairs.items())},
    }


def analyzer_of(kind: str) -> SentimentAnalyzer:
    from chatmemory.adapters.offline.sentiment import VaderSentimentAnalyzer

    if kind == "vader":
        return VaderSentimentAnalyzer()
    from chatmemory import wiring
    from chatmemory.services.conversation.sentiment import ModelSentimentAnalyzer

    return ModelSentimentAnalyzer(wiring.text_generator(), fallback=VaderSentimentAnalyzer())


def _spread(examples: list[Example], limit: int | None) -> list[Example]:
    if not limit or limit >= len(examples):
        return examples
    step = len(examples) / limit
    return [examples[int(i * step)] for i in range(limit)]


def run(
    data: Path | None, sets: Sequence[str], kind: str = "vader", limit: int | None = None
) -> dict[str, Any]:
    corpora = {name: _spread(examples, limit) for name, examples in load(data, sets).items()}
    analyzer = analyzer_of(kind)
    started = time.perf_counter()
    analyzer.analyze("warming up: the first message loads the lexicon")
    first_ms = (time.perf_counter() - started) * 1000
    by_set, everything, guesses, seconds = {}, [], [], 0.0
    for name, examples in corpora.items():
        started = time.perf_counter()
        predicted = [analyzer.analyze(e.text).label for e in examples]
        seconds += time.perf_counter() - started
        by_set[name] = scores(examples, predicted)
        everything += examples
        guesses += predicted
    result = {
        "set": f"{SET_NAME}: {'+'.join(corpora)}" if data is None else str(data),
        "analyzer": analyzer.name,
        **scores(everything, guesses),
        "by_set": by_set,
        "first_message_ms": round(first_ms, 1),
        "ms_per_message": round(seconds * 1000 / max(1, len(everything)), 4),
        "mean_chars": round(sum(len(e.text) for e in everything) / max(1, len(everything)), 1),
    }
    if hasattr(analyzer, "fallbacks"):
        result["model_fallbacks"] = analyzer.fallbacks
    return result


def _print(result: dict[str, Any], as_json: bool) -> None:
    print(f"{result['set']}\nanalyzer {result['analyzer']}")
    for name, found in [("all", result), *result["by_set"].items()]:
        classes = "  ".join(
            f"{label} P {c['precision']:.3f} R {c['recall']:.3f} (n {c['n']})"
            for label, c in found["per_class"].items()
        )
        print(
            f"{name:>7}: n {found['n']:>5}  accuracy {found['accuracy']:.3f}  "
            f"macro F1 {found['macro_f1']:.3f}  {classes}"
        )
    print(
        f"first message {result['first_message_ms']} ms (loads the lexicon), then "
        f"{result['ms_per_message']} ms per message of {result['mean_chars']} characters on average"
    )
    if as_json:
        print(json.dumps(result, sort_keys=True))


def main() -> None:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(
        description=doc.splitlines()[0],
        epilog=doc.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", type=Path, default=None, help="a labelled set (see above)")
    parser.add_argument(
        "--sets", default="amazon,tweets", help=f"of the ground truth: {', '.join(FILES)}, all"
    )
    parser.add_argument("--analyzer", choices=("vader", "model"), default="vader")
    parser.add_argument("--limit", type=int, default=None, help="texts per set, evenly spread")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    sets = list(FILES) if args.sets == "all" else [s.strip() for s in args.sets.split(",")]
    unknown = [name for name in sets if name not in FILES]
    if unknown:
        parser.error(f"unknown sets {unknown}; choose from {', '.join(FILES)}")
    _print(run(args.data, sets, args.analyzer, args.limit), args.json)


if __name__ == "__main__":
    main()
