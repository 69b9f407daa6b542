"""`make ingest DIR=...`: load verified documents (.md, .txt under DIR) into local mode's
long-term index, for `/verified` answers. The same code as `python -m scripts.ingest`, with the
local settings (embedded index in .local/, offline embeddings unless set otherwise)."""

from __future__ import annotations

import sys

from local.config import apply_local_defaults


def main() -> None:
    apply_local_defaults()
    # A running `make run` sees the new passages at once (the index notices other writers).
    from scripts.ingest import main as ingest

    ingest()


if __name__ == "__main__":
    sys.argv[0] = "make ingest DIR=..."
    main()
