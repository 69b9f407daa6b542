"""The chat API's routes: Powertools' resolver, every request and answer validated by the
pydantic models of chatmemory/api_models.py (which also make openapi.json). The function's
entry, handlers/chat_api.py, imports this module on the first request that is not a chat
message it answers itself."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
    OpenAPIResponseValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BeforeValidator

from chatmemory import api_models as m
from chatmemory import schema, wiring
from chatmemory.domain import ChannelBlob, PendingWrite
from chatmemory.errors import (
    BadRequest,
    ChatMemoryError,
    LongTermMemoryUnavailable,
)
from chatmemory.ports import Embedder, LongTermIndex
from chatmemory.schema import (
    ID_MAX_LENGTH,
    ID_PATTERN,
    MAX_TURN_NUMBER,
    HandoffState,
    RecordType,
)
from chatmemory.services.access import owner_of
from chatmemory.services.background import forget
from chatmemory.services.conversation import chat, checkpoints, handoff, sessions, turns
from chatmemory.services.longterm import recall
from chatmemory.services.profile import profile
from handlers import chat_shared, messages, stream
from handlers.chat_shared import (
    cors_origins,
    known_error,
    log_event_error,
    metrics,
    unexpected_error,
)
from handlers.http import (
    UnsupportedMediaType,
    cors_config,
    error_response,
    json_bodies_only,
    validation_message,
)
from handlers.identity import Forbidden, caller_id, is_agent
from handlers.json_body import strict_json

# The routes; the resolver that serves them is built on the first request (see api()).
router = APIGatewayRouter()


def _digits(value: object) -> object:
    """A query number as the client wrote it must be a plain integer: "1.0" or "1e1" is a
    client bug, not 1 or 10."""
    text = str(value)
    if not (text.isascii() and text.isdigit()):
        raise ValueError("must be a whole number written in digits")
    return value


def _id_path(description: str) -> Any:
    """A path parameter that is an identifier: the one rule (schema.ID_PATTERN), checked before
    the route runs, so no id can name a dot segment or a key of another caller's."""
    return Path(
        min_length=1,
        max_length=ID_MAX_LENGTH,
        pattern=ID_PATTERN,
        description=f"{description} ({m.ID_RULE}).",
    )


SessionId = Annotated[
    str,
    _id_path(
        "A session id from POST /sessions, or the caller's own id of a session from PUT "
        "/sessions/{session_id}, which names the conversation's newest session"
    ),
]
ClientSessionId = Annotated[
    str,
    _id_path(
        'The caller\'s own id of the session (a thread id, "user42-conv"): it is the '
        "caller's alone, two callers' same id never meet"
    ),
]
Limit = Annotated[int, BeforeValidator(_digits), Query(ge=1, le=100, description="Page size.")]
# The agent routes name a session by the server's id (a client id is its user's alone).
AgentSessionId = Annotated[str, _id_path("A session id (GET /agent/handoffs lists them)")]
NextToken = Annotated[str | None, Query(max_length=2048, description="From the previous page.")]


@router.post(
    "/sessions",
    summary="Start a session",
    description=(
        "Creates an OPEN session for the caller, optionally named. With end_previous, "
        "the caller's open sessions are ended first (their consolidation into long-term "
        "memory follows). With continue_from, it continues one of the caller's sessions "
        "(after the idle sweeper ended it, a message to it answers 409 session_ended)."
    ),
    responses={201: {"description": "Created"}},
)
def create_session(
    body: Annotated[m.CreateSessionRequest | None, Body()] = None,
) -> tuple[m.SessionEnvelope, int]:
    body = body or m.CreateSessionRequest()
    memory = wiring.chat_deps().memory
    created = sessions.create_session(
        memory,
        _user(),
        name=body.name,
        end_previous=body.end_previous,
        continue_from=_session(body.continue_from) if body.continue_from else None,
    )
    return m.SessionEnvelope.of(created), 201


@router.put(
    "/sessions/<session_id>",
    summary="Create or get a session by the caller's id",
    description=(
        "The caller's session named by the caller's own id (a framework's thread id), created "
        "OPEN if there is none (201), else answered as it is (200; the body is then ignored). "
        "The id is the caller's alone: two callers' same id are two sessions. Every "
        "/sessions/{session_id} route takes it. A message or a turn sent to it after its "
        "session ended (the idle sweeper) continues the conversation in a new session that "
        "takes the id over (continued_from names the ended one). DELETE deletes the whole "
        "conversation (every session the id named), and the id is free again at once."
    ),
    responses={201: {"description": "Created"}, 200: {"description": "It exists"}},
)
def put_session(
    session_id: ClientSessionId,
    body: Annotated[m.CreateSessionRequest | None, Body()] = None,
) -> tuple[m.SessionEnvelope, int]:
    body = body or m.CreateSessionRequest()
    session, created = sessions.ensure_session(
        wiring.chat_deps().memory,
        _user(),
        session_id,
        name=body.name,
        end_previous=body.end_previous,
        continue_from=body.continue_from,
    )
    return m.SessionEnvelope.of(session), 201 if created else 200


