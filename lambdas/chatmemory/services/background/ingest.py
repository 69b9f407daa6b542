"""Ingestion of verified documents: chunk text/markdown, embed, index as shared passages."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from chatmemory.ports import Embedder, LongTermIndex, MemoryDoc
from chatmemory.schema import PASSAGE_INDEX, SHARED_OWNER, MemoryKind, passage_doc_key
from chatmemory.services.background.consolidation import embed_documents


@dataclass(frozen=True)
class SourceDocument:
    doc_id: str
    text: str
    source: str = ""
    title: str = ""


def chunk_text(text: str, *, max_words: int = 120, overlap_words: int = 20) -> list[str]:
    """Passages of whole paragraphs up to max_words; a longer paragraph is split in windows
    that overlap, so a fact on a boundary stays whole in one passage."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    passages: list[str] = []
    current: list[str] = []
    for paragraph in paragraphs:
        words = paragraph.split()
        if len(words) > max_words:
            if current:
                passages.append(" ".join(current))
                current = []
            step = max(max_words - overlap_words, 1)
            for start in range(0, len(words), step):
                passages.append(" ".join(words[start : start + max_words]))
                if start + max_words >= len(words):
                    break
            continue
        if len(current) + len(words) > max_words and current:
            passages.append(" ".join(current))
            current = []
        current += words
    if current:
        passages.append(" ".join(current))
    return passages


def ingest_documents(
    documents: Iterable[SourceDocument],
    *,
    embedder: Embedder,
    index: LongTermIndex,
    max_words: int = 120,
) -> int:
    """Index every document's passages (ids `<doc_id>#p<n>`, stable across re-ingestion)."""
    docs: list[MemoryDoc] = []
    for document in documents:
        title = document.title or _title(document.text) or document.doc_id
        for n, passage in enumerate(chunk_text(document.text, max_words=max_words), start=1):
            docs.append(
                MemoryDoc(
                    doc_key=passage_doc_key(document.doc_id, n),
                    user_id=SHARED_OWNER,
                    kind=MemoryKind.PASSAGE,
                    text=passage,
                    created_at="1970-01-01T00:00:00.000Z",
                    title=title,
                    doc_id=document.doc_id,
                    passage_id=f"p{n}",
                    source=document.source or document.doc_id,
                )
            )
    embed_documents(embedder, docs)
    index.upsert(PASSAGE_INDEX, docs)
    # A document re-ingested shorter than before must not keep answering with its old tail.
    for doc_id in dict.fromkeys(d.doc_id for d in docs if d.doc_id):
        index.delete_document(doc_id, keep=[d.doc_key for d in docs if d.doc_id == doc_id])
    return len(docs)


def _title(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:120]
    return ""
