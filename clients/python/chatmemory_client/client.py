"""ChatMemoryClient: the chat memory HTTP API as typed Python calls, with authentication for
local mode (X-User-Id), a Cognito token or SigV4, error classes, and retries that never store a
message twice."""

from __future__ import annotations

import json
import math
import random
import re
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import requests

from chatmemory_client import __version__
from chatmemory_client.errors import (
    ChatMemoryError,
    ConnectionFailed,
    InvalidId,
    error_from_response,
)
from chatmemory_client.models import (
    DeletionStatus,
    HandoffView,
    Memory,
    MetadataValue,
    Record,
    Session,
    Turn,
)
from chatmemory_client.streaming import MessageStream, turn_of

# Answers worth another try: API Gateway throttling, a gateway that lost its backend, and the
# API's own 503 (a model or a store unavailable); the API leaves stored data as it was on them.
RETRY_STATUSES = frozenset({429, 502, 503, 504})
_BACKOFF_BASE_SECONDS = 0.5
_BACKOFF_MAX_SECONDS = 8.0
_RETRY_AFTER_MAX_SECONDS = 20.0
_REGION_IN_URL = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com", re.IGNORECASE)
# Indirection so tests can skip the waits.
_sleep = time.sleep


# The API's rule for identifiers (schema.ID_PATTERN on the server; openapi.json publishes it
# and a test checks the two agree): 1-128 letters, digits and _ . : -, not only dots.
ID_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")
ID_MAX_LENGTH = 128
MAX_TURN_NUMBER = 999_999_999


def checked_id(value: object, what: str) -> str:
    """`value` if it is an identifier the API accepts, else InvalidId (nothing is sent)."""
    if not isinstance(value, str) or len(value) > ID_MAX_LENGTH or not ID_PATTERN.match(value):
        raise InvalidId(
            f"{what} {value!r} is not an id the API accepts: 1-{ID_MAX_LENGTH} letters, digits "
            "and _ . : -, not only dots"
        )
    return value


def _turn(value: object) -> str:
    """A turn number as a path segment: a whole number from 1 (not True, not 1.0)."""
    if type(value) is not int or not 1 <= value <= MAX_TURN_NUMBER:
        raise InvalidId(f"turn {value!r} is not a turn number (a whole number from 1)")
    return str(value)


def _path(*segments: str) -> str:
    """A URL path from the API's own words and ids (each checked with checked_id first by its
    caller), each percent-encoded whole: no id can add, remove or change a segment."""
    for segment in segments:
        if segment.strip(".") == "":  # "." and ".." would be collapsed into another route
            raise InvalidId(f"{segment!r} cannot be a path segment")
    return "".join("/" + quote(segment, safe="") for segment in segments)


def _session(session_id: object) -> str:
    return checked_id(session_id, "session id")


_LARGEST = sys.float_info.max
_NOTHING = {"$gt": _LARGEST, "$lt": -_LARGEST}  # no number is both
_HUGE = 10**64


def finite_filter(conditions: Mapping[str, Any]) -> dict[str, Any]:
    """A records filter with its infinite and NaN operands (which JSON cannot carry, and the
    API refuses) replaced by conditions that select the same records: "below infinity" is
    "at least the lowest number", "equal to NaN" is nothing, "not equal to NaN" is no
    condition. An operand of over 64 digits (the API's bound) compares as a float."""
    out: dict[str, Any] = {}
    for field, wanted in conditions.items():
        if isinstance(wanted, Mapping):
            operators = {k: v for k, v in wanted.items() if str(k).startswith("$")}
            if not operators:
                out[field] = finite_filter(wanted)
                continue
            kept: dict[str, Any] = {}
            for op, operand in operators.items():
                kept.update(_finite_operator(op, operand))
            if kept:
                out[field] = kept
        elif isinstance(wanted, float) and not math.isfinite(wanted):
            out[field] = dict(_NOTHING)
        else:
            out[field] = wanted
    return out


