"""The stream function's web server, behind the AWS Lambda Web Adapter (its layer, in
response_stream mode: docs/decisions.md says why): the adapter turns each API Gateway request
into an HTTP request to this server and streams its answer back, as written.

`lambdas/stream.sh` starts it (the function's handler; AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap).
It answers GET /healthz (the adapter's readiness check) and the stream route, through
handlers/stream.py with a proxy event made from the request: the adapter passes API Gateway's
request context (the authorizer's claims: the caller) in the `x-amzn-request-context` header,
and the invocation's deadline in `x-amzn-lambda-context`. One request at a time, as the
function's instance gets them.
"""

from __future__ import annotations

import json
import os
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import urlsplit

from chatmemory import deadline, wiring
from chatmemory.schema import STREAM_TIMEOUT_SECONDS
from handlers import stream
from handlers.chat_shared import logger

HEALTH_PATH = "/healthz"


def event_of(method: str, target: str, headers: dict[str, str], body: str) -> dict[str, Any]:
    """The proxy event API Gateway would have sent this function for the request (the adapter
    forwards its request context in a header)."""
    context = json.loads(headers.get("x-amzn-request-context") or "{}")
    parts = urlsplit(target)
    return {
        "httpMethod": method,
        "path": parts.path,
        "headers": {k: v for k, v in headers.items() if not k.startswith("x-amzn-")},
        "multiValueHeaders": None,
        "queryStringParameters": None,
        "body": body,
        "isBase64Encoded": False,
        "requestContext": context,
    }


def remaining_ms(headers: dict[str, str]) -> int:
    """What is left of the invocation, from the adapter's Lambda context header."""
    context = json.loads(headers.get("x-amzn-lambda-context") or "{}")
    deadline_ms = context.get("deadline") or context.get("deadline_ms")
    if isinstance(deadline_ms, int | float):
        return max(int(deadline_ms - time.time() * 1000), 0)
    return STREAM_TIMEOUT_SECONDS * 1000


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        status = 200 if self.path == HEALTH_PATH else 404
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8") if length else ""
        headers = {name.lower(): value for name, value in self.headers.items()}
        event = event_of("POST", self.path, headers, body)
        with deadline.within(stream.request_deadline(remaining_ms(headers))):
            answer = stream.answer(event, wiring.settings().cors_origins)
            self._write(answer)

    def _write(self, answer: stream.Answer) -> None:
        body = answer.body
        try:
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in body:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client (the adapter) went away: the turn stops and is stored
            self.close_connection = True
        finally:
            getattr(body, "close", lambda: None)()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        logger.debug(format % args)


def main() -> None:
    port = int(os.environ.get("AWS_LWA_PORT") or os.environ.get("PORT") or 8080)
    wiring.chat_deps()  # the function's init: clients and models before the first request
    HTTPServer(("127.0.0.1", port), _Handler).serve_forever()


if __name__ == "__main__":
    main()
