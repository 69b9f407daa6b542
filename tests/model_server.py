"""The scripted HTTP model server for adapter tests (bench/openai_standin.py, shared with the
benchmarks), a port where nothing listens, and AWS event streams as AWS writes them."""

from __future__ import annotations

import json
import socket
import struct
import zlib
from typing import Any

from bench.openai_standin import Received as Received
from bench.openai_standin import Reply as Reply
from bench.openai_standin import ScriptedServer as ScriptedServer


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
