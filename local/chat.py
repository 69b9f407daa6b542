"""`make chat`: a terminal chat against the running local API (or any deployment of it).

Continues your most recent open session (or starts one). Type a message, or:
  /past <question>      recall past (ended) sessions      /verified <question>  verified documents
  /remember <text>      add to what I remember about you
  /end   end this session (it is consolidated into long-term memory) and start a new one
  /new   start a new session       /sessions   list your sessions       /quit   leave
Answers print as they are written; Ctrl-C during one stops it (what was shown is kept as the
answer, marked stopped) and returns to the prompt.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from chatmemory_client import sse

from local.config import API_PORT, USER_HEADER


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code

    def __str__(self) -> str:
        return f"{self.args[0]} ({self.code})" if self.status else str(self.args[0])


class Client:
    """The chat API over HTTP, as one caller."""

    def __init__(self, base: str, *, user: str = "", token: str = "") -> None:
        self.base = base.rstrip("/")
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if user:
            self.headers[USER_HEADER] = user
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers=self.headers
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                text = answer.read().decode()
        except urllib.error.HTTPError as error:
            raise _api_error(error) from None
        except OSError as error:
            raise ApiError(0, "unreachable", f"cannot reach {self.base}: {error}") from None
        return json.loads(text) if text else None

    @contextlib.contextmanager
    def stream(self, path: str, body: Any) -> Iterator[Iterator[tuple[str, dict[str, Any]]]]:
        """POST to a stream route: its server-sent events (name, data) as they come. A refused
        request raises ApiError before any event; leaving the block closes the connection
        (before the end, the server stops the answer and stores it marked stopped)."""
        headers = {**self.headers, "Accept": "text/event-stream"}
        request = urllib.request.Request(
            self.base + path, data=json.dumps(body).encode(), method="POST", headers=headers
        )
        try:
            # The timeout is between two reads: the API pings a quiet stream every 15 s.
            answer = urllib.request.urlopen(request, timeout=120)
        except urllib.error.HTTPError as error:
            raise _api_error(error) from None
        except OSError as error:
            raise ApiError(0, "unreachable", f"cannot reach {self.base}: {error}") from None
        with answer:
            chunks = iter(lambda: answer.readline(), b"")
            yield ((e.event, json.loads(e.data)) for e in sse.events(chunks))


def _api_error(error: urllib.error.HTTPError) -> ApiError:
    try:
        body = json.loads(error.read().decode() or "{}")
    except ValueError:
        body = {}
    found = body.get("error") if isinstance(body, dict) else None
    if isinstance(found, dict):
        return ApiError(error.code, str(found.get("code")), str(found.get("message")))
    return ApiError(error.code, f"http_{error.code}", error.reason or "error")


def format_sources(turn: dict[str, Any]) -> list[str]:
    """What an answer used, one line each: the records of the profile every prompt holds
    counted in one line (listing them under every answer would drown it), then each past
    session with its date, record (what it says, since when) and cited passage."""
    sources = turn.get("sources") or []
    profile = sum(1 for source in sources if source.get("kind") == "profile")
    lines = [f"  - profile: {profile} fact{'' if profile == 1 else 's'}"] if profile else []
    for source in sources:
        kind = source.get("kind")
        date = (source.get("date") or "")[:10]
        if kind == "profile":
            continue
        if kind == "session":
            lines.append(
                f"  - session {source.get('title') or source['id']} ({date}) {source['id']}"
            )
        elif kind == "record":
            since = f" (since {date})" if date else ""
            lines.append(f"  - remembered: {source.get('title') or source['id']}{since}")
        elif source.get("doc_id"):
            cite = f"{source['doc_id']}#{source.get('passage_id') or ''}"
            lines.append(f"  - [{cite}] {source.get('title') or ''}".rstrip())
        else:  # a kind this chat does not know yet: as the API names it
            lines.append(f"  - {kind}: {source.get('title') or source.get('id')}")
    return lines


_LABELS = {"past": " [recalled]", "verified": " [verified]", "remember": " [remembered]"}


class Chat:
    """The interactive loop; `handle(line)` does one command or message (tests call it)."""

    def __init__(self, client: Client, *, window_turns: int | None = None, out: Any = None) -> None:
        self.client = client
        self.window_turns = window_turns
        self.out = out or sys.stdout
        self.session: dict[str, Any] | None = None

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def open(self, *, new: bool = False) -> None:
        """Continue the most recent open session, or start one."""
        if not new:
            sessions = self.client.call("GET", "/sessions?limit=20")["sessions"]
            found = next((s for s in sessions if s["status"] == "OPEN"), None)
            if found:
                self.session = found
                self.say(
                    f"continuing session {found['name']!r} (turns so far: {found['num_turns']})"
                )
                path = f"/sessions/{quote(found['session_id'])}/messages?order=desc&limit=3"
                for turn in reversed(self.client.call("GET", path)["messages"]):
                    self._show_turn(turn)
                return
        self.session = self.client.call("POST", "/sessions", {})["session"]
        self.say(f"new session {self.session['name']!r}")

    def handle(self, line: str) -> bool:
        """Act on one input line; False means quit."""
        line = line.strip()
        if not line:
            return True
        command = line.split()[0].lower()
        if command in ("/quit", "/exit", "/q"):
            return False
        if command == "/new":
            self.open(new=True)
        elif command == "/end":
            self._end()
        elif command == "/sessions":
            self._list()
        elif command in ("/help", "/?"):
            self.say(__doc__.split("\n", 2)[2].rstrip())
        else:
            self._send(line)
        return True

    def _send(self, content: str) -> None:
        assert self.session is not None
        body: dict[str, Any] = {"content": content, "client_message_id": str(uuid.uuid4())}
        if self.window_turns is not None:
            body["window_turns"] = self.window_turns
        path = f"/sessions/{quote(self.session['session_id'])}/messages/stream"
        for attempt in range(2):
            try:
                turn = self._streamed(path, body)
                break
            except ApiError as error:
                # The model was unavailable: the message is kept; the same id completes it once.
                if error.status == 503 and attempt == 0:
                    self.say("(model unavailable, retrying once)")
                    time.sleep(1)
                    continue
                raise
        if turn is not None:
            self._show_end(turn)

    def _streamed(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The answer printed as it is written; the stored turn, or None when Ctrl-C stopped it
        (the connection closes: the server stores what was sent, marked stopped)."""
        started = False
        try:
            with self.client.stream(path, body) as events:
                for name, data in events:
                    if name == "delta":
                        if not started:
                            print("bot> ", end="", file=self.out, flush=True)
                            started = True
                        print(data["text"], end="", file=self.out, flush=True)
                    elif name == "turn":
                        if not started:  # no text came (a pending turn, a hand-off)
                            self._show_turn(data["turn"], echo_input=False)
                            return None
                        self.say()
                        return dict(data["turn"])
                    elif name == "error":
                        found = data.get("error") or {}
                        status = int(data.get("status") or 500)
                        raise ApiError(status, str(found.get("code")), str(found.get("message")))
            raise ApiError(0, "unreachable", "the answer was cut off before its end")
        except KeyboardInterrupt:
            self.say()
            self.say("(stopped: what was shown is kept as the answer)")
            return None
        except ApiError:
            if started:
                self.say()  # the error on a line of its own
            raise

    def _show_end(self, turn: dict[str, Any]) -> None:
        """After a streamed answer: its turn number and kind, and what it used."""
        label = _LABELS.get(turn.get("intent", ""), "")
        self.say(f"  #{turn['turn']}{label}")
        self._show_sources(turn)

    def _show_sources(self, turn: dict[str, Any]) -> None:
        sources = format_sources(turn)
        if sources:
            self.say("  sources:")
            for line in sources:
                self.say(line)

    def _show_turn(self, turn: dict[str, Any], *, echo_input: bool = True) -> None:
        label = _LABELS.get(turn.get("intent", ""), "")
        if echo_input:
            self.say(f"you #{turn['turn']}> {turn['input']}")
        if turn.get("pending"):
            self.say(f"bot #{turn['turn']}> (no answer yet: the model was unavailable)")
        else:
            stopped = " (stopped)" if turn.get("stopped") else ""
            self.say(f"bot #{turn['turn']}{label}> {turn.get('response') or ''}{stopped}")
        self._show_sources(turn)

    def _end(self, timeout: float = 60.0) -> None:
        assert self.session is not None
        session_id = self.session["session_id"]
        self.client.call("POST", f"/sessions/{quote(session_id)}/end")
        self.say("session ended; consolidating into long-term memory...")
        deadline = time.monotonic() + timeout
        status = "ENDED"
        while status == "ENDED" and time.monotonic() < deadline:
            time.sleep(0.5)
            status = self.client.call("GET", f"/sessions/{quote(session_id)}")["session"]["status"]
        self.say(
            {
                "CONSOLIDATED": "remembered: ask about it with /past <question>",
                "FAILED": "consolidation failed: run `make redrive` to try again",
            }.get(status, "still consolidating (is `make run` running the poller?)")
        )
        self.open(new=True)

    def _list(self) -> None:
        for s in self.client.call("GET", "/sessions?limit=20")["sessions"]:
            mark = "*" if self.session and s["session_id"] == self.session["session_id"] else " "
            turns = f"{s['num_turns']} turn" + ("" if s["num_turns"] == 1 else "s")
            self.say(f"{mark} {s['started_at'][:16]}  {s['status']:<12} {turns:>9}  {s['name']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make chat",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 2)[2],
    )
    parser.add_argument("--url", default=f"http://127.0.0.1:{API_PORT}", help="API base URL")
    parser.add_argument("--user", default="", help=f"local mode only: the {USER_HEADER} header")
    parser.add_argument("--token", default="", help="bearer token (a deployed API)")
    parser.add_argument("--new", action="store_true", help="start a new session")
    parser.add_argument("--window", type=int, default=None, help="turns to remember")
    args = parser.parse_args(argv)
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 - line editing and history for input()
    chat = Chat(Client(args.url, user=args.user, token=args.token), window_turns=args.window)
    try:
        chat.open(new=args.new)
    except ApiError as error:
        hint = " (start it with `make run`)" if error.code == "unreachable" else ""
        print(f"error: {error}{hint}", file=sys.stderr)
        return 1
    chat.say(
        "type a message, /past ..., /verified ..., /remember ..., /end, /new, /sessions, /quit"
    )
    while True:
        try:
            line = input("you> ")
        except (EOFError, KeyboardInterrupt):
            chat.say()
            return 0
        try:
            if not chat.handle(line):
                return 0
        except ApiError as error:
            chat.say(f"error: {error}")
        except KeyboardInterrupt:
            chat.say("(interrupted)")


if __name__ == "__main__":
    sys.exit(main())