def _finite_operator(op: str, operand: Any) -> dict[str, Any]:
    if isinstance(operand, int) and not isinstance(operand, bool) and abs(operand) >= _HUGE:
        operand = float(operand)  # the API refuses integers of over 64 digits
    if not isinstance(operand, float) or math.isfinite(operand):
        return {op: operand}
    if math.isnan(operand):
        return {} if op == "$ne" else dict(_NOTHING)  # NaN equals and orders with nothing
    if op == "$ne":
        return {}
    every = {"$lt": operand > 0, "$lte": operand > 0, "$gt": operand < 0, "$gte": operand < 0}
    if every.get(op):
        return {"$gte": -_LARGEST}  # any number
    return dict(_NOTHING)


def _record(record_id: object) -> str:
    return checked_id(record_id, "record id")


def _scope(agent_id: str | None, run_id: str | None) -> dict[str, str]:
    """The agent_id and run_id fields of a request (checked as ids), those given."""
    scope = {"agent_id": agent_id, "run_id": run_id}
    return {k: checked_id(v, k.replace("_", " ")) for k, v in scope.items() if v is not None}


def _message_id(client_message_id: str | None) -> str:
    """The client_message_id sent: the caller's (checked), or a new one."""
    if client_message_id is None:
        return _new_message_id()
    return checked_id(client_message_id, "client_message_id")


def _message(
    content: str, client_message_id: str | None, window_turns: int | None
) -> dict[str, Any]:
    """The body of a chat message (a client_message_id made when none is given)."""
    body: dict[str, Any] = {"content": content, "client_message_id": _message_id(client_message_id)}
    if window_turns is not None:
        body["window_turns"] = window_turns
    return body


def _query(params: Mapping[str, Any]) -> str:
    """A query string with spaces as %20, never "+": SigV4 signs the query as sent, and API
    Gateway rebuilds it in that form to check the signature."""
    kept = {key: value for key, value in params.items() if value is not None}
    return urlencode(kept, quote_via=quote, safe="-_.~") if kept else ""


class _SigV4(requests.auth.AuthBase):
    """Signs each request (each retry anew) with botocore's SigV4 for execute-api."""

    def __init__(self, region: str) -> None:
        try:
            import botocore.session
            from botocore.auth import SigV4Auth
        except ImportError as error:  # pragma: no cover - depends on the extra
            raise ImportError(
                "iam=True needs botocore: pip install 'chatmemory-client[iam]'"
            ) from error
        credentials = botocore.session.Session().get_credentials()
        if credentials is None:
            raise ValueError("iam=True but no AWS credentials were found (botocore's chain)")
        self._credentials = credentials
        self._signer = SigV4Auth
        self.region = region

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        from botocore.awsrequest import AWSRequest

        body = request.body or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        # Sign what is sent: the same method, URL (path and query as encoded) and body.
        signed = AWSRequest(
            method=request.method or "GET",
            url=request.url or "",
            data=body,
            headers={k: v for k, v in request.headers.items() if k.lower() == "content-type"},
        )
        self._signer(self._credentials, "execute-api", self.region).add_auth(signed)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            if name in signed.headers:
                request.headers[name] = signed.headers[name]
        return request


def _region_of(base_url: str) -> str | None:
    found = _REGION_IN_URL.search(base_url)
    if found:
        return found.group(1).lower()
    try:
        import botocore.session
    except ImportError:  # pragma: no cover - depends on the extra
        return None
    region = botocore.session.Session().get_config_variable("region")
    return str(region) if region else None


def _is_before_sending(error: requests.RequestException) -> bool:
    """Whether a failed request surely never reached the server (refused, unresolved, or
    timed out while connecting), so even a non-idempotent request may be sent again."""
    if isinstance(error, requests.ConnectTimeout):
        return True
    if not isinstance(error, requests.ConnectionError):
        return False
    from urllib3.exceptions import NewConnectionError  # urllib3 2 resolves names under it too

    reason = getattr(error.args[0] if error.args else None, "reason", None)
    return isinstance(reason, NewConnectionError)


