"""Local mode's hand-off events: one JSON line per event (EventBridge's envelope) in a file a
person can read or tail, since there is no bus on a laptop."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from chatmemory import schema
from chatmemory.clock import iso, utc_now
from chatmemory.errors import EventsUnavailable


class JsonLinesEventPublisher:
    """EventPublisher that appends to `path` (the gateway's worker processes append to the
    same file: each event is one write of one line to a file opened for appending)."""

    def __init__(self, path: str | Path, clock: Callable[[], datetime] = utc_now) -> None:
        self._path = Path(path)
        self._clock = clock

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        event = {
            "id": str(uuid.uuid4()),
            "time": iso(self._clock()),
            "source": schema.EVENT_SOURCE,
            "detail-type": detail_type,
            "detail": detail,
        }
        line = (json.dumps(event, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(descriptor, line)
            finally:
                os.close(descriptor)
        except OSError as error:
            raise EventsUnavailable(f"cannot write {self._path}: {error}") from error


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Every event of the file, oldest first (none when it does not exist yet)."""
    file = Path(path)
    if not file.exists():
        return []
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line]
