"""A local stand-in for API Gateway (REST API, Lambda proxy integration) in front of the chat
handler, which also serves the web page.

Every request outside the page's own files becomes the proxy event API Gateway would send to
`handlers.chat_api.handler`, and the handler's reply becomes the HTTP answer. The caller is the
`X-User-Id` header or `local-user`, put where the Cognito authorizer puts it
(`requestContext.authorizer.claims.sub`): local mode only, the deployed API never reads it.
Because that header is the identity, only requests naming this machine in their Host header are
served (a page elsewhere could rebind its DNS name to 127.0.0.1 and call the API as the user).
Errors are JSON (`{"error": {"code", "message"}}`), never a stack trace.

With `workers=N` (N > 1) the handler runs in N worker processes, each one request at a time like
N Lambda instances, so requests run at once (as in AWS) and a slow one does not hold up the rest.
"""

from __future__ import annotations

import importlib
import json
import logging
import mimetypes
import multiprocessing
import os
import re
import signal
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from local.config import API_HOST, DEFAULT_USER, ROOT, USER_HEADER, WEB_DIR
from local.lambda_context import LocalLambdaContext

log = logging.getLogger("local.gateway")

Handler = Callable[[dict[str, Any], Any], Any]

HANDLER = "handlers.chat_api.handler"
# Under Lambda's 6 MB limit for a synchronous invocation's whole event (API Gateway's own is
# 10 MB): a body the deployed API would refuse is refused here too, before it is read.
MAX_BODY_BYTES = 5 * 1024 * 1024
_USER_ID = re.compile(r"^[\w.@:+=-]{1,128}$")
# A Host header value: a name or IPv4 address, or an IPv6 address in brackets; then a port.
_HOST_HEADER = re.compile(
    r"^(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::\d{1,5})?$"
)
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_ANY_ADDRESS = frozenset({"", "0.0.0.0", "::"})
# C0 controls, DEL and C1 controls: no file or API resource has one in its name.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CORS_HEADERS = "Authorization, Content-Type, X-User-Id"
_CORS_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
# The page talks to this origin or to the API URL set in its settings panel.
_PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src *; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)


class Route:
    """An API resource template (`/sessions/{session_id}`) and its matcher."""

    def __init__(self, template: str) -> None:
        self.template = template
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
        self._regex = re.compile(f"^{pattern}$")

    def match(self, path: str) -> dict[str, str] | None:
        found = self._regex.match(path)
        return found.groupdict() if found else None


def load_routes(openapi_path: Path = ROOT / "openapi.json") -> list[Route]:
    """The API's resources from the published OpenAPI document; literal paths first, as API
    Gateway prefers `/sessions/import` over `/sessions/{session_id}`."""
    if not openapi_path.exists():
        return []
    paths = json.loads(openapi_path.read_text(encoding="utf-8")).get("paths", {})
    return [Route(t) for t in sorted(paths, key=lambda t: ("{" in t, t))]


def proxy_event(
    *,
    method: str,
    target: str,
    headers: list[tuple[str, str]],
    body: str | None,
    user_id: str,
    routes: list[Route],
    source_ip: str = "127.0.0.1",
    stage: str = "local",
) -> dict[str, Any]:
    """The API Gateway REST proxy event for one request (paths and query values URL-decoded,
    as API Gateway passes them)."""
    split = urlsplit(target)
    path = unquote(split.path) or "/"
    resource, path_parameters = "/{proxy+}", {"proxy": path.lstrip("/")}
    for route in routes:
        found = route.match(path)
        if found is not None:
            resource, path_parameters = route.template, (found or None)
            break
    multi_headers: dict[str, list[str]] = {}
    for name, value in headers:
        multi_headers.setdefault(name, []).append(value)
    query: dict[str, list[str]] = {}
    for name, value in parse_qsl(split.query, keep_blank_values=True):
        query.setdefault(name, []).append(value)
    header_value = {k.lower(): v[-1] for k, v in multi_headers.items()}
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": {k: v[-1] for k, v in multi_headers.items()},
        "multiValueHeaders": multi_headers,
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "resourceId": "local",
            "resourcePath": resource,
            "httpMethod": method,
            "path": f"/{stage}{path}",
            "stage": stage,
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "domainName": header_value.get("host", "localhost"),
            "identity": {
                "sourceIp": source_ip,
                "userAgent": header_value.get("user-agent"),
                "cognitoIdentityId": None,
                "userArn": None,
            },
            "authorizer": {"claims": {"sub": user_id}},
        },
        "body": body,
        "isBase64Encoded": False,
    }