@router.get(
    "/sessions",
    summary="List sessions",
    description=(
        "The caller's sessions, newest first, one page at a time: pass the next_token "
        "of a page to read the next one."
    ),
)
def list_sessions(limit: Limit = 20, next_token: NextToken = None) -> m.SessionList:
    page = sessions.list_sessions(
        wiring.chat_deps().memory, _user(), limit=limit, next_token=next_token
    )
    return m.SessionList.of(page)


@router.post(
    "/sessions/import",
    summary="Import a session",
    description=(
        "Creates a new OPEN session of the caller from an export document (GET "
        "/sessions/{session_id}/export), with every message, answer and time. The whole "
        "document is checked before anything is stored."
    ),
    responses={201: {"description": "Imported"}},
)
def import_session(body: Annotated[m.ImportDocument, Body()]) -> tuple[m.SessionEnvelope, int]:
    settings = wiring.settings()
    created = sessions.import_session(
        wiring.chat_deps().memory,
        _user(),
        body.imported(),
        limits=sessions.ImportLimits(max_input_chars=settings.max_input_chars),
    )
    return m.SessionEnvelope.of(created), 201


@router.get(
    "/sessions/<session_id>",
    summary="Get a session",
    description=("The session's name, status, times and number of turns."),
)
def get_session(session_id: SessionId) -> m.SessionEnvelope:
    found = sessions.get_session(wiring.chat_deps().memory, _user(), _session(session_id))
    return m.SessionEnvelope.of(found)


@router.post(
    "/sessions/<session_id>/end",
    summary="End a session",
    description=(
        "Ends an open session; its consolidation into long-term memory follows and no "
        "message can be added. Ending an ended session answers it unchanged."
    ),
)
def end_session(session_id: SessionId) -> m.SessionEnvelope:
    ended = sessions.end_session(wiring.chat_deps().memory, _user(), _session(session_id))
    return m.SessionEnvelope.of(ended)


@router.delete(
    "/sessions/<session_id>",
    summary="Delete a session",
    description=(
        "Hides the session from every route at once; its turns, its long-term memory "
        "and the session itself are removed in the background (GET /deletions tells "
        "when). A conversation under a client id (PUT /sessions/{id}) is deleted whole, "
        "whether named by its client id or by the server id of any of its sessions: they "
        "share one LangGraph thread, and the id then starts a new one."
    ),
    responses={204: {"description": "Deleted"}},
)
def delete_session(session_id: SessionId) -> Response[None]:
    sessions.delete_session(wiring.chat_deps().memory, _user(), session_id)
    return Response(status_code=204, body=None)


@router.post(
    "/sessions/<session_id>/messages",
    summary="Send a message",
    description=(
        "Stores the message, answers it with the model from the session's last "
        "window_turns turns (/past and /verified messages: from long-term memory or "
        "verified passages) and returns the stored turn. A retry with the same "
        "client_message_id returns that turn without a second model call, and completes "
        "a turn whose model call failed. Messages sent before the bot answered are answered "
        "together, once: the newest one's turn holds the answer, and the requests of the "
        "earlier ones return their turn (answered_by) with that answer."
    ),
    responses={
        200: {
            "description": "The message's turn, answered",
            "content": {"application/json": {"model": m.MessageEnvelope}},
        }
    },
)
def post_message(
    session_id: SessionId, body: Annotated[m.PostMessageRequest, Body()]
) -> Response[str]:
    message = messages.Message(
        _user(),
        session_id,
        body.content,
        body.client_message_id,
        body.window_turns,
        origin=None,  # the resolver adds CORS (handlers/http.OriginCORSConfig)
    )
    status, envelope = messages.reply(message)
    return Response(status_code=status, content_type="application/json", body=envelope)


