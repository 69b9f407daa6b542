"""What every request must pass before the gateway acts on it (a Host naming this machine, a
path without control characters, a well-formed caller), and which pages may read its answers
(CORS)."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

# The addresses that mean "every address" when a server binds them.
ANY_ADDRESS = frozenset({"", "0.0.0.0", "::"})
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
# A Host header value: a name or IPv4 address, or an IPv6 address in brackets; then a port.
_HOST_HEADER = re.compile(
    r"^(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::\d{1,5})?$"
)
# C0 controls, DEL and C1 controls: no file or API resource has one in its name.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_USER_ID = re.compile(r"^[\w.@:+=-]{1,128}$")
CORS_HEADERS = "Authorization, Content-Type, X-User-Id, X-Session-Id"
# What a page may read of an answer besides the simple headers: the OpenAI-compatible route's
# session (X-Session-Id).
CORS_EXPOSE = "X-Session-Id"
CORS_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"


def allowed_host_names(bound_host: str) -> frozenset[str]:
    """The host names a request may name in its Host header: the loopback names, and the
    address or name the server was started on unless that is every address (0.0.0.0)."""
    names = set(_LOOPBACK_NAMES)
    if bound_host not in ANY_ADDRESS:
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


def plain_path(target: str) -> bool:
    """Whether a request target's path, as sent, has no empty segment ("//sessions") and no dot
    segment ("/sessions/.."), also percent-encoded: a client normalizes its paths before
    sending, and such a path names no file or resource (http.server would collapse "//x")."""
    path = target.split("?", 1)[0]
    if not path.startswith("/"):
        return path == "*"  # OPTIONS *: the server itself
    segments = unquote(path).split("/")[1:]
    inner = segments[:-1]  # a trailing "/" is the resource itself
    return "" not in inner and not any(s in (".", "..") for s in segments)


def valid_user_id(user_id: str) -> bool:
    """Whether a caller named in the user header is 1-128 letters, digits or . _ @ : + = -."""
    return bool(_USER_ID.match(user_id))


def cors_headers(origin: str | None) -> dict[str, str]:
    """The CORS headers of an answer: cross-origin calls are answered for pages on this machine
    only (any port), as a web site elsewhere must not read a local chat memory through the
    user's browser."""
    if not origin:
        return {}
    host = urlsplit(origin).hostname or ""
    if host not in ("localhost", "127.0.0.1", "[::1]", "::1"):
        return {}
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Headers": CORS_HEADERS,
        "Access-Control-Allow-Methods": CORS_METHODS,
        "Access-Control-Expose-Headers": CORS_EXPOSE,
        "Vary": "Origin",
    }
