"""Local mode's stream poller waits, before each of its reads, while a streamed answer has not
sent its first chunk (issue 40): DynamoDB Local answers one request at a time, and the poller's
reads, woken by the request just before (a new session, the last turn), queued ahead of the
turn's own reads and write before its first word. The wait is bounded: background work
(consolidation, indexing) is late by at most that, never stopped."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from handlers.stream import Answer
from local.gateway.server import Gateway, StartingAnswers
from tests.unit.test_stream_poller import ENDED, FakeStreams, Recorder, _poller


class _HeldStream(Gateway):
    """A gateway whose streamed answers send their first chunk when `release` is set."""

    def __init__(self, web_dir: Path) -> None:
        super().__init__(
            lambda event, context: {"statusCode": 200, "body": ""}, port=0, web_dir=web_dir
        )
        self.entered, self.release = threading.Event(), threading.Event()

    def stream(self, event: dict[str, Any]) -> Answer:
        self.entered.set()

        def body() -> Iterator[bytes]:
            assert self.release.wait(30)
            yield b'event: delta\ndata: {"text": "hi"}\n\n'
            yield b"event: turn\ndata: {}\n\n"

        return Answer(200, [("Content-Type", "text/event-stream")], body())


def test_a_streamed_answer_is_starting_until_its_first_chunk_is_sent(tmp_path: Path) -> None:
    with _HeldStream(tmp_path) as gateway:
        assert gateway.starting.wait(0)
        host, port = gateway.url.removeprefix("http://").split(":")
        read: list[bytes] = []

        def post() -> None:
            connection = http.client.HTTPConnection(host, int(port), timeout=30)
            connection.request(
                "POST", "/sessions/s-1/messages/stream", json.dumps({"content": "hi"})
            )
            read.append(connection.getresponse().read())

        client = threading.Thread(target=post)
        client.start()
        assert gateway.entered.wait(30)
        assert not gateway.starting.wait(0.2)  # before its first chunk
        gateway.release.set()
        assert gateway.starting.wait(30)  # once it is sent
        client.join(30)
        assert b"event: turn" in read[0]


def test_the_poller_reads_once_the_starting_answer_has_started(tmp_path: Path) -> None:
    stream, handler, starting = FakeStreams(), Recorder(), StartingAnswers()
    stream.put("shard-1", "MODIFY", "a", **ENDED)
    poller = _poller(stream, tmp_path, handler, lambda: starting.wait(30))
    with starting.starting() as started:
        stepped = threading.Thread(target=poller.poll_once)
        stepped.start()
        stepped.join(0.3)
        assert stepped.is_alive() and stream.reads == []  # waits for the answer's first chunk
        started()
        stepped.join(30)
    assert stream.reads and handler.batches == [["a"]]


def test_the_poller_waits_for_a_starting_answer_a_bounded_time(tmp_path: Path) -> None:
    stream, handler, starting = FakeStreams(), Recorder(), StartingAnswers()
    stream.put("shard-1", "MODIFY", "a", **ENDED)
    poller = _poller(stream, tmp_path, handler, lambda: starting.wait(0.05))
    with starting.starting():
        poller.poll_once()  # an answer that never starts does not stop it
        assert handler.batches == [["a"]]
