"""BM25 over a handful of candidate texts: the lexical half of hybrid ranking for a store that
returns vector candidates only (S3 Vectors without full-text search), and for the embedded
index restricted the same way (bench/locomo.py --ranking s3vectors).

The text is analysed as both indexes analyse it: words of letters and digits, lowercased,
diacritics removed, stopwords (schema.TEXT_STOPWORDS) dropped from the query, Porter stemming
(the original algorithm, as SQLite FTS5's `porter` tokenizer and OpenSearch's `porter_stem`
apply it). Corpus statistics (document frequencies, average length) come from the candidates
themselves: there is no other corpus at hand. Profile records are their own corpus, as their own
field is on OpenSearch (schema.RECORD_TEXT_FIELD): a record among the candidates never changes
how a session's entry scores.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from chatmemory.ports import Candidate
from chatmemory.schema import TEXT_STOPWORDS, searched_apart

# Letters and digits (FTS5's unicode61 tokenizer: "_" and punctuation separate words).
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOPWORDS = frozenset(TEXT_STOPWORDS)
# BM25's parameters, as FTS5's bm25() and Lucene's BM25Similarity use them.
K1 = 1.2
B = 0.75


def words(text: str) -> list[str]:
    """The text's words, lowercased and without diacritics (unicode61's folding)."""
    folded = unicodedata.normalize("NFKD", text.lower())
    if not folded.isascii():
        folded = "".join(c for c in folded if not unicodedata.combining(c))
    return _WORD.findall(folded)


def query_terms(text: str) -> list[str]:
    """The query's distinct stemmed terms, stopwords left out (as embedded.fts_query does)."""
    return sorted({stem(w) for w in words(text) if w not in _STOPWORDS})


def document_terms(text: str) -> list[str]:
    """Every stemmed word of a document, stopwords included: FTS5 counts them in a
    document's length."""
    return [stem(w) for w in words(text)]


def bm25(query: str, texts: Sequence[str]) -> list[float]:
    """The BM25 score of each of `texts` for `query`, with the texts as the corpus. IDF is
    Lucene's, log(1 + (N - n + 0.5) / (n + 0.5)): always positive, so a term that most
    candidates share still counts a little (FTS5's variant would zero it)."""
    terms = query_terms(query)
    if not terms or not texts:
        return [0.0] * len(texts)
    counted = [Counter(document_terms(text)) for text in texts]
    lengths = [sum(c.values()) for c in counted]
    average = (sum(lengths) / len(lengths)) or 1.0
    total = len(texts)
    idf = {}
    for term in terms:
        having = sum(1 for c in counted if term in c)
        idf[term] = math.log(1.0 + (total - having + 0.5) / (having + 0.5))
    scores = []
    for counts, length in zip(counted, lengths, strict=True):
        norm = K1 * (1.0 - B + B * length / average)
        score = 0.0
        for term in terms:
            frequency = counts.get(term, 0)
            if frequency:
                score += idf[term] * frequency * (K1 + 1.0) / (frequency + norm)
        scores.append(score)
    return scores


def rescore(
    candidates: Sequence[Candidate], text: str, k: int
) -> tuple[list[Candidate], list[Candidate]]:
    """Split vector candidates (best first) into what a hybrid search returns: the k nearest,
    and the k best BM25 matches of `text` among all the candidates (those sharing a term),
    the sessions' entries and the profile records each scored as a corpus of their own."""
    scores = [0.0] * len(candidates)
    for apart in (False, True):
        group = [
            i
            for i, c in enumerate(candidates)
            if searched_apart(c.doc.session_id, c.doc.record_id) == apart
        ]
        for i, score in zip(
            group, bm25(text, [candidates[i].doc.text for i in group]), strict=True
        ):
            scores[i] = score
    lexical = sorted(
        ((score, position) for position, score in enumerate(scores) if score > 0.0),
        key=lambda pair: (-pair[0], pair[1]),
    )[:k]
    return (
        list(candidates[:k]),
        [replace(candidates[i], vector_score=None, lexical_score=s) for s, i in lexical],
    )


# --- Porter's stemmer ------------------------------------------------------------------------
# The original algorithm (M.F. Porter, 1980) with the two departures of his reference C code
# that FTS5 and Lucene share ("bli" -> "ble", "logi" -> "log"). Words shorter than 3
# characters or longer than 64 are left as they are (FTS5 does the same).

_VOWELS = frozenset("aeiou")
# FTS5 leaves longer tokens (ids, hashes) unstemmed.
_LONGEST_STEMMED = 64


def _consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem_: str) -> int:
    """m in [C](VC)^m[V]."""
    m = 0
    previous_vowel = False
    for i in range(len(stem_)):
        vowel = not _consonant(stem_, i)
        if previous_vowel and not vowel:
            m += 1
        previous_vowel = vowel
    return m


def _has_vowel(stem_: str) -> bool:
    return any(not _consonant(stem_, i) for i in range(len(stem_)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y."""
    if len(word) < 3:
        return False
    return (
        _consonant(word, len(word) - 3)
        and not _consonant(word, len(word) - 2)
        and _consonant(word, len(word) - 1)
        and word[-1] not in "wxy"
    )


_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _longest(word: str, suffixes: Sequence[str]) -> str | None:
    """The longest of `suffixes` that `word` ends with (only that one is considered, as in
    Porter's code, even when its condition then fails)."""
    best = None
    for suffix in suffixes:
        if word.endswith(suffix) and (best is None or len(suffix) > len(best)):
            best = suffix
    return best


def _replace(word: str, rules: Sequence[tuple[str, str]], min_measure: int) -> str:
    suffix = _longest(word, [s for s, _ in rules])
    if suffix is None:
        return word
    base = word[: -len(suffix)]
    if _measure(base) > min_measure:
        return base + dict(rules)[suffix]
    return word


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter's stem of a lowercase word."""
    if not 3 <= len(word) <= _LONGEST_STEMMED:
        return word
    # Step 1a
    if word.endswith(("sses", "ies")):  # -> ss, i
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    # Step 1b
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = word[: -len(suffix)]
                if word.endswith(("at", "bl", "iz")):
                    word += "e"
                elif _double_consonant(word) and word[-1] not in "lsz":
                    word = word[:-1]
                elif _measure(word) == 1 and _cvc(word):
                    word += "e"
                break
    # Step 1c
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    # Steps 2 and 3
    word = _replace(word, _STEP2, 0)
    word = _replace(word, _STEP3, 0)
    # Step 4
    ending = _longest(word, _STEP4)
    if ending is not None:
        base = word[: -len(ending)]
        if _measure(base) > 1 and (ending != "ion" or base.endswith(("s", "t"))):
            word = base
    # Step 5a
    if word.endswith("e"):
        base = word[:-1]
        m = _measure(base)
        if m > 1 or (m == 1 and not _cvc(base)):
            word = base
    # Step 5b
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word
