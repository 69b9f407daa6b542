"""JSON in and out of the API: a request body read strictly, and the error envelope."""

from __future__ import annotations

import json
from typing import Any


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise ValueError("a number too large for a float")
    return number


def _bounded_int(text: str) -> int:
    # Python refuses int() of over 4,300 digits anyway; nothing here needs more than 19.
    if len(text.lstrip("-")) > 64:
        raise ValueError("an integer with too many digits")
    return int(text)


def strict_json(body: str) -> Any:
    """A request body's JSON, refusing what parses in Python but is not portable JSON or data:
    NaN and Infinity, numbers beyond a float (1e400) or of thousands of digits, nesting deeper
    than the parser's recursion limit, and text that is not Unicode (a lone surrogate escaped
    in JSON, "\\ud800", parses in Python, but no store or client can encode it as UTF-8).
    Each is a JSONDecodeError, which the API answers with 400."""
    try:
        data = json.loads(
            body, parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded_int
        )
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as error:  # from the hooks above, or the depth
        reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
        raise json.JSONDecodeError(reason, body[:0], 0) from None
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", body[:0], 0) from None
    except UnicodeEncodeError as error:
        raise json.JSONDecodeError(
            "a lone surrogate escape: the text is not valid Unicode", body, 0
        ) from error
    return data


def error_json(code: str, message: str) -> str:
    """The body of every error answer: {"error": {"code", "message"}}."""
    return json.dumps({"error": {"code": code, "message": message}})
