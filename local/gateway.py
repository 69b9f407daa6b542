"""A local stand-in for API Gateway (REST API, Lambda proxy integration) in front of the chat
handler, which also serves the web page.

Every request outside the page's own files becomes the proxy event API Gateway would send to
`handlers.chat_api.handler`, and the handler's reply becomes the HTTP answer. The caller is the
`X-User-Id` header or `local-user`, put where the Cognito authorizer puts it
(`requestContext.authorizer.claims.sub`): local mode only, the deployed API never reads it.
Errors are JSON (`{"error": {"code", "message"}}`), never a stack trace.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from local.config import API_HOST, DEFAULT_USER, ROOT, USER_HEADER, WEB_DIR
from local.lambda_context import LocalLambdaContext

log = logging.getLogger("local.gateway")

Handler = Callable[[dict[str, Any], Any], Any]

MAX_BODY_BYTES = 1024 * 1024
_USER_ID = re.compile(r"^[\w.@:+=-]{1,128}$")
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
    `serve_forever()` blocks. One handler invocation at a time, like one Lambda instance:
    Powertools' resolver keeps the current event in a class attribute, so two requests must not
    run the handler at once in one process."""

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        host: str = API_HOST,
        port: int = 8000,
        web_dir: Path = WEB_DIR,
        openapi_path: Path = ROOT / "openapi.json",
        max_body_bytes: int = MAX_BODY_BYTES,
        default_user: str = DEFAULT_USER,
        allow_user_header: bool = True,
        stage: str = "local",
    ) -> None:
        self._handler = handler
        self.web_dir = Path(web_dir).resolve()
        self.openapi_path = openapi_path
        self.routes = load_routes(openapi_path)
        self.max_body_bytes = max_body_bytes
        self.default_user = default_user
        self.allow_user_header = allow_user_header
        self.stage = stage
        self._invoke_lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), _RequestHandler)
        self._server.daemon_threads = True
        self._server.gateway = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def handler(self) -> Handler:
        if self._handler is None:
            from handlers.chat_api import handler

            self._handler = handler
        return self._handler

    def invoke(self, event: dict[str, Any], function_name: str = "chat-api") -> dict[str, Any]:
        with self._invoke_lock:
            return self.handler()(event, LocalLambdaContext(function_name=function_name))

    def start(self) -> Gateway:
        # A short poll interval makes stop() quick (tests start and stop many gateways).
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="http-gateway", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        if self._thread is not None:  # shutdown() would wait forever for a loop never started
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


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
            file = (self.gateway.web_dir / path[len("/static/") :]).resolve()
            if file.parent != self.gateway.web_dir or not file.is_file():
                self._error(404, "not_found", "no such file")
                return True
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
