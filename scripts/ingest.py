"""Load verified documents into the long-term index: `python -m scripts.ingest DIR`.

Reads every .md and .txt file under DIR (doc_id = its path relative to DIR), chunks, embeds
and indexes them with the configured backends (LONG_TERM_BACKEND, EMBED_BACKEND...).
Re-ingesting a file overwrites its passages.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chatmemory import wiring
from chatmemory.services.background.ingest import SourceDocument, ingest_documents


def read_documents(root: Path) -> list[SourceDocument]:
    """Every .md and .txt file under `root`, named by its path relative to it."""
    files = sorted(
        p for p in root.rglob("*") if p.suffix.lower() in (".md", ".txt") and p.is_file()
    )
    return [
        SourceDocument(
            doc_id=p.relative_to(root).as_posix(), text=p.read_text(encoding="utf-8"), source=str(p)
        )
        for p in files
    ]


def main() -> None:
    """Index the documents of the directory named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    args = parser.parse_args()
    index = wiring.long_term_index()
    if index is None:
        sys.exit("set LONG_TERM_BACKEND=embedded or opensearch first")
    documents = read_documents(args.directory)
    count = ingest_documents(documents, embedder=wiring.embedder(), index=index)
    print(f"indexed {count} passages from {len(documents)} documents")


if __name__ == "__main__":
    main()
