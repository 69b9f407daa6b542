"""Where each shard's poller stopped: the checkpoint file, replaced atomically."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class CheckpointStore:
    """Last processed sequence number per mapping and shard, in one JSON file replaced
    atomically (write a temporary file, fsync, rename), so a crash never leaves half a file."""

    VERSION = 1

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._shards: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            self._shards = dict(data.get("shards", {}))

    def get(self, key: str) -> dict[str, Any] | None:
        """The saved entry of one shard (a copy), or None."""
        with self._lock:
            entry = self._shards.get(key)
            return dict(entry) if entry else None

    def shard_keys(self) -> list[str]:
        """Every shard with a saved entry."""
        with self._lock:
            return list(self._shards)

    def set(self, key: str, **entry: Any) -> None:
        """Update one shard's entry and write the file."""
        with self._lock:
            self._shards[key] = {**self._shards.get(key, {}), **entry}
            self._write()

    def forget(self, keys: Iterable[str]) -> None:
        """Drop the entries of these shards (the file is written only if one existed)."""
        with self._lock:
            gone = [k for k in keys if self._shards.pop(k, None) is not None]
            if gone:
                self._write()

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"version": self.VERSION, "shards": self._shards}, indent=1)
        fd, tmp = tempfile.mkstemp(prefix=".checkpoints-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(body)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
