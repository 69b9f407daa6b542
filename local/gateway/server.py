"""The gateway's HTTP server: every request is checked, then answered with one of the page's
files or with the handler's reply to its proxy event; errors are JSON."""

from __future__ import annotations

import io
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from chatmemory import schema
from local.config import API_HOST, DEFAULT_AGENTS, DEFAULT_USER, ROOT, USER_HEADER, WEB_DIR
from local.gateway.checks import (
    ANY_ADDRESS,
    CORS_METHODS,
    allowed_host_names,
    cors_headers,
    has_control_characters,
    host_name,
    plain_path,
    valid_user_id,
)
from local.gateway.events import http_reply, load_routes, proxy_event
from local.gateway.static import StaticFiles, file_headers
from local.gateway.workers import WorkerPool
from local.lambda_context import Handler, LocalLambdaContext, load_handler, started_now

log = logging.getLogger("local.gateway")

HANDLER = "handlers.chat_api.handler"
# Under Lambda's 6 MB limit for a synchronous invocation's whole event (API Gateway's own is
# 10 MB): a body the deployed API would refuse is refused here too, before it is read.
MAX_BODY_BYTES = 5 * 1024 * 1024
# A connection that sends nothing for this long is closed (http.server's own socket timeout):
# each connection holds a thread, and idle or slow ones held hundreds of them.
IDLE_TIMEOUT_SECONDS = 30.0
# Once a request's first byte arrived, its request line and headers must arrive within this
# time, and its body within BODY_TIMEOUT_SECONDS after them, whatever the pace of each read: a
# client sending a header byte every few seconds never waited out the idle timeout, and held a
# thread for as long as it liked (50 of them, 80 s and more). 30 s reads a 5 MB body at 170 KB/s.
HEADER_TIMEOUT_SECONDS = 10.0
BODY_TIMEOUT_SECONDS = 30.0


class StartingAnswers:
    """The streamed answers that have not sent their first chunk yet. DynamoDB Local answers
    one request at a time (one SQLite connection): local mode's background reader, the stream
    poller, waits for them (`wait`, for a bounded time) rather than put its reads, woken by the
    request just before (a new session, the last turn), ahead of a turn's reads and write
    before its first word."""

    def __init__(self) -> None:
        self._count = 0
        self._none = threading.Condition()

    @contextmanager
    def starting(self) -> Iterator[Callable[[], None]]:
        """One answer starting until the callable it gives is called (or the block ends)."""
        done = False

        def started() -> None:
            nonlocal done
            if done:
                return
            done = True
            with self._none:
                self._count -= 1
                self._none.notify_all()

        with self._none:
            self._count += 1
        try:
            yield started
        finally:
            started()

    def wait(self, timeout: float) -> bool:
        """Until no answer is starting, at most `timeout` seconds; True if none is."""
        with self._none:
            return self._none.wait_for(lambda: self._count == 0, timeout)