class Gateway:
    """The HTTP server. `start()` serves from a thread (tests pass port 0 and read `url`);
    `serve_forever()` blocks.

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
        allow_user_header: bool = True,
        stage: str = "local",
        workers: int = 1,
        worker_setup: Sequence[str] = (),
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be 1 or more")
        self._handler = handler
        self._pool: WorkerPool | None = None
        if workers > 1:
            if not isinstance(handler, str):
                raise ValueError("worker processes import the handler: pass its dotted path")
            self._pool = WorkerPool(handler, workers, setup=worker_setup)
        self.web_dir = Path(web_dir).resolve()
        self.openapi_path = openapi_path
        self.routes = load_routes(openapi_path)
        self.max_body_bytes = max_body_bytes
        self.default_user = default_user
        self.allow_user_header = allow_user_header
        self.stage = stage
        self.allowed_hosts = allowed_host_names(host)
        self._invoke_lock = threading.Lock()
        self._server = _Server((host, port), _RequestHandler)
        self._server.gateway = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        # A server on every address is reached on this machine through the loopback one.
        return f"http://{'127.0.0.1' if host in _ANY_ADDRESS else host}:{port}"

    @property
    def workers(self) -> int:
        """How many requests the handler can run at once."""
        return 1 if self._pool is None else self._pool.size

    def handler(self) -> Handler:
        """The handler, imported in this process (workers=1)."""
        if isinstance(self._handler, str):
            loaded: Handler = import_object(self._handler)
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

    def invoke(self, event: dict[str, Any], function_name: str = "chat-api") -> Any:
        """The handler's reply to one proxy event; its exception when it raises."""
        if self._pool is not None:
            return self._pool.invoke(event, function_name)
        with self._invoke_lock:
            return self.handler()(event, LocalLambdaContext(function_name=function_name))

    def host_allowed(self, values: list[str] | None, version: str) -> bool:
        """Whether a request's Host header names this machine. Only a client too old to send
        one (HTTP/1.0) may leave it out: every browser sends it."""
        if not values:
            return version in ("HTTP/0.9", "HTTP/1.0")
        return len(values) == 1 and host_name(values[0]) in self.allowed_hosts

    def start(self) -> Gateway:
        self.prepare()
        # A short poll interval makes stop() quick (tests start and stop many gateways).
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="http-gateway", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.prepare()
        self._server.serve_forever()

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


class _Server(ThreadingHTTPServer):
    """http.server's threading server with room for a burst of connections: with its default
    listen backlog of 5, 30 connections at once saw resets (macOS) or waited seconds for TCP
    to retry their handshake (Linux)."""

    request_queue_size = 128
    daemon_threads = True


# --- worker processes -----------------------------------------------------------------------


