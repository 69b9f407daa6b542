"""A scripted HTTP model server on 127.0.0.1 for adapter tests: answers POSTs with the replies
it is given, in order, and records every request it received. A reply may stream: its chunks
are sent one by one (chunked transfer encoding), waiting where the test put an Event (a hook
between two pieces of an answer), and may break off without ending."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Sequence
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


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ScriptedServer:
    """Answers each POST with the next scripted Reply, else with `answer(request)` when set,
    else 500."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.answer: Callable[[Received], Reply] | None = None
        self.received: list[Received] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received = Received(self.path, dict(self.headers.items()), body)
                server.received.append(received)
                if server.replies:
                    reply = server.replies.popleft()
                elif server.answer is not None:
                    reply = server.answer(received)
                else:
                    reply = Reply(500, {"error": "no reply scripted"})
                time.sleep(reply.delay)
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
                self.close_connection = True
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Transfer-Encoding", "chunked")
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


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# --- AWS event streams (ConverseStream, InvokeEndpointWithResponseStream) ---------------------
# Their binary framing (application/vnd.amazon.eventstream), written as AWS writes it so that a
# real botocore client reads it: a prelude (total and header lengths, CRC32), headers of string
# type (7), the payload, and a CRC32 of the whole message.


def _event_message(headers: dict[str, str], payload: bytes) -> bytes:
    encoded = b"".join(
        struct.pack("B", len(name)) + name + b"\x07" + struct.pack(">H", len(value)) + value
        for name, value in ((k.encode(), v.encode()) for k, v in headers.items())
    )
    prelude = struct.pack(">II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def aws_event(event_type: str, body: Any) -> bytes:
    """One event: `body` as JSON, or bytes as they are (a blob payload such as PayloadPart)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    content_type = "application/octet-stream" if isinstance(body, bytes) else "application/json"
    headers = {":message-type": "event", ":event-type": event_type, ":content-type": content_type}
    return _event_message(headers, raw)


def aws_exception(exception_type: str, body: dict[str, Any]) -> bytes:
    """An error event in the middle of a stream (throttlingException, ModelStreamError...)."""
    headers = {
        ":message-type": "exception",
        ":exception-type": exception_type,
        ":content-type": "application/json",
    }
    return _event_message(headers, json.dumps(body).encode())