class Gateway:
    """The HTTP server. `start()` serves from a thread (tests pass port 0 and read `url`).

    `handler` is a callable or the dotted path of one. With `workers=1` it runs in this process,
    one invocation at a time, like one Lambda instance: Powertools' resolver keeps the current
    event in a class attribute, so two requests must not run the handler at once in one process
    (tests rely on this: they patch the environment and inject faults in-process). With more,
    it runs in that many worker processes (see `WorkerPool`), so it must be a dotted path."""

    def __init__(
        self,
        handler: Handler | str = HANDLER,
        *,
        host: str = API_HOST,
        port: int = 8000,
        web_dir: Path = WEB_DIR,
        openapi_path: Path = ROOT / "openapi.json",
        max_body_bytes: int = MAX_BODY_BYTES,
        default_user: str = DEFAULT_USER,
        stage: str = "local",
        workers: int = 1,
        worker_setup: Sequence[str] = (),
        agents: Sequence[str] = DEFAULT_AGENTS,
        agent_group: str = "agents",
        idle_timeout: float = IDLE_TIMEOUT_SECONDS,
        header_timeout: float = HEADER_TIMEOUT_SECONDS,
        body_timeout: float = BODY_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        after_request: Callable[[], None] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be 1 or more")
        self._handler = handler
        self._pool: WorkerPool | None = None
        if workers > 1:
            if not isinstance(handler, str):
                raise ValueError("worker processes import the handler: pass its dotted path")
            self._pool = WorkerPool(handler, workers, setup=worker_setup)
        self.static = StaticFiles(web_dir, openapi_path)
        self.routes = load_routes(openapi_path)
        self.max_body_bytes = max_body_bytes
        self.default_user = default_user
        # Hand-off to a person: these callers get the agents' group claim (local mode only).
        self.agents = frozenset(agents)
        self.agent_group = agent_group
        self.stage = stage
        self.idle_timeout = idle_timeout
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.clock = clock
        # Called after each request the handler answered (local mode wakes the stream poller:
        # what the request wrote is read at once, whatever the poller's idle backoff).
        self.after_request = after_request
        # Streamed answers before their first chunk (the stream poller waits for them).
        self.starting = StartingAnswers()
        self.allowed_hosts = allowed_host_names(host)
        self._invoke_lock = threading.Lock()
        self._server = _Server((host, port), _RequestHandler)
        self._server.gateway = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        # A server on every address is reached on this machine through the loopback one.
        return f"http://{'127.0.0.1' if host in ANY_ADDRESS else host}:{port}"

    @property
    def workers(self) -> int:
        """How many requests the handler can run at once."""
        return 1 if self._pool is None else self._pool.size

    def handler(self) -> Handler:
        """The handler, imported in this process (workers=1)."""
        if isinstance(self._handler, str):
            loaded = load_handler(self._handler)
            self._handler = loaded
            return loaded
        return self._handler

    def prepare(self) -> None:
        """Import the handler into this process (workers=1) or start the worker processes now,
        so that the first request does not wait for it."""
        if self._pool is None:
            self.handler()
        else:
            self._pool.start()

    def stream(self, event: dict[str, Any]) -> Any:
        """The stream function's answer to one proxy event (handlers/stream.py), run in this
        process whatever `workers` says: its body comes while the turn runs, in the request's
        thread (the deployed stream function is a function of its own, with one request per
        instance too, behind the Lambda Web Adapter)."""
        from chatmemory import wiring
        from handlers import stream

        return stream.answer(started_now(event), wiring.settings().cors_origins)

    def invoke(self, event: dict[str, Any], function_name: str = "chat-api") -> Any:
        """The handler's reply to one proxy event; its exception when it raises."""
        if self._pool is not None:
            return self._pool.invoke(event, function_name)
        with self._invoke_lock:
            return self.handler()(
                started_now(event), LocalLambdaContext(function_name=function_name)
            )

    def host_allowed(self, values: list[str] | None, version: str) -> bool:
        """Whether a request's Host header names this machine. Only a client too old to send
        one (HTTP/1.0) may leave it out: every browser sends it."""
        if not values:
            return version in ("HTTP/0.9", "HTTP/1.0")
        return len(values) == 1 and host_name(values[0]) in self.allowed_hosts

    def start(self) -> Gateway:
        """Serve from a thread; the handler is imported (or its workers started) first."""
        self.prepare()
        # A short poll interval makes stop() quick (tests start and stop many gateways).
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="http-gateway", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, grace_seconds: float = 5.0) -> None:
        """Stop serving, then stop the worker processes (one still busy after `grace_seconds`
        is terminated)."""
        if self._thread is not None:  # shutdown() would wait forever for a loop never started
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()
        if self._pool is not None:
            self._pool.stop(grace_seconds)

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _is_stream(event: dict[str, Any]) -> bool:
    path = str(event.get("path") or "")
    return event.get("httpMethod") == "POST" and (
        path.endswith(schema.STREAM_PATH_SUFFIX) or path == schema.OPENAI_CHAT_PATH
    )


class _Server(ThreadingHTTPServer):
    """http.server's threading server with room for a burst of connections: with its default
    listen backlog of 5, 30 connections at once saw resets (macOS) or waited seconds for TCP
    to retry their handshake (Linux)."""

    request_queue_size = 128
    daemon_threads = True


class _DeadlineReader(io.RawIOBase):
    """A connection's reads, each waiting at most the idle timeout and, while a `deadline` is
    set (on `clock`), no later than it: a read past it raises TimeoutError, however few bytes
    each earlier read brought."""

    def __init__(self, connection: socket.socket, idle: float, clock: Callable[[], float]):
        super().__init__()
        self._connection = connection
        self._idle = idle
        self._clock = clock
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        wait = self._idle
        if self.deadline is not None:
            left = self.deadline - self._clock()
            if left <= 0:
                raise TimeoutError("the request did not arrive in time")
            wait = min(wait, left)
        self._connection.settimeout(wait)
        return self._connection.recv_into(buffer)

    @contextmanager
    def within(self, seconds: float) -> Iterator[None]:
        """Reads within `seconds` from now, in all."""
        self.deadline = self._clock() + seconds
        try:
            yield
        finally:
            self.deadline = None


