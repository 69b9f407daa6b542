"""Server-sent events read as the HTML standard's event stream parser reads them
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
lines end with CRLF, LF or CR (a CRLF may be split between two chunks), a line starting with ":"
is a comment (the API's pings), `data` lines of one event are joined with newlines, one space
after the colon is dropped, and a blank line dispatches the event (one without data is none)."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSentEvent:
    """One event of the stream: its name ("message" when it has none), data and id."""

    event: str
    data: str
    id: str | None = None


_LINE_END = re.compile(r"\r\n|\r|\n")


def lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The stream's lines, decoded as UTF-8 however the chunks cut characters and line ends."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    after_cr = False  # the text so far ended with CR: an LF next is the same line end
    for chunk in chunks:
        text = decoder.decode(chunk)
        if after_cr and text.startswith("\n"):
            text = text[1:]
        if text:
            after_cr = text.endswith("\r")
        *complete, pending = _LINE_END.split(pending + text)
        yield from complete
    pending += decoder.decode(b"", final=True)
    if pending:
        yield pending  # an unterminated last line (its event is never dispatched)


def events(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """The events of a stream of bytes, each as soon as its blank line has come."""
    name = ""
    data: list[str] = []
    last_id: str | None = None
    for line in lines(chunks):
        if not line:
            if data:
                yield ServerSentEvent(name or "message", "\n".join(data), last_id)
            name, data = "", []
            continue
        if line.startswith(":"):
            continue  # a comment: the API's keep-alive pings
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
        elif field == "id" and "\0" not in value:
            last_id = value
        # "retry" and unknown fields mean nothing to a reader that does not reconnect.