class ChatMemoryClient:
    """A caller of the chat memory API.

    - Local mode (`make run`): `ChatMemoryClient("http://127.0.0.1:8000", user_id="alice")`.
    - Deployed with Cognito: `token=<ID token>` (sent as the Authorization header).
    - Deployed with auth=iam: `iam=True` signs requests with SigV4 (service execute-api,
      region from `region` or the URL, credentials from botocore's default chain).

    Failed requests raise `chatmemory_client.errors.ChatMemoryError` subclasses. Connection
    errors, 429, 502, 503 and 504 are retried up to `max_retries` times with exponential
    backoff and jitter when a retry cannot store anything twice: reads, PUT, PATCH and
    DELETE, messages and turns (each sent with a client_message_id, generated when not
    given), ending a session, and a record with a record_id (an upsert)."""

    def __init__(
        self,
        base_url: str,
        *,
        user_id: str | None = None,
        token: str | None = None,
        iam: bool = False,
        region: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        session: requests.Session | None = None,
    ) -> None:
        if token and iam:
            raise ValueError("token and iam=True are two ways to authenticate: choose one")
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.base_url = base_url.rstrip("/")
        self.user_id = user_id
        self.timeout = timeout
        self.max_retries = max_retries
        self._owns_session = session is None
        # requests' own adapters never retry: the client does, knowing what is safe to resend.
        self._http = session or requests.Session()
        self._headers = {
            "Accept": "application/json",
            "User-Agent": f"chatmemory-client/{__version__}",
        }
        if user_id:
            self._headers["X-User-Id"] = user_id
        if token:
            self._headers["Authorization"] = token
        self._auth: _SigV4 | None = None
        if iam:
            found = region or _region_of(self.base_url)
            if not found:
                raise ValueError("iam=True needs a region: pass region=... or set AWS_REGION")
            self._auth = _SigV4(found)

    # --- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the HTTP connections (of a session the client made itself)."""
        if self._owns_session:
            self._http.close()

    def __enter__(self) -> ChatMemoryClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- sessions ------------------------------------------------------------------------------

    def create_session(
        self,
        name: str | None = None,
        *,
        end_previous: bool = False,
        continue_from: str | None = None,
    ) -> Session:
        """Starts an OPEN session; end_previous ends the caller's open sessions first;
        continue_from continues one of them (see continue_session)."""
        body: dict[str, Any] = {}
        if name is not None:
            body["name"] = name
        if end_previous:
            body["end_previous"] = True
        if continue_from is not None:
            body["continue_from"] = _session(continue_from)
        return Session.from_json(self._call("POST", "/sessions", body)["session"])

    def ensure_session(
        self,
        session_id: str,
        name: str | None = None,
        *,
        end_previous: bool = False,
        continue_from: str | None = None,
    ) -> Session:
        """The session your own id names (a thread id, "user42-conv"), created OPEN if there is
        none (PUT /sessions/{id}; name and the other options apply only then). Idempotent, and
        your id space is your own: another user's same id is another session.

        Every method that takes a session id takes your id too. After the session ends (the
        idle sweeper ends it after 30 idle minutes), a message or a turn sent to your id
        continues the conversation in a new session that takes the id over (its
        continued_from names the ended one): the id keeps working for as long as it exists.
        Deleting it deletes the whole conversation, and the id is free at once."""
        body: dict[str, Any] = {}
        if name is not None:
            body["name"] = name
        if end_previous:
            body["end_previous"] = True
        if continue_from is not None:
            body["continue_from"] = _session(continue_from)
        answer = self._call("PUT", _path("sessions", _session(session_id)), body)
        return Session.from_json(answer["session"])

    def continue_session(self, session_id: str) -> Session:
        """A new session that continues `session_id` (say, after the idle sweeper ended it and a
        send raised SessionEnded): the name you gave it carries over, and, for as long as it
        exists, its rolling summary is in the model's prompt and its last turns in the window
        until the new session has its own."""
        return self.create_session(continue_from=session_id)

    def list_sessions(self, *, page_size: int = 20) -> Iterator[Session]:
        """The caller's sessions, newest first, page after page."""
        for item in self._pages("/sessions", "sessions", {"limit": page_size}):
            yield Session.from_json(item)

    def get_session(self, session_id: str) -> Session:
        """One session: its name, status, times and number of turns."""
        return Session.from_json(
            self._call("GET", _path("sessions", _session(session_id)))["session"]
        )

    def end_session(self, session_id: str) -> Session:
        """Ends a session (its consolidation into long-term memory follows); idempotent."""
        answer = self._call("POST", _path("sessions", _session(session_id), "end"), retry_safe=True)
        return Session.from_json(answer["session"])

    def delete_session(self, session_id: str) -> None:
        """Deletes a session, its turns and its long-term memory."""
        self._call("DELETE", _path("sessions", _session(session_id)))

    # --- turns ---------------------------------------------------------------------------------

    def send_message(
        self,
        session_id: str,
        content: str,
        *,
        client_message_id: str | None = None,
        window_turns: int | None = None,
    ) -> Turn:
        """Sends a message for the server's model to answer; returns the stored turn.

        A retry (here or yours, with the same client_message_id) returns the same turn. A
        message sent before the answer to an earlier one is answered together with it: the
        earlier message's turn then has `answered_by` and `answer` (the turn holding the one
        answer); `turn.reply` is the answer either way."""
        body = _message(content, client_message_id, window_turns)
        path = _path("sessions", _session(session_id), "messages")
        return turn_of(self._call("POST", path, body, retry_safe=True))

    def stream_message(
        self,
        session_id: str,
        content: str,
        *,
        client_message_id: str | None = None,
        window_turns: int | None = None,
    ) -> MessageStream:
        """Sends a message and returns its answer as it is written: an iterator of
        `MemoryEvent`, `DeltaEvent` (text), then `TurnEvent` (the stored turn, as send_message
        returns it) or `ErrorEvent` (a failure after the stream started, typed as send_message
        raises it). Use it in a `with` block:

            with client.stream_message(session_id, "Hello") as stream:
                for event in stream:
                    if isinstance(event, DeltaEvent):
                        print(event.text, end="", flush=True)

        A refused request (a bad message, an ended session, a missing session) raises before
        any event, as send_message does; throttling and an unavailable server before the first
        byte are retried as there. Closing the stream before its end (`close()`, leaving the
        `with` block, Ctrl-C) stops the answer: the server stores what it had sent, marked
        `stopped`. A retry with the same client_message_id replays the stored answer (its text
        as one delta) without calling the model."""
        body = _message(content, client_message_id, window_turns)
        path = _path("sessions", _session(session_id), "messages", "stream")
        answer = self._send("POST", path, body, retry_safe=True, stream=True)
        if answer.status_code >= 400:
            with answer:
                _result(answer)  # raises the API's error
        if not answer.headers.get("Content-Type", "").startswith("text/event-stream"):
            answer.close()
            raise ChatMemoryError(
                answer.status_code, "invalid_answer", "the API answered without an event stream"
            )
        return MessageStream(answer)

    def store_turn(
        self,
        session_id: str,
        input: str,  # noqa: A002 - the API's field name
        *,
        response: str | None = None,
        client_message_id: str | None = None,
        created_at: str | None = None,
        metadata: Mapping[str, MetadataValue] | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Turn:
        """Stores a turn that the caller's own model answered (or will: without response the
        turn is pending until complete_turn). No server model is called. `messages`: your
        framework's own messages the turn stands for (JSON objects, at most 128 KB as JSON),
        kept verbatim and returned with the turn; the service reads input and response."""
        body: dict[str, Any] = {
            "input": input,
            "client_message_id": _message_id(client_message_id),
        }
        if response is not None:
            body["response"] = response
        if created_at is not None:
            body["created_at"] = created_at
        if metadata:
            body["metadata"] = dict(metadata)
        if messages is not None:
            body["messages"] = [dict(m) for m in messages]
        path = _path("sessions", _session(session_id), "turns")
        return Turn.from_json(self._call("POST", path, body, retry_safe=True)["turn"])

    def get_turn(self, session_id: str, turn: int) -> Turn:
        """One turn of a session, by number."""
        path = _path("sessions", _session(session_id), "turns", _turn(turn))
        return Turn.from_json(self._call("GET", path)["turn"])

    def complete_turn(
        self,
        session_id: str,
        turn: int,
        response: str | None,
        *,
        metadata: Mapping[str, MetadataValue] | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Turn:
        """Fills in the response of a pending turn (Conflict if it has another one); replaces
        its metadata and/or messages if given. With response None the turn stays as it is
        (pending or not) and only metadata and messages change."""
        body: dict[str, Any] = {}
        if response is not None:
            body["response"] = response
        if metadata is not None:
            body["metadata"] = dict(metadata)
        if messages is not None:
            body["messages"] = [dict(m) for m in messages]
        path = _path("sessions", _session(session_id), "turns", _turn(turn))
        return Turn.from_json(self._call("PATCH", path, body)["turn"])

    def set_feedback(
        self, session_id: str, turn: int, rating: str, comment: str | None = None
    ) -> Turn:
        """Rates a turn's answer "up" or "down" (replacing an earlier rating)."""
        body: dict[str, Any] = {"rating": rating}
        if comment is not None:
            body["comment"] = comment
        path = _path("sessions", _session(session_id), "turns", _turn(turn), "feedback")
        return Turn.from_json(self._call("PUT", path, body)["turn"])

    def list_turns(
        self, session_id: str, *, order: str = "asc", page_size: int = 50
    ) -> Iterator[Turn]:
        """A session's turns in order ("asc" or "desc"), page after page."""
        path = _path("sessions", _session(session_id), "messages")
        for item in self._pages(path, "messages", {"limit": page_size, "order": order}):
            yield Turn.from_json(item)

    # --- hand-off to a person -------------------------------------------------------------------

    def request_handoff(self, session_id: str, note: str | None = None) -> Session:
        """Hands the session to a person (as the chat command /human does): the model stops
        answering, an agent replies. Asking again while it is handed off changes nothing."""
        body = {"note": note} if note is not None else None
        path = _path("sessions", _session(session_id), "handoff")
        return Session.from_json(self._call("POST", path, body, retry_safe=True)["session"])

    def list_handoffs(self, *, state: str = "WAITING", page_size: int = 20) -> Iterator[Session]:
        """Agents: sessions handed to a person ("WAITING" or "ACTIVE"), longest waiting first."""
        params = {"state": state, "limit": page_size}
        for item in self._pages("/agent/sessions", "sessions", params):
            yield Session.from_json(item)

    def read_handoff(
        self,
        session_id: str,
        *,
        order: str = "desc",
        page_size: int = 50,
        next_token: str | None = None,
    ) -> HandoffView:
        """Agents: a handed-off session and one page of its turns (newest first by default;
        pass the view's next_token for the page before)."""
        params = {"order": order, "limit": page_size, "next_token": next_token}
        answer = self._call("GET", _path("agent", "sessions", _session(session_id)), params=params)
        return HandoffView.from_json(answer)

    def agent_reply(
        self, session_id: str, content: str, *, client_message_id: str | None = None
    ) -> Turn:
        """Agents: replies in a handed-off session (a turn of origin "agent"); safe to retry."""
        body = {"content": content, "client_message_id": _message_id(client_message_id)}
        path = _path("agent", "sessions", _session(session_id), "messages")
        return Turn.from_json(self._call("POST", path, body, retry_safe=True)["turn"])

    def hand_back(self, session_id: str) -> Session:
        """Agents: hands the session back to the bot, which answers with the whole
        conversation (Conflict if it is not handed off)."""
        path = _path("agent", "sessions", _session(session_id), "handback")
        return Session.from_json(self._call("POST", path)["session"])

    # --- export and import ---------------------------------------------------------------------

    def export_session(self, session_id: str) -> dict[str, Any]:
        """The session and all its turns as one document (import_session takes it); a long
        session's export comes in pages, read here one after the other."""
        path = _path("sessions", _session(session_id), "export")
        document: dict[str, Any] = self._call("GET", path)
        while document.get("next_token"):
            page = self._call("GET", path, params={"next_token": document["next_token"]})
            document["messages"] += page["messages"]
            document["next_token"] = page.get("next_token")
        document.pop("next_token", None)
        return document

    def import_session(self, document: Mapping[str, Any]) -> Session:
        """A new OPEN session of the caller with every turn of an exported document."""
        answer = self._call("POST", "/sessions/import", dict(document))
        return Session.from_json(answer["session"])

    # --- long-term memory and profile ----------------------------------------------------------

    def search_memories(self, query: str, k: int = 5) -> list[Memory]:
        """The consolidated past sessions that best match query, best first."""
        answer = self._call("GET", "/memories", params={"q": query, "k": k})
        return [Memory.from_json(item) for item in answer["memories"]]

    def list_records(self, *, type: str | None = None, page_size: int = 20) -> Iterator[Record]:  # noqa: A002
        """The caller's profile records (fact, preference, summary), newest first."""
        params = {"type": type, "limit": page_size}
        for item in self._pages("/memories/records", "records", params):
            yield Record.from_json(item)

    def search_records(
        self,
        query: str,
        *,
        type: str | None = None,  # noqa: A002 - the API's parameter name
        limit: int = 20,
    ) -> list[Record]:
        """The records closest to query by meaning and words, best first."""
        params: dict[str, Any] = {"q": query, "type": type, "limit": limit}
        found: list[Record] = []
        while True:
            answer = self._call("GET", "/memories/records", params=params)
            found += [Record.from_json(item) for item in answer["records"]]
            # Set when the records did not all fit one answer (6 MB): the rest follow.
            if not answer.get("next_token"):
                return found
            params["next_token"] = answer["next_token"]

    def find_records(
        self,
        *,
        query: str | None = None,
        namespace_prefix: Sequence[str] = (),
        agent_id: str | None = None,
        run_id: str | None = None,
        filter: Mapping[str, Any] | None = None,  # noqa: A002 - the API's field name
        type: str | None = None,  # noqa: A002 - the API's field name
        limit: int = 10,
        offset: int = 0,
        include_history: bool = False,
    ) -> list[Record]:
        """Records of the namespaces under namespace_prefix that pass filter (on the record's
        value: the JSON object its text holds, else {"text": text}): with query, the closest
        by meaning and words, each with its score; without, newest first. With agent_id (and
        run_id), only that agent's (and run's) records: namespace_prefix then goes on from
        theirs. All of it is done by the server (POST /memories/records/search)."""
        body: dict[str, Any] = {
            "namespace_prefix": list(namespace_prefix),
            "limit": limit,
            "offset": offset,
            "include_history": include_history,
            **_scope(agent_id, run_id),
        }
        if query:
            body["query"] = query
        if filter:
            body["filter"] = finite_filter(filter)
        if type is not None:
            body["type"] = type
        found: list[Record] = []
        while True:
            answer = self._call("POST", "/memories/records/search", body, retry_safe=True)
            found += [Record.from_json(item) for item in answer["records"]]
            # Set when the records asked for did not all fit one answer (6 MB).
            rest = answer.get("next_offset")
            if rest is None or len(found) >= limit:
                return found
            body["offset"], body["limit"] = rest, limit - len(found)

    def list_namespaces(
        self,
        *,
        prefix: Sequence[str] = (),
        suffix: Sequence[str] = (),
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces the caller's records are in, filtered, cut to max_depth labels and
        paged by the server ("*" in prefix or suffix matches any one label)."""
        body: dict[str, Any] = {
            "prefix": list(prefix),
            "suffix": list(suffix),
            "limit": limit,
            "offset": offset,
        }
        if max_depth is not None:
            body["max_depth"] = max_depth
        found: list[tuple[str, ...]] = []
        while True:
            answer = self._call("POST", "/memories/namespaces", body, retry_safe=True)
            found += [tuple(ns) for ns in answer["namespaces"]]
            # Set when the namespaces asked for did not all fit one answer (6 MB).
            rest = answer.get("next_offset")
            if rest is None or len(found) >= limit:
                return found
            body["offset"], body["limit"] = rest, limit - len(found)

    def get_record(self, record_id: str) -> Record:
        """One record of the caller's profile."""
        path = _path("memories", "records", _record(record_id))
        return Record.from_json(self._call("GET", path)["record"])

    def remember(
        self,
        text: str,
        *,
        type: str | None = None,  # noqa: A002 - the API's field name
        record_id: str | None = None,
        namespace: Sequence[str] | None = None,
        ttl_seconds: int | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        index: bool = True,
    ) -> Record:
        """States a fact or preference. With record_id it is an upsert: that record is created
        or its text replaced (so it is safe to retry). With namespace (and record_id), the
        record is an item of that namespace: it never merges with or supersedes another.
        With ttl_seconds, the record expires that many seconds from now (its expires_at): from
        then on no read returns it and its record_id is free; an upsert without ttl_seconds
        makes the record lasting again. With agent_id (and run_id), like Mem0's, the record is
        that agent's (and run's), beside the caller: in the namespace ("agent", agent_id,
        "run", run_id, *namespace), an id of its own when record_id is None. With index=False
        (record_id and a namespace of yours needed), the record is kept but not embedded:
        search by meaning skips it (found by its words only, after what meaning ranks)."""
        body: dict[str, Any] = {"text": text, **_scope(agent_id, run_id)}
        if not index:
            body["index"] = False
        if ttl_seconds is not None:
            body["ttl_seconds"] = int(ttl_seconds)
        if type is not None:
            body["type"] = type
        if record_id is not None:
            body["record_id"] = _record(record_id)
        if namespace is not None:
            body["namespace"] = list(namespace)
        answer = self._call("POST", "/memories/records", body, retry_safe=record_id is not None)
        return Record.from_json(answer["record"])

    def correct_record(self, record_id: str, text: str) -> Record:
        """Replaces a record's text (it is embedded again; its history is kept)."""
        path = _path("memories", "records", _record(record_id))
        return Record.from_json(self._call("PATCH", path, {"text": text})["record"])

    def delete_record(self, record_id: str) -> None:
        """Deletes a record from the profile and from recall."""
        self._call("DELETE", _path("memories", "records", _record(record_id)))

    def forget_everything(self) -> None:
        """Deletes every session, turn, memory and record of the caller."""
        self._call("DELETE", "/memories")

    def deletion_status(self) -> DeletionStatus:
        """Whether the physical deletion of what the caller deleted has finished."""
        return DeletionStatus.from_json(self._call("GET", "/deletions"))

    # --- HTTP ----------------------------------------------------------------------------------

    def _pages(self, path: str, key: str, params: Mapping[str, Any]) -> Iterator[Any]:
        token: str | None = None
        while True:
            answer = self._call("GET", path, params={**params, "next_token": token})
            yield from answer[key]
            token = answer.get("next_token")
            if not token:
                return

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, Any] | None = None,
        retry_safe: bool | None = None,
    ) -> Any:
        """Sends one request (retried as the class docstring says) and returns its JSON."""
        return _result(self._send(method, path, body, params=params, retry_safe=retry_safe))

    def _send(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, Any] | None = None,
        retry_safe: bool | None = None,
        stream: bool = False,
    ) -> requests.Response:
        """Sends one request, retried as the class docstring says; its last answer. With
        `stream`, the answer's body is read by the caller (an event stream)."""
        url = self.base_url + path
        query = _query(params or {})
        if query:
            url += "?" + query
        headers = dict(self._headers)
        if stream:
            headers["Accept"] = "text/event-stream"
        data: bytes | None = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        safe = method != "POST" if retry_safe is None else retry_safe
        attempt = 0
        while True:
            try:
                answer = self._http.request(
                    method,
                    url,
                    data=data,
                    headers=headers,
                    auth=self._auth,
                    timeout=self.timeout,
                    stream=stream,
                )
            except requests.RequestException as error:
                if attempt < self.max_retries and (safe or _is_before_sending(error)):
                    self._wait(attempt, None)
                    attempt += 1
                    continue
                message = f"{method} {url}: {error}"
                raise ConnectionFailed(0, "connection_failed", message) from error
            # A throttled request (429) never reached the API, so it is safe to send again.
            retryable = answer.status_code in RETRY_STATUSES and (safe or answer.status_code == 429)
            if retryable and attempt < self.max_retries:
                answer.close()
                self._wait(attempt, answer.headers.get("Retry-After"))
                attempt += 1
                continue
            return answer

    @staticmethod
    def _wait(attempt: int, retry_after: str | None) -> None:
        """Exponential backoff with full jitter, or the server's Retry-After (capped)."""
        delay = random.uniform(0, min(_BACKOFF_MAX_SECONDS, _BACKOFF_BASE_SECONDS * 2**attempt))
        if retry_after and retry_after.strip().replace(".", "", 1).isdigit():
            # Seconds; an HTTP date keeps the backoff.
            delay = min(float(retry_after), _RETRY_AFTER_MAX_SECONDS)
        _sleep(delay)


def _result(answer: requests.Response) -> Any:
    if answer.status_code >= 400:
        raise error_from_response(answer.status_code, answer.content, answer.reason or "")
    if answer.status_code == 204 or not answer.content:
        return None
    try:
        return answer.json()
    except ValueError as error:
        raise ChatMemoryError(
            answer.status_code, "invalid_answer", "the API answered with something not JSON"
        ) from error


def _new_message_id() -> str:
    return str(uuid.uuid4())
