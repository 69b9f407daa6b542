"""API Gateway's side of the Lambda proxy integration: an HTTP request as the REST API's proxy
event, and the handler's proxy result as an HTTP answer. Unit tests build their events here too,
so they send the handler exactly what the gateway (and API Gateway) sends."""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from local.config import ROOT


class Route:
    """An API resource template (`/sessions/{session_id}`) and its matcher."""

    def __init__(self, template: str) -> None:
        self.template = template
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
        self._regex = re.compile(f"^{pattern}$")

    def match(self, path: str) -> dict[str, str] | None:
        """The path parameters when `path` is this resource, else None."""
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
    groups: str | None = None,
) -> dict[str, Any]:
    """The API Gateway REST proxy event for one request (paths and query values URL-decoded,
    as API Gateway passes them). `groups`: the caller's Cognito groups claim, as API Gateway's
    Cognito authorizer passes it (a string: "agents")."""
    split = urlsplit(target)
    path = unquote(split.path) or "/"
    resource = "/{proxy+}"
    path_parameters: dict[str, str] | None = {"proxy": path.lstrip("/")}
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
            "authorizer": {"claims": _claims(user_id, groups)},
        },
        "body": body,
        "isBase64Encoded": False,
    }


def _claims(user_id: str, groups: str | None) -> dict[str, str]:
    claims = {"sub": user_id}
    if groups:
        claims["cognito:groups"] = groups
    return claims


def http_reply(reply: Any) -> tuple[int, dict[str, str | list[str]], bytes]:
    """Status, headers and body bytes from a Lambda proxy integration result."""
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
