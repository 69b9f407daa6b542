"""CORS of the chat API's answers, once for every way it answers (the message route's own path,
the Powertools routes through handlers/http.OriginCORSConfig, the streamed messages). API Gateway
answers preflights; an answer from the function carries these headers."""

from __future__ import annotations

# What Powertools' CORSConfig allows besides the origin (its required headers), and the header
# that names a session of the OpenAI-compatible route (handlers/routes/openai.py), which a page
# sends and reads back.
ALLOW_HEADERS = "Authorization,Content-Type,X-Amz-Date,X-Amz-Security-Token,X-Api-Key,X-Session-Id"
EXPOSE_HEADERS = "X-Session-Id"


def cors_headers(origin: str | None, allowed: tuple[str, ...]) -> list[tuple[str, str]]:
    """The CORS headers of an answer to a page of ORIGIN, where ALLOWED origins may call ("*":
    any): none for another origin; `Vary: Origin` on an answer that names the caller's, so that
    no cache serves it to a page of another origin."""
    if not allowed or not origin:
        return []
    if origin in allowed:
        shown = origin
    elif "*" in allowed:
        shown = "*"
    else:
        return []
    headers = [
        ("Access-Control-Allow-Origin", shown),
        ("Access-Control-Allow-Headers", ALLOW_HEADERS),
        ("Access-Control-Expose-Headers", EXPOSE_HEADERS),
    ]
    return headers + ([("Vary", "Origin")] if shown != "*" else [])