@router.post(
    "/sessions/<session_id>/messages/stream",
    summary="Send a message, its answer streamed",
    description=(
        "The message answered as POST /sessions/{session_id}/messages answers it (the same "
        "turn is stored), its answer sent as server-sent events while the model writes it: "
        "`memory` (data: {sources}: what long-term memory put in the prompt), `delta` (data: "
        "{text}: the answer's text, after the output filters), `turn` (data: the envelope the "
        "buffered route answers), `error` (data: {status, error: {code, message}}: as the "
        "buffered route's errors), and a `: ping` comment every 15 s while the model is quiet; "
        "`turn` or `error` is last. A bad request is refused before the stream starts, with the "
        "buffered route's JSON error. A retry with the same client_message_id replays the "
        "stored answer; a reader that goes away stops the model, and what it was sent is "
        "stored, marked stopped."
    ),
    responses={
        200: {
            "description": "The answer's events",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    },
)
def stream_message(
    session_id: SessionId, body: Annotated[m.PostMessageRequest, Body()]
) -> Response[str]:
    message = messages.Message(
        _user(),
        session_id,
        body.content,
        body.client_message_id,
        body.window_turns,
        origin=None,  # the resolver adds CORS (handlers/http.OriginCORSConfig)
    )
    # Reached when the stream's own path did not take the request as it is: its events in one.
    return Response(
        status_code=200, content_type=stream.EVENT_STREAM, body=stream.collected_events(message)
    )


@router.get(
    "/sessions/<session_id>/messages",
    summary="List messages",
    description=(
        "The session's turns in order (asc by default, or desc), one page at a time: at most "
        "limit, fewer when they would not fit one answer (at most 6 MB)."
    ),
)
def list_messages(
    session_id: SessionId,
    limit: Limit = 50,
    next_token: NextToken = None,
    order: Annotated[Literal["asc", "desc"], Query()] = "asc",
) -> m.MessageList:
    page = sessions.list_messages(
        wiring.chat_deps().memory,
        _user(),
        _session(session_id),
        limit=limit,
        next_token=next_token,
        ascending=order == "asc",
        size_of=m.turn_bytes,
        page_bytes=m.ANSWER_ITEMS_BYTES,
    )
    return m.MessageList.of(page)


TurnNumber = Annotated[
    int,
    BeforeValidator(_digits),
    Path(
        ge=1,
        le=MAX_TURN_NUMBER,
        description="The turn's number in its session, in plain digits (not +1, 1.0 or 1e0).",
    ),
]


@router.post(
    "/sessions/<session_id>/turns",
    summary="Store a turn",
    description=(
        "Stores what the user said and, if there is one yet, the answer, as the session's next "
        "turn, without calling this service's model: for an agent that answers with its own "
        "model and keeps its memory here. A turn stored without a response waits for one "
        "(pending) until PATCH gives it. Consolidation, the rolling summary and recall treat "
        "these turns like any other. A retry with the same client_message_id returns the "
        "stored turn (200)."
    ),
    responses={201: {"description": "Stored"}, 200: {"description": "Stored earlier"}},
)
def store_turn(
    session_id: SessionId, body: Annotated[m.StoreTurnRequest, Body()]
) -> tuple[m.TurnEnvelope, int]:
    deps = wiring.chat_deps()
    policy = wiring.chat_policy()
    user = _user()
    result = sessions.on_current_session(
        deps.memory,
        user,
        session_id,
        lambda current: turns.store_turn(
            deps.memory,
            user_id=user,
            session_id=current,
            input=body.input,
            response=body.response,
            client_message_id=body.client_message_id,
            created_at=body.created_at,
            metadata=body.metadata,
            max_input_chars=wiring.settings().max_input_chars,
            clock=deps.clock,
            sleep=deps.sleep,
            policy=policy.append,
            sentiment=deps.stored_sentiment,
            expires_at=chat.expiry(deps, policy),
            messages=m.compact_json(body.messages) if body.messages is not None else None,
        ),
        clock=deps.clock,
    )
    chat_shared.log_sentiment_error(result.sentiment_error)
    if result.replayed:
        return m.TurnEnvelope.of(result.turn), 200
    metrics.add_metric(name="TurnsStored", unit=MetricUnit.Count, value=1)
    return m.TurnEnvelope.of(result.turn), 201


@router.get(
    "/sessions/<session_id>/turns/<turn>",
    summary="Get a turn",
    description="One turn of the session, with its metadata and feedback.",
)
def get_turn(session_id: SessionId, turn: TurnNumber) -> m.TurnEnvelope:
    found = turns.get_turn(wiring.chat_deps().memory, _user(), _session(session_id), turn)
    return m.TurnEnvelope.of(found)


@router.patch(
    "/sessions/<session_id>/turns/<turn>",
    summary="Complete a turn",
    description=(
        "Gives a turn stored without a response its response (once, while the session is "
        "open; the same response again is a no-op), and/or replaces its metadata."
    ),
)
def update_turn(
    session_id: SessionId, turn: TurnNumber, body: Annotated[m.UpdateTurnRequest, Body()]
) -> m.TurnEnvelope:
    updated = turns.update_turn(
        wiring.chat_deps().memory,
        user_id=_user(),
        session_id=_session(session_id),
        number=turn,
        response=body.response,
        metadata=body.metadata,
        messages=m.compact_json(body.messages) if body.messages is not None else None,
    )
    return m.TurnEnvelope.of(updated)


@router.put(
    "/sessions/<session_id>/turns/<turn>/feedback",
    summary="Rate a turn",
    description=(
        "The caller's rating of the turn's answer (up or down) with an optional comment, "
        "kept with the turn and exported with it; a new rating replaces the previous one."
    ),
)
def rate_turn(
    session_id: SessionId, turn: TurnNumber, body: Annotated[m.FeedbackRequest, Body()]
) -> m.TurnEnvelope:
    deps = wiring.chat_deps()
    rated = turns.rate_turn(
        deps.memory,
        user_id=_user(),
        session_id=_session(session_id),
        number=turn,
        rating=body.rating,
        comment=body.comment,
        clock=deps.clock,
    )
    return m.TurnEnvelope.of(rated)


@router.get(
    "/sessions/<session_id>/export",
    summary="Export a session",
    description=(
        "The session and its turns as a document that POST /sessions/import accepts. A long "
        "session comes in pages of at most 4 MB (a Lambda answer is at most 6 MB): while "
        "next_token is set, ask again with it and append the page's messages."
    ),
)
def export_session(session_id: SessionId, next_token: NextToken = None) -> m.ExportDocument:
    session, turns, token = sessions.export_session(
        wiring.chat_deps().memory,
        _user(),
        _session(session_id),
        next_token=next_token,
        size_of=m.turn_bytes,
    )
    return m.ExportDocument.of(session, turns, token)


@router.get(
    "/memories",
    summary="Search past sessions",
    description=(
        "The caller's consolidated past sessions that best match q (meaning, words and "
        "recency), most relevant first. When the snippets would not all fit one answer (at "
        "most 6 MB), the longer ones are cut to an equal share and end with an ellipsis."
    ),
)
def search_memories(
    q: Annotated[str, Query(min_length=1, max_length=1000, description="What to recall.")],
    k: Annotated[
        int, BeforeValidator(_digits), Query(ge=1, le=50, description="How many sessions.")
    ] = 5,
) -> m.MemoryList:
    deps = wiring.chat_deps()
    found = recall.search_memories(
        deps.memory,
        deps.embedder,
        deps.long_term,
        user_id=_user(),
        query=q,
        k=k,
        weights=wiring.chat_policy().recall_weights,
        now=deps.clock(),
    )
    return m.MemoryList.of(found)


@router.delete(
    "/memories",
    summary="Forget everything",
    description=(
        "Makes every session, turn and long-term memory of the caller unreachable at "
        "once and removes them in the background (GET /deletions tells when)."
    ),
    responses={204: {"description": "Forgotten"}},
)
def forget_memories() -> Response[None]:
    forget.forget_user(wiring.chat_deps().memory, _user())
    return Response(status_code=204, body=None)


@router.get(
    "/deletions",
    summary="Deletion progress",
    description=(
        "Whether the removal of what the caller deleted or forgot has finished, and how "
        "much is pending."
    ),
)
def deletion_status() -> m.DeletionStatus:
    return m.DeletionStatus.model_validate(
        forget.deletion_status(wiring.chat_deps().memory, _user())
    )


RecordId = Annotated[str, _id_path("A record id from GET /memories/records")]


@router.get(
    "/memories/records",
    summary="What is remembered about the caller",
    description=(
        "The caller's profile: facts, preferences, session summaries and what sessions left "
        "open (open_question), newest first, each with its provenance and, when a newer record "
        "replaced or settled it, what superseded it. With q, the limit records closest to q by "
        "meaning and words instead; when they do not all fit one answer (at most 6 MB), "
        "next_token gives the rest. A page holds fewer than limit records when they would "
        "not fit one answer."
    ),
)
def list_records(
    type: Annotated[  # noqa: A002
        RecordType | None,
        Query(description="fact, preference, summary or open_question."),
    ] = None,
    q: Annotated[str | None, Query(min_length=1, max_length=1000, description="A search.")] = None,
    limit: Limit = 20,
    next_token: NextToken = None,
) -> m.RecordList:
    deps = wiring.chat_deps()
    if q:
        index, embedder = _long_term(deps)
        at = m.SearchPosition.of(next_token, limit)
        found = profile.search_records(
            deps.memory,
            _user(),
            q,
            record_type=type,
            limit=at.limit,
            offset=at.offset,
            embedder=embedder,
            index=index,
        )
        return m.RecordList.found(found, at)
    records, token = profile.list_records(
        deps.memory,
        _user(),
        record_type=type,
        limit=limit,
        next_token=next_token,
        size_of=m.record_bytes,
        page_bytes=m.ANSWER_ITEMS_BYTES,
    )
    return m.RecordList.of(records, token)


@router.post(
    "/memories/records",
    summary="Remember something",
    description=(
        "The caller states a fact or a preference (the chat command /remember does the "
        "same). A newer record about the same thing (where they live, their job, a liking) "
        "supersedes the older one, which is kept as history. With record_id (the client's "
        "own key), the record with that id is created (201) or its text replaced (200). "
        "With ttl_seconds, the record expires then: never read again from that second on, "
        "its key free, the item deleted later by DynamoDB's TTL."
    ),
    responses={201: {"description": "Remembered"}, 200: {"description": "Replaced"}},
)
def create_record(body: Annotated[m.CreateRecordRequest, Body()]) -> tuple[m.RecordEnvelope, int]:
    deps = wiring.chat_deps()
    index, embedder = _long_term(deps)
    namespace = profile.stored_namespace(
        profile.scoped_namespace(body.agent_id, body.run_id, body.namespace)
    )
    now = deps.clock()
    expires_at = int(now.timestamp()) + body.ttl_seconds if body.ttl_seconds else None
    record_id = body.record_id
    if record_id is None and (body.agent_id or body.run_id):
        record_id = profile.new_record_id(now)  # an agent's memory without a key of its own
    if record_id:
        keyed, created = profile.put_keyed_record(
            _user(),
            record_id,
            body.text,
            record_type=RecordType(body.type) if body.type else None,
            memory=deps.memory,
            embedder=embedder,
            index=index,
            now=now,
            namespace=namespace,
            expires_at=expires_at,
        )
        return m.RecordEnvelope.of(keyed), 201 if created else 200
    if namespace:
        raise BadRequest("a record in a namespace needs its record_id (its key there)")
    record = profile.state_record(
        owner_of(deps.memory, _user()),
        body.text,
        record_type=RecordType(body.type) if body.type else None,
        memory=deps.memory,
        embedder=embedder,
        index=index,
        now=now,
        expires_at=expires_at,
    )
    return m.RecordEnvelope.of(record), 201


@router.post(
    "/memories/records/search",
    summary="Search records",
    description=(
        "The caller's records in the namespaces under namespace_prefix that pass filter: with "
        "query, the closest by meaning and words, each with its score; without, newest first "
        "(by record id). offset and limit page through them. Superseded records only with "
        "include_history. What a search in a namespace finds is the same whatever the other "
        "namespaces hold. Records that do not fit one answer (at most 6 MB) are left to the "
        "next request: next_offset says where they begin."
    ),
)
def search_records(body: Annotated[m.SearchRecordsRequest, Body()]) -> m.RecordPage:
    from chatmemory.services.profile import record_filter

    deps = wiring.chat_deps()
    index, embedder = _long_term(deps)
    conditions = body.filter or {}
    record_filter.check(conditions)
    ask = profile.RecordQuery(
        query=body.query,
        namespace_prefix=profile.scoped_namespace(body.agent_id, body.run_id, body.namespace_prefix)
        or (),
        record_type=RecordType(body.type) if body.type else None,
        limit=body.limit,
        offset=body.offset,
        include_history=body.include_history,
        matches=lambda r: record_filter.matches(record_filter.value_of(r.text), conditions),
    )
    found = profile.find_records(deps.memory, _user(), ask, embedder=embedder, index=index)
    return m.RecordPage.found(found, body.offset)


@router.post(
    "/memories/namespaces",
    summary="List namespaces",
    description=(
        "The namespaces the caller's records are in (the profile's among them, when it has "
        'records): those beginning with prefix and ending with suffix ("*" matches any one '
        "label), cut to max_depth labels, each once, sorted; offset and limit page through them. "
        "Namespaces that do not fit one answer (at most 6 MB) are left to the next request: "
        "next_offset says where they begin. Read from an index of the records' keys and "
        "namespaces, which DynamoDB keeps eventually consistent: a namespace whose first record "
        "was stored a moment ago (usually under a second) may not be listed yet."
    ),
)
def list_namespaces(body: Annotated[m.ListNamespacesRequest, Body()]) -> m.NamespaceList:
    found = profile.list_namespaces(
        wiring.chat_deps().memory,
        _user(),
        prefix=body.prefix,
        suffix=body.suffix,
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
    )
    return m.NamespaceList.found(found, body.offset)


@router.get(
    "/memories/records/<record_id>",
    summary="Get a record",
    description="One record of the caller's profile, with its provenance and history.",
)
def get_record(record_id: RecordId) -> m.RecordEnvelope:
    return m.RecordEnvelope.of(profile.owned_record(wiring.chat_deps().memory, _user(), record_id))


@router.patch(
    "/memories/records/<record_id>",
    summary="Correct a record",
    description="Replaces the record's text (it is embedded again); its history is kept.",
)
def correct_record(
    record_id: RecordId, body: Annotated[m.UpdateRecordRequest, Body()]
) -> m.RecordEnvelope:
    deps = wiring.chat_deps()
    index, embedder = _long_term(deps)
    record = profile.correct_record(
        _user(),
        record_id,
        body.text,
        memory=deps.memory,
        embedder=embedder,
        index=index,
        now=deps.clock(),
    )
    return m.RecordEnvelope.of(record)


@router.delete(
    "/memories/records/<record_id>",
    summary="Delete a record",
    description=(
        "The record is unreachable at once (never recalled, listed or searched again) and "
        "removed before the answer (what fails then is removed in the background): its id "
        "can be used again at once."
    ),
    responses={204: {"description": "Deleted"}},
)
def delete_record(record_id: RecordId) -> Response[None]:
    deps = wiring.chat_deps()
    # Purged at once (entries, then item), so the id is free when this answers.
    profile.delete_record_now(deps.memory, _user(), record_id, index=deps.long_term)
    return Response(status_code=204, body=None)


# --- LangGraph checkpoints (chatmemory_client.langgraph.ChatMemorySaver) ------------------------

CheckpointId = Annotated[str, _id_path("A checkpoint id (LangGraph's)")]
CheckpointNsQuery = Annotated[
    str | None,
    Query(
        max_length=1024,
        description="The checkpoint namespace (empty: the graph's own; absent from a listing: "
        "every namespace).",
    ),
]


@router.put(
    "/sessions/<session_id>/checkpoints/<checkpoint_id>",
    summary="Store a checkpoint",
    description=(
        "Stores a LangGraph checkpoint of the session (the thread) in its namespace, with the "
        "values of the channels that changed; unchanged channels keep the values stored with "
        "earlier checkpoints. Storing the same id again replaces it. A channel's value at a "
        "version, once stored, never changes: the same bytes again are a retry, other bytes "
        "answer 409 conflict and nothing of the checkpoint is stored (give a changed value a "
        "new version, as LangGraph's savers do). A checkpoint's channel "
        f"values may hold {schema.MAX_CHECKPOINT_BYTES} bytes in all, and the checkpoint "
        "without them, with its metadata (serde bytes and JSON) and its channel_versions, "
        f"{schema.MAX_CHECKPOINT_ITEM_BYTES} bytes (413 above either); metadata_json nests "
        f"at most {schema.MAX_CHECKPOINT_JSON_DEPTH} levels deep (400 deeper)."
    ),
)
def put_checkpoint(
    session_id: SessionId,
    checkpoint_id: CheckpointId,
    body: Annotated[m.PutCheckpointRequest, Body()],
) -> m.CheckpointRef:
    stored = checkpoints.put_checkpoint(
        wiring.chat_deps().memory,
        wiring.checkpoint_store(),
        _user(),
        _session(session_id),
        checkpoint_ns=body.checkpoint_ns,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=body.parent_checkpoint_id,
        checkpoint=body.checkpoint.blob(),
        metadata=body.metadata.blob(),
        metadata_json=body.metadata_json,
        channel_versions=body.channel_versions,
        blobs=[
            ChannelBlob(b.channel, b.version, m.SerializedValue(type=b.type, data=b.data).blob())
            for b in body.blobs
        ],
    )
    return m.CheckpointRef(
        checkpoint_ns=stored.checkpoint_ns, checkpoint_id=stored.checkpoint_id, size=stored.size
    )


@router.get(
    "/sessions/<session_id>/checkpoints/<checkpoint_id>",
    summary="Get a checkpoint",
    description=(
        "One checkpoint of the session in a namespace, with the values of its channels and its "
        "pending writes. 404 checkpoint_not_found when there is none of that id."
    ),
)
def get_checkpoint(
    session_id: SessionId, checkpoint_id: CheckpointId, checkpoint_ns: CheckpointNsQuery = None
) -> m.CheckpointEnvelope:
    found = checkpoints.get_checkpoint(
        wiring.chat_deps().memory,
        wiring.checkpoint_store(),
        _user(),
        _session(session_id),
        checkpoint_ns=checkpoint_ns or "",
        checkpoint_id=checkpoint_id,
    )
    return m.CheckpointEnvelope(checkpoint=m.CheckpointOut.of(found))


@router.get(
    "/sessions/<session_id>/checkpoints",
    summary="List checkpoints",
    description=(
        "The session's checkpoints, newest first, each with its channel values and pending "
        "writes: of one namespace (checkpoint_ns) or all, below `before` (a checkpoint id), "
        "whose metadata has every key of `filter` (a JSON object) with its value. Ordered by "
        "id, then namespace. A page holds at most `limit` checkpoints and what fits one answer "
        "(at most 6 MB; at least one checkpoint): while next_token is set, more may follow "
        "(ask again with it). limit=1 is the newest checkpoint. A `before` that is not a "
        f"checkpoint id, or a filter nested deeper than {schema.MAX_CHECKPOINT_JSON_DEPTH} "
        "levels, is a 400."
    ),
)
def list_checkpoints(
    session_id: SessionId,
    checkpoint_ns: CheckpointNsQuery = None,
    before: Annotated[
        str | None,
        Query(
            max_length=ID_MAX_LENGTH,
            description="Only checkpoints whose id is below this (a checkpoint id).",
        ),
    ] = None,
    limit: Limit = 10,
    filter: Annotated[  # noqa: A002 - LangGraph's name
        str | None,
        Query(
            max_length=2048,
            description="Metadata to match, as a JSON object nested at most "
            f"{schema.MAX_CHECKPOINT_JSON_DEPTH} levels deep.",
        ),
    ] = None,
    next_token: NextToken = None,
) -> m.CheckpointList:
    found, next_position = checkpoints.list_checkpoints(
        wiring.chat_deps().memory,
        wiring.checkpoint_store(),
        _user(),
        _session(session_id),
        checkpoint_ns=checkpoint_ns,
        before=before,
        after=m.list_position(next_token),
        limit=limit,
        filter=_json_object(filter, "filter"),
        page_bytes=m.ANSWER_ITEMS_BYTES,
        size_of=m.checkpoint_bytes,
    )
    return m.CheckpointList.page(found, next_position)


@router.put(
    "/sessions/<session_id>/checkpoints/<checkpoint_id>/writes",
    summary="Store pending writes",
    description=(
        "Stores a task's writes for a checkpoint (LangGraph's put_writes). A write is "
        "identified by (task_id, idx): stored again, it is kept as first stored, but a special "
        "channel's (negative idx) is replaced. A checkpoint's writes may hold "
        f"{schema.MAX_CHECKPOINT_WRITES_BYTES} bytes in all (413 above)."
    ),
    responses={204: {"description": "Stored"}},
)
def put_writes(
    session_id: SessionId, checkpoint_id: CheckpointId, body: Annotated[m.PutWritesRequest, Body()]
) -> Response[None]:
    checkpoints.put_writes(
        wiring.chat_deps().memory,
        wiring.checkpoint_store(),
        _user(),
        _session(session_id),
        checkpoint_ns=body.checkpoint_ns,
        checkpoint_id=checkpoint_id,
        writes=[
            PendingWrite(
                task_id=body.task_id,
                idx=w.idx,
                channel=w.channel,
                value=m.SerializedValue(type=w.type, data=w.data).blob(),
                task_path=body.task_path,
            )
            for w in body.writes
        ],
    )
    return Response(status_code=204, body=None)


def _json_object(text: str | None, name: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        # Nesting past the parser's recursion limit, NaN and numbers beyond a float: 400.
        value = strict_json(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise BadRequest(f"{name} must be a JSON object")
    return value


# --- hand-off to a person ----------------------------------------------------------------------


@router.post(
    "/sessions/<session_id>/handoff",
    summary="Ask for a person",
    description=(
        "Hands the caller's open session to a human agent (the chat command /human does the "
        "same): until an agent hands it back, messages are stored for the agent and not "
        "answered by the model, and the agent's replies appear among the session's messages "
        "(origin agent). Publishes a hand-off event. Asking again while it is handed off "
        "answers the session unchanged."
    ),
)
def request_handoff(
    session_id: SessionId, body: Annotated[m.HandoffRequest | None, Body()] = None
) -> m.SessionEnvelope:
    deps = wiring.chat_deps()
    outcome = handoff.request_handoff(
        deps.memory,
        deps.events,
        user_id=_user(),
        session_id=_session(session_id),
        note=body.note if body else None,
        clock=deps.clock,
    )
    _handed(outcome, "Handoffs")
    return m.SessionEnvelope.of(outcome.session)


HandoffStateQuery = Annotated[
    Literal[HandoffState.WAITING, HandoffState.ACTIVE],
    Query(description="WAITING (no agent answered yet) or ACTIVE."),
]


@router.get(
    "/agent/sessions",
    summary="Sessions waiting for a person",
    description=(
        "Agents only (403 for anyone else): the sessions handed to a person in the given "
        "state, longest waiting first, one page at a time."
    ),
)
def list_handoffs(
    state: HandoffStateQuery = HandoffState.WAITING,
    limit: Limit = 20,
    next_token: NextToken = None,
) -> m.AgentSessionList:
    _agent()
    page = handoff.list_queue(
        wiring.chat_deps().memory, state=state, limit=limit, next_token=next_token
    )
    return m.AgentSessionList.of(page)


@router.get(
    "/agent/sessions/<session_id>",
    summary="Read a handed-off session",
    description=(
        "Agents only: a session handed to a person and its turns, newest first by default "
        "(next_token pages back), the user's messages stored for the agent among them. A "
        "session not handed off answers 404."
    ),
)
def read_handoff(
    session_id: AgentSessionId,
    limit: Limit = 50,
    next_token: NextToken = None,
    order: Annotated[Literal["asc", "desc"], Query()] = "desc",
) -> m.AgentSessionView:
    _agent()
    session, page = handoff.read_session_for_agent(
        wiring.chat_deps().memory,
        session_id,
        limit=limit,
        next_token=next_token,
        ascending=order == "asc",
        size_of=m.turn_bytes,
        page_bytes=m.ANSWER_ITEMS_BYTES,
    )
    return m.AgentSessionView.of(session, page)


@router.post(
    "/agent/sessions/<session_id>/messages",
    summary="Reply as an agent",
    description=(
        "Agents only: stores the agent's reply as the session's next turn (origin agent); the "
        "session becomes ACTIVE with this agent. 409 when it is not handed off (handed back, "
        "or never). A retry with the same client_message_id returns the stored turn."
    ),
)
def agent_reply(
    session_id: AgentSessionId, body: Annotated[m.AgentReplyRequest, Body()]
) -> m.TurnEnvelope:
    deps = wiring.chat_deps()
    policy = wiring.chat_policy()
    reply = handoff.agent_reply(
        deps.memory,
        agent_id=_agent(),
        session_id=session_id,
        content=body.content,
        client_message_id=body.client_message_id,
        clock=deps.clock,
        sleep=deps.sleep,
        policy=policy.append,
        expires_at=chat.expiry(deps, policy),
    )
    if not reply.replayed:
        metrics.add_metric(name="AgentReplies", unit=MetricUnit.Count, value=1)
    return m.TurnEnvelope.of(reply.turn)


@router.post(
    "/agent/sessions/<session_id>/handback",
    summary="Hand a session back",
    description=(
        "Agents only: the bot answers the session's next message again, with the whole "
        "conversation (the agent's replies too) in its prompt. Publishes a hand-back event. "
        "409 when the session is not handed off."
    ),
)
def hand_back(session_id: AgentSessionId) -> m.AgentSessionEnvelope:
    deps = wiring.chat_deps()
    outcome = handoff.hand_back(
        deps.memory, deps.events, agent_id=_agent(), session_id=session_id, clock=deps.clock
    )
    _handed(outcome, "Handbacks")
    return m.AgentSessionEnvelope.of(outcome.session)


def _agent() -> str:
    """The caller, if an agent (the Cognito group, or the IAM role of AGENT_GROUP and
    AGENT_ROLE_ARN); anyone else is refused with 403."""
    event = router.current_event.raw_event
    cfg = wiring.settings()
    if not is_agent(event, group=cfg.agent_group, role_arn=cfg.agent_role_arn):
        raise Forbidden("only agents may use the /agent routes")
    return caller_id(event)


def _handed(outcome: handoff.Outcome, metric: str) -> None:
    if outcome.changed:
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
    log_event_error(outcome.event_error)


def _long_term(deps: chat.ChatDeps) -> tuple[LongTermIndex, Embedder]:
    if deps.long_term is None or deps.embedder is None:
        raise LongTermMemoryUnavailable("no long-term memory is configured")
    return deps.long_term, deps.embedder


def _session(session_id: str) -> str:
    """The server's id of the session the caller's id names (sessions.resolve)."""
    return sessions.resolve(wiring.chat_deps().memory, _user(), session_id)


def _user() -> str:
    return caller_id(router.current_event.raw_event)


@router.exception_handler(ChatMemoryError)
def _known_error(error: ChatMemoryError) -> Response:
    return error_response(*known_error(error))


@router.exception_handler(RequestValidationError)
def _invalid_request(error: RequestValidationError) -> Response:
    return error_response(400, "bad_request", validation_message(error.errors()))


@router.exception_handler(RequestUnsupportedContentType)
def _unsupported_media_type(_: RequestUnsupportedContentType) -> Response:
    # Powertools' own check, when a route reads a body: for a request without one whose
    # Content-Type is not JSON (one with a body was refused by json_bodies_only already).
    return _known_error(UnsupportedMediaType())


@router.exception_handler(NotFoundError)
def _no_route(_: NotFoundError) -> Response:
    return error_response(404, "not_found", "no such route")


@router.exception_handler(Exception)
def _unexpected(error: Exception) -> Response:
    return error_response(*unexpected_error())


@lru_cache(maxsize=1)
def api(cors_origins: tuple[str, ...]) -> APIGatewayRestResolver:
    """The resolver of the routes above, answering browsers of `cors_origins` (CORSConfig).

    Built on the first request from the settings of that moment, so in Lambda once per cold
    start (and again in a test that changes the settings). Powertools' data validation would
    run before any middleware; it is added after json_bodies_only instead, so a form or
    multipart body is refused with 415 before Powertools parses it."""
    resolver = APIGatewayRestResolver(
        cors=cors_config(cors_origins), json_body_deserializer=strict_json
    )
    resolver.use(
        [
            json_bodies_only,
            OpenAPIRequestValidationMiddleware(),
            OpenAPIResponseValidationMiddleware(),
        ]
    )
    resolver.include_router(router)
    return resolver


_ERRORS = {
    400: "Malformed JSON, a missing or invalid field",
    401: "No authenticated caller",
    404: "No such session for this caller",
    409: "The session is ended, or busy with concurrent messages",
    413: "Content over the configured limit",
    415: "A body that is not sent as application/json",
    500: "Unexpected error (no details are leaked)",
    502: "The model answered with an error",
    503: (
        "A model or a store is unavailable or throttled: retry later. A message whose model "
        "call failed is kept: retry it with the same client_message_id"
    ),
}


SECURITY_SCHEMES: dict[str, Any] = {
    "CognitoIdToken": {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": (
            "An ID token of the stack's Cognito user pool (output UserPoolId), sent as it is "
            "(no 'Bearer' prefix); the caller is its `sub` claim. Deployments with auth=cognito."
        ),
        "x-amazon-apigateway-authtype": "cognito_user_pools",
    },
    "SigV4": {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": (
            "An AWS Signature Version 4 of the request (service execute-api) by an IAM "
            "principal allowed to invoke the API; the caller is its identity. Deployments "
            "with auth=iam. A session of a role the deployment allows (endUserRoleArns) may "
            "name the end user it calls for in the X-ChatMemory-End-User header (1-128 "
            "letters, digits and _ . : -): each end user is then a caller of their own; from "
            "anyone else the header is refused with 403."
        ),
        "x-amazon-apigateway-authtype": "awsSigv4",
    },
}


_AGENTS_ONLY = "The caller is not an agent (the Cognito group AGENT_GROUP, or AGENT_ROLE_ARN)"


# Powertools writes the bounds of a parameter that also has a pydantic validator (the digits
# check) under pydantic's names; JSON Schema's are these.
_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _json_schema_bounds(schema: dict[str, Any]) -> None:
    for name, standard in _BOUNDS.items():
        if name in schema:
            schema[standard] = schema.pop(name)


def openapi_document() -> str:
    """The API's OpenAPI 3 document, generated from the route signatures and models above.

    Powertools documents request-validation failures as 422; this API answers them with 400
    and one error envelope, so the document says that instead."""
    document = json.loads(
        api(()).get_openapi_json_schema(
            title="Chat memory API",
            version="1.0.0",
            summary="Sessions with short-term memory, recall of past sessions, verified answers.",
            description=(
                "Every route acts for the authenticated caller (the Cognito `sub` claim). "
                'Errors are JSON: {"error": {"code", "message"}}.'
            ),
        )
    )
    # Every route needs the caller's identity, which API Gateway checks before the function
    # runs: a Cognito ID token (auth=cognito, the default) or a SigV4 signature (auth=iam).
    # Named as API Gateway's own OpenAPI export names them.
    document["components"]["securitySchemes"] = SECURITY_SCHEMES
    document["security"] = [{name: []} for name in SECURITY_SCHEMES]
    schemas = document["components"]["schemas"]
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(name, None)
    envelope = m.ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(envelope.pop("$defs", {}))
    schemas["ErrorEnvelope"] = envelope
    error_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                _json_schema_bounds(parameter["schema"])
            responses = operation["responses"]
            if path.startswith("/agent/"):
                responses["403"] = {"description": _AGENTS_ONLY, "content": error_ref}
            responses.pop("422", None)
            if "204" in responses:
                responses["204"].pop("content", None)
            for status, text in _ERRORS.items():
                responses.setdefault(str(status), {"description": text, "content": error_ref})
    return json.dumps(document)


def ahead() -> None:
    """With SnapStart, what a first request would otherwise build, built before the snapshot:
    every model's validators and each route's parameters (Powertools makes them per route on
    its first request; generating the OpenAPI document makes them for every route)."""
    m.build_deferred()
    api(cors_origins()).get_openapi_schema()
