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

Modules: `events` (requests to proxy events, replies to HTTP answers), `checks` (what every
request must pass, CORS), `static` (the page's files), `workers` (the worker processes),
`server` (the HTTP server and `Gateway`).
"""

from local.gateway.checks import allowed_host_names, has_control_characters, host_name
from local.gateway.events import Route, http_reply, load_routes, proxy_event
from local.gateway.server import HANDLER, MAX_BODY_BYTES, Gateway
from local.gateway.workers import WorkerPool

__all__ = [
    "HANDLER",
    "MAX_BODY_BYTES",
    "Gateway",
    "Route",
    "WorkerPool",
    "allowed_host_names",
    "has_control_characters",
    "host_name",
    "http_reply",
    "load_routes",
    "proxy_event",
]
