"""A stand-in OpenAI-compatible model server on 127.0.0.1, for the tests and the benchmarks: it
answers POSTs with the replies it is given, in order (or with `answer(request)`), and records
every request it received. A reply may stream: its chunks are sent one by one (chunked transfer
encoding), waiting where the test put an Event (a hook between two pieces of an answer), and may
break off without ending. `StandInModel` streams chat.completion.chunk events to every streamed
request (`chunk`, `answer`, `endless`) and answers the others whole (`completion`)."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-serializable, or bytes sent as they are
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (to provoke client timeouts)
    # A streamed body: each bytes sent as one chunk, each Event waited for (not set within
    # 10 s, the connection drops: a client that waits for the whole body fails).
    chunks: Sequence[bytes | threading.Event] = ()
    broken: bool = False  # the streamed body stops without its last chunk: the connection drops
    content_type: str = "application/json"
    # The connection is closed without an answer (it breaks before the answer).
    hang_up: bool = False
    # After a streamed body the connection stays open for the next request (else it closes).
    keep_alive: bool = False


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int = 0  # the client's end of the connection it came on

    def json(self) -> Any:
        return json.loads(self.body)


class ScriptedServer:
    """Answers each POST with the next scripted Reply, else with `answer(request)` when set,
    else 500."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.replies: deque[Reply] = deque()
        self.answer: Callable[[Received], Reply] | None = None
        self.received: list[Received] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received = Received(
                    self.path, dict(self.headers.items()), body, self.client_address[1]
                )
                server.received.append(received)
                if server.replies:
                    reply = server.replies.popleft()
                elif server.answer is not None:
                    reply = server.answer(received)
                else:
                    reply = Reply(500, {"error": "no reply scripted"})
                time.sleep(reply.delay)
                if reply.hang_up:
                    self.close_connection = True
                    return
                if reply.chunks:
                    self._stream(reply)
                    return
                raw = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(raw)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass  # the client gave up waiting (a timeout test)

            def _stream(self, reply: Reply) -> None:
                self.close_connection = reply.broken or not reply.keep_alive
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Transfer-Encoding", "chunked")
                    if self.close_connection:  # say so: a client must not send on this socket
                        self.send_header("Connection", "close")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    for chunk in reply.chunks:
                        if isinstance(chunk, threading.Event):
                            if not chunk.wait(10):
                                return  # never let through: the connection drops
                        elif chunk:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            self.wfile.flush()
                    if not reply.broken:
                        self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass  # the client gave up reading

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        if quiet:  # a client's pool closes idle keep-alive connections: nothing to report
            self._http.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def completion(text: str, *, usage: dict[str, int] | None = None) -> dict[str, Any]:
    """A whole chat.completion answer of `text`."""
    body: dict[str, Any] = {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "model": "standin",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def chunk(text: str = "", finish: str | None = None) -> bytes:
    """One server-sent chat.completion.chunk."""
    choice = {"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}
    body = {
        "id": "chatcmpl-standin",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "standin",
        "choices": [choice],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def answer(pieces: Iterable[str | threading.Event], *, delay: float = 0.0) -> Iterator[bytes]:
    """The chunks of an answer written piece by piece (`delay` seconds before each, an Event
    waited for), then its end."""
    for piece in pieces:
        if isinstance(piece, threading.Event):
            if not piece.wait(10):
                return
            continue
        time.sleep(delay)
        yield chunk(piece)
    yield chunk(finish="stop")
    yield b"data: [DONE]\n\n"


def endless(first: Sequence[str], *, delay: float = 0.01) -> Iterator[bytes]:
    """An answer that never ends: `first`, then "more " every `delay` seconds until the reader
    closes the connection (the server stopped the model)."""
    for piece in first:
        yield chunk(piece)
    while True:
        time.sleep(delay)
        yield chunk("more ")


class StandInModel(ScriptedServer):
    """The stand-in model: each streamed request is answered by the next of `streams` (chunks,
    sent as they come), any other request (and a streamed one when none is left) with
    "Noted."."""

    def __init__(self) -> None:
        super().__init__()
        self.streams: list[Iterable[bytes]] = []
        self.answer = self._answer

    def _answer(self, received: Received) -> Reply:
        if received.json().get("stream"):
            chunks = self.streams.pop(0) if self.streams else answer(["Noted."])
            return Reply(chunks=Chunks(chunks), content_type="text/event-stream")
        return Reply(body=completion("Noted."))


class Chunks(Sequence[bytes]):
    """Chunks written as they are made (the scripted server iterates `Reply.chunks` once)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)

    def __len__(self) -> int:
        return 1  # not empty: the server streams it

    def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
        raise TypeError("read once, in order")


class PacedModel(ScriptedServer):
    """A model that writes `tokens` tokens, one every `token_ms` milliseconds: streamed as
    chunks on a keep-alive connection, or whole once all are made. Records when each streamed
    request came and when its first token was written (`firsts`, perf_counter: this process's
    clock), for bench/streaming.py."""

    def __init__(self, token_ms: float, tokens: int) -> None:
        super().__init__(quiet=True)
        self.delay = token_ms / 1000
        self.tokens = tokens
        self.firsts: list[tuple[float, float]] = []  # (received, first token written)
        self._lock = threading.Lock()
        self.answer = self._paced

    @property
    def url(self) -> str:
        """The OpenAI base URL (OPENAI_BASE_URL) of this model."""
        return f"{super().url}/v1"

    @property
    def server(self) -> ThreadingHTTPServer:
        return self._http

    def _paced(self, received: Received) -> Reply:
        words = ["Sure", *(f" word{n}" for n in range(1, self.tokens))]
        if not received.json().get("stream"):
            usage = {"prompt_tokens": 100, "completion_tokens": len(words)}
            body = completion("".join(words), usage=usage)
            return Reply(body=body, delay=self.delay * len(words))
        stream = Chunks(self._stream(words, time.perf_counter()))
        return Reply(chunks=stream, content_type="text/event-stream", keep_alive=True)

    def _stream(self, words: list[str], received: float) -> Iterator[bytes]:
        for n, word in enumerate(words):
            time.sleep(self.delay)
            yield chunk(word)
            if n == 0:  # written: the server asks for the next chunk once it sent this one
                with self._lock:
                    self.firsts.append((received, time.perf_counter()))
        yield chunk(finish="stop")
        yield b"data: [DONE]\n\n"