class WorkerPool:
    """N worker processes, each importing the handler once (a cold start) and then running one
    request at a time: N Lambda instances. They are spawned, not forked (this process runs
    threads), and inherit the environment as it is when they start.

    A handler that raises comes back as the exception; a worker that dies (a crash, `kill`)
    fails the requests in flight with `BrokenProcessPool` and the pool is replaced, so the next
    request gets fresh workers."""

    def __init__(self, handler_path: str, size: int, *, setup: Sequence[str] = ()) -> None:
        self.handler_path = handler_path
        self.size = size
        # Dotted paths of functions each worker calls once after importing the handler.
        self.setup = tuple(setup)
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._stopped = False

    def start(self) -> None:
        self._current()

    def invoke(self, event: dict[str, Any], function_name: str) -> Any:
        executor = self._current()
        try:
            return executor.submit(_worker_invoke, event, function_name).result()
        except BrokenProcessPool:
            if not self._stopped:
                log.warning("a worker process died; the next request starts new ones")
                self._replace(executor)
            raise

    def stop(self, grace_seconds: float = 5.0) -> None:
        """Workers exit after the request in hand; one still busy after `grace_seconds` is
        terminated, so that Ctrl-C does not wait for a long import."""
        with self._lock:
            executor, self._executor, self._stopped = self._executor, None, True
        if executor is None:
            return
        # ProcessPoolExecutor offers neither its processes nor a shutdown with a time limit.
        # Its own thread reaps the processes (waiting for them here too would race it), so
        # they are only signalled here.
        processes = list((executor._processes or {}).values())
        closing = threading.Thread(
            target=executor.shutdown,
            kwargs={"wait": True, "cancel_futures": True},
            name="worker-shutdown",
            daemon=True,
        )
        closing.start()
        closing.join(grace_seconds)
        for end in (BaseProcess.terminate, BaseProcess.kill):
            if not closing.is_alive():
                break
            for process in processes:
                end(process)
            closing.join(5)

    def _current(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._stopped:
                raise RuntimeError("the gateway is stopping")
            if self._executor is None:
                self._executor = self._new_executor()
            return self._executor

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            # Every request in flight on the broken pool ends here: replace it once.
            if self._executor is broken:
                self._executor = None if self._stopped else self._new_executor()
        broken.shutdown(wait=False, cancel_futures=True)

    def _new_executor(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(
            max_workers=self.size,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_start,
            initargs=(self.handler_path, self.setup, logging.getLogger().getEffectiveLevel()),
        )
        # The executor spawns a process per submission while none is idle: N submissions at
        # once start all N workers now, and each warms up while the gateway waits for requests.
        for _ in range(self.size):
            executor.submit(os.getpid)
        return executor


# The handler of this worker process (set once by _worker_start; None in the gateway's process).
_worker_handler: Handler | None = None


def _worker_start(handler_path: str, setup: Sequence[str], log_level: int) -> None:
    """Runs once in each new worker process: import the handler (a Lambda cold start), then the
    setup functions (loading a model, say); a setup failure only logs."""
    global _worker_handler
    # Ctrl-C reaches the whole process group: the gateway stops its workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(
        level=log_level,
        format="%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s",
        datefmt="%H:%M:%S",
    )
    _exit_with_parent()
    _worker_handler = import_object(handler_path)
    for path in setup:
        try:
            import_object(path)()
        except Exception as error:  # noqa: BLE001 - the first request that needs it reports it
            log.warning("worker %s: %s failed: %s", os.getpid(), path, error)


def _worker_invoke(event: dict[str, Any], function_name: str) -> Any:
    """One invocation in a worker process, with its own Lambda context."""
    if _worker_handler is None:
        raise RuntimeError("the worker process has no handler")
    return _worker_handler(event, LocalLambdaContext(function_name=function_name))


def _exit_with_parent() -> None:
    """A worker whose gateway process died without stopping it (kill -9) exits too, instead of
    waiting forever for work that cannot come."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def import_object(dotted_path: str) -> Any:
    """`package.module.name` -> that module's `name`."""
    module_name, _, name = dotted_path.rpartition(".")
    if not module_name:
        raise ValueError(f"{dotted_path!r} is not a dotted path to a module attribute")
    return getattr(importlib.import_module(module_name), name)


# --- checks on every request ----------------------------------------------------------------


def allowed_host_names(bound_host: str) -> frozenset[str]:
    """The host names a request may name in its Host header: the loopback names, and the
    address or name the server was started on unless that is every address (0.0.0.0)."""
    names = set(_LOOPBACK_NAMES)
    if bound_host not in _ANY_ADDRESS:
        names.add(bound_host.strip("[]").lower())
    return frozenset(names)


def host_name(host_header: str) -> str | None:
    """The host name of a Host header value (`[::1]:8000` -> `::1`); None when malformed."""
    found = _HOST_HEADER.match(host_header.strip())
    if found is None:
        return None
    return (found["ipv6"] or found["name"]).lower()


def has_control_characters(target: str) -> bool:
    """Whether a request target's path holds a control character, as sent or URL-decoded (the
    file system refuses a NUL; no file or API resource has one)."""
    path = target.split("?", 1)[0]
    return bool(_CONTROL_CHARACTERS.search(path) or _CONTROL_CHARACTERS.search(unquote(path)))


def _allowed_origin(origin: str | None) -> str | None:
    """Cross-origin calls are answered for pages on this machine only (any port): a web site
    elsewhere must not read a local chat memory through the user's browser."""
    if not origin:
        return None
    host = urlsplit(origin).hostname or ""
    return origin if host in ("localhost", "127.0.0.1", "[::1]", "::1") else None


class _RequestHandler(BaseHTTPRequestHandler):
    server_version = "chatmemory-local"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    @property
    def gateway(self) -> Gateway:
        return self.server.gateway  # type: ignore[attr-defined,no-any-return]

    def parse_request(self) -> bool:
        """http.server's parsing of the request line and headers, then what every request must
        pass before any method runs: a Host naming this machine (against DNS rebinding) and a
        path without control characters. The body of a refused request is left unread."""
        if not super().parse_request():
            return False
        if not self.gateway.host_allowed(self.headers.get_all("Host"), self.request_version):
            self.close_connection = True
            self._error(403, "forbidden_host", "the Host header must name this machine (localhost)")
            return False
        if has_control_characters(self.path):
            self.close_connection = True
            self._error(404, "not_found", "no such path")
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
        self._send(204, b"", {"Allow": _CORS_METHODS, "Access-Control-Max-Age": "600"})

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
            )
            started = time.perf_counter()
            reply = self.gateway.invoke(event)
            status, headers, payload = _http_reply(reply)
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

    def _read_body(self) -> str | None:
        """The request body as text; None once an error has been answered."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            self._error(411, "length_required", "send the body with a Content-Length")
            return None
        raw_length = self.headers.get("Content-Length")
        try:
            length = int(raw_length) if raw_length else 0
            if length < 0:
                raise ValueError
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
        data = self.rfile.read(length) if length else b""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self._error(400, "bad_request", "the request body is not valid UTF-8")
            return None

    def _user(self) -> str | None:
        if not self.gateway.allow_user_header:
            return self.gateway.default_user
        raw = (self.headers.get(USER_HEADER) or "").strip()
        if not raw:
            return self.gateway.default_user
        if not _USER_ID.match(raw):
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
            self.rfile.read(length)
        elif length:
            self.close_connection = True

    # --- the page ---------------------------------------------------------------------------

    def _serve_static(self, head: bool) -> bool:
        path = unquote(urlsplit(self.path).path)
        if path in ("/", "/index.html"):
            file = self.gateway.web_dir / "index.html"
        elif path.startswith("/static/"):
            found = self._static_file(path[len("/static/") :])
            if found is None:
                self._error(404, "not_found", "no such file")
                return True
            file = found
        elif path == "/openapi.json" and self.gateway.openapi_path.exists():
            file = self.gateway.openapi_path
        else:
            return False
        payload = file.read_bytes()
        kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind in ("application/javascript", "application/json"):
            kind += "; charset=utf-8"
        headers = {
            "Content-Type": kind,
            "Cache-Control": "no-cache",
            "X-Content-Type-Options": "nosniff",
        }
        if file.suffix == ".html":
            headers["Content-Security-Policy"] = _PAGE_POLICY
            headers["Referrer-Policy"] = "no-referrer"
        self._send(200, b"" if head else payload, headers, content_length=len(payload))
        return True

    def _static_file(self, name: str) -> Path | None:
        """A file directly in the page's folder, or None (a name the file system refuses, such
        as one too long, is no such file either)."""
        try:
            file = (self.gateway.web_dir / name).resolve()
            found = file.parent == self.gateway.web_dir and file.is_file()
        except (OSError, ValueError):
            return None
        return file if found else None

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
        origin = _allowed_origin(self.headers.get("Origin"))
        if origin:
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Access-Control-Allow-Headers", _CORS_HEADERS)
            self.send_header("Access-Control-Allow-Methods", _CORS_METHODS)
            self.send_header("Vary", "Origin")
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


def _http_reply(reply: Any) -> tuple[int, dict[str, str | list[str]], bytes]:
    """Status, headers and body bytes from a Lambda proxy integration result."""
    import base64

    if not isinstance(reply, dict) or not isinstance(reply.get("statusCode"), int):
        raise ValueError("the handler's reply is not a proxy integration result")
    headers: dict[str, str | list[str]] = {}
    for name, values in (reply.get("multiValueHeaders") or {}).items():
        headers[name] = [str(v) for v in values]
    for name, value in (reply.get("headers") or {}).items():
        headers.setdefault(name, str(value))
    body = reply.get("body") or ""
    payload = base64.b64decode(body) if reply.get("isBase64Encoded") else str(body).encode()
    return reply["statusCode"], headers, payload