class _RequestHandler(BaseHTTPRequestHandler):
    server_version = "chatmemory-local"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    @property
    def gateway(self) -> Gateway:
        return self.server.gateway  # type: ignore[attr-defined,no-any-return]

    def setup(self) -> None:
        # socketserver's own per-connection socket timeout: a read that waits longer ends the
        # connection, which http.server then closes without an answer.
        self.timeout = self.gateway.idle_timeout  # type: ignore[misc]
        super().setup()
        gateway = self.gateway
        self._reader = _DeadlineReader(self.connection, gateway.idle_timeout, gateway.clock)
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        """One request: its first byte within the idle timeout (a connection kept alive waits
        for its next request so), then its request line and headers within the header
        timeout. A client that goes away before its answer is noted in one line, not with the
        stack trace socketserver prints."""
        try:
            if not self.rfile.peek(1):
                self.close_connection = True  # the client closed the connection
                return
        except OSError:  # the idle timeout (TimeoutError), or a reset
            self.close_connection = True
            return
        try:
            with self._reader.within(self.gateway.header_timeout):
                super().handle_one_request()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            log.info(
                "the client closed the connection before its answer: %s %s",
                self.command,
                self.path,
            )

    def parse_request(self) -> bool:
        """http.server's parsing of the request line and headers, then what every request must
        pass before any method runs: a Host naming this machine (against DNS rebinding), a
        path as the client sent it without empty or dot segments (http.server turns "//x" into
        "/x"; API Gateway serves neither) nor control characters, and at most one
        Content-Length. The body of a refused request is left unread."""
        if not super().parse_request():
            return False
        self._reader.deadline = None  # the headers are in: the body has its own deadline
        words = self.requestline.split()
        target = words[1] if len(words) > 1 else ""
        if not self.gateway.host_allowed(self.headers.get_all("Host"), self.request_version):
            self.close_connection = True
            self._error(403, "forbidden_host", "the Host header must name this machine (localhost)")
            return False
        if has_control_characters(self.path) or not plain_path(target):
            self.close_connection = True
            self._error(404, "not_found", "no such path")
            return False
        if len(self.headers.get_all("Content-Length") or []) > 1:
            # Two lengths: which one frames the body is the server's guess (request smuggling).
            self.close_connection = True
            self._error(400, "bad_request", "one Content-Length at most")
            return False
        return True

    # --- methods ----------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if not self._serve_static(head=False):
            self._proxy()

    def do_HEAD(self) -> None:  # noqa: N802
        if not self._serve_static(head=True):
            self._proxy(head=True)

    def do_POST(self) -> None:  # noqa: N802
        self._proxy()

    def do_PUT(self) -> None:  # noqa: N802
        self._proxy()

    def do_PATCH(self) -> None:  # noqa: N802
        self._proxy()

    def do_DELETE(self) -> None:  # noqa: N802
        self._proxy()

    def do_TRACE(self) -> None:  # noqa: N802
        # Known methods the API never allows (TRACE would echo the caller's headers back):
        # 405, as for any method a resource does not have, rather than http.server's 501.
        self._drain_body()
        self._error(405, "method_not_allowed", f"{self.command} is not allowed")

    do_CONNECT = do_TRACE

    def do_OPTIONS(self) -> None:  # noqa: N802
        # CORS preflight: answered by the gateway, as API Gateway's OPTIONS methods do.
        self._drain_body()
        self._send(204, b"", {"Allow": CORS_METHODS, "Access-Control-Max-Age": "600"})

    # --- the API ----------------------------------------------------------------------------

    def _proxy(self, head: bool = False) -> None:
        try:
            body = self._read_body()
            if body is None:
                return
            user = self._user()
            if user is None:
                return
            event = proxy_event(
                method=self.command,
                target=self.path,
                headers=list(self.headers.items()),
                body=body or None,
                user_id=user,
                routes=self.gateway.routes,
                source_ip=self.client_address[0],
                stage=self.gateway.stage,
                groups=self.gateway.agent_group if user in self.gateway.agents else None,
            )
            started = time.perf_counter()
            if _is_stream(event):
                try:
                    self._stream(event, started)
                finally:
                    if self.gateway.after_request is not None:
                        self.gateway.after_request()
                return
            try:
                reply = self.gateway.invoke(event)
            finally:
                if self.gateway.after_request is not None:
                    self.gateway.after_request()
            status, headers, payload = http_reply(reply)
            log.info(
                "%s %s %s %.0f ms",
                self.command,
                self.path,
                status,
                (time.perf_counter() - started) * 1000,
            )
        except Exception:  # noqa: BLE001 - the client gets JSON, the console the details
            log.exception("the handler failed on %s %s", self.command, self.path)
            self._error(502, "bad_gateway", "the handler failed; see the local server's output")
            return
        self._send(status, b"" if head else payload, headers, content_length=len(payload))

    def _stream(self, event: dict[str, Any], started: float) -> None:
        """A streamed answer: its headers, then each chunk as it comes (chunked transfer
        encoding). A client gone before the end closes the answer's body: the turn stops and
        is stored with what was sent (handlers/stream.py)."""
        from chatmemory import deadline
        from handlers import stream

        with (
            deadline.within(stream.request_deadline(schema.STREAM_TIMEOUT_SECONDS * 1000)),
            self.gateway.starting.starting() as first_chunk_sent,
        ):
            answer = self.gateway.stream(event)
            body = answer.body
            try:
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                for name, value in cors_headers(self.headers.get("Origin")).items():
                    self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in body:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                    first_chunk_sent()
                self.wfile.write(b"0\r\n\r\n")
            except OSError:  # the client went away (a broken pipe, a reset)
                self.close_connection = True
            finally:
                getattr(body, "close", lambda: None)()
        log.info(
            "%s %s %s (streamed) %.0f ms",
            self.command,
            self.path,
            answer.status,
            (time.perf_counter() - started) * 1000,
        )

    def _read_body(self) -> str | None:
        """The request body as text; None once an error has been answered."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            self._error(411, "length_required", "send the body with a Content-Length")
            return None
        raw_length = (self.headers.get("Content-Length") or "0").strip()
        try:
            if not (raw_length.isascii() and raw_length.isdigit()):  # not "+5", "5_0" or "-1"
                raise ValueError
            length = int(raw_length)
        except ValueError:
            self.close_connection = True
            self._error(400, "bad_request", "invalid Content-Length")
            return None
        if length > self.gateway.max_body_bytes:
            self.close_connection = True  # the body is left unread
            self._error(
                413,
                "payload_too_large",
                f"request body over {self.gateway.max_body_bytes} bytes",
            )
            return None
        try:
            with self._reader.within(self.gateway.body_timeout):
                data = self.rfile.read(length) if length else b""
        except TimeoutError:
            self.close_connection = True
            self._error(408, "request_timeout", "the request body did not arrive in time")
            return None
        if len(data) < length:  # the client closed the connection before its whole body
            self.close_connection = True
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self._error(400, "bad_request", "the request body is not valid UTF-8")
            return None

    def _user(self) -> str | None:
        """The caller (the user header, or the default user); None once an error has been
        answered."""
        raw = (self.headers.get(USER_HEADER) or "").strip()
        if not raw:
            return self.gateway.default_user
        if not valid_user_id(raw):
            self._error(
                400,
                "bad_request",
                f"{USER_HEADER} must be 1-128 letters, digits or . _ @ : + = -",
            )
            return None
        return raw

    def _drain_body(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if 0 < length <= self.gateway.max_body_bytes:
            try:
                with self._reader.within(self.gateway.body_timeout):
                    self.rfile.read(length)
            except TimeoutError:
                self.close_connection = True
        elif length:
            self.close_connection = True

    # --- the page ---------------------------------------------------------------------------

    def _serve_static(self, head: bool) -> bool:
        """Answer a request for one of the page's files; False when the path is the API's."""
        found = self.gateway.static.find(self.path)
        if found is None:
            return False
        if found.file is None:
            self._error(404, "not_found", "no such file")
            return True
        payload = found.file.read_bytes()
        headers = file_headers(found.file)
        self._send(200, b"" if head else payload, headers, content_length=len(payload))
        return True

    # --- writing answers --------------------------------------------------------------------

    def _error(self, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        self._send(status, body, {"Content-Type": "application/json"})

    def _send(
        self,
        status: int,
        payload: bytes,
        headers: Mapping[str, str | list[str]],
        *,
        content_length: int | None = None,
    ) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() in ("content-length", "connection", "transfer-encoding"):
                continue
            for one in value if isinstance(value, list) else [value]:
                self.send_header(name, one)
        for name, value in cors_headers(self.headers.get("Origin")).items():
            self.send_header(name, value)
        self.send_header(
            "Content-Length", str(len(payload) if content_length is None else content_length)
        )
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if payload:
            self.wfile.write(payload)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (bad request line, unknown method...) as JSON too."""
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        self.close_connection = True
        body = json.dumps(
            {"error": {"code": phrase.lower().replace(" ", "_"), "message": message or phrase}}
        ).encode()
        self.send_response(code, message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and code >= 200 and code not in (204, 304):
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        log.debug("%s %s", self.address_string(), format % args)
