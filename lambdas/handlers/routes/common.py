"""What the routes share: the parameters that name things (the identifier rule, page sizes and
tokens) and what a route reads from its request (the caller, the session the caller's id names,
an agent)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Concatenate, ParamSpec, TypeVar

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from pydantic import BeforeValidator

from chatmemory import api_models as m
from chatmemory import wiring
from chatmemory.errors import LongTermMemoryUnavailable
from chatmemory.ports import Embedder, LongTermIndex, ShortTermMemory
from chatmemory.services.conversation import chat, sessions
from chatmemory.services.pages import TurnPage
from handlers import messages
from handlers.identity import Forbidden, caller_id, is_agent

if TYPE_CHECKING:
    from chatmemory.services.profile.edits import Editing

P = ParamSpec("P")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def route(
    method: Callable[..., Callable[[F], F]],
    rule: str,
    values: Mapping[str, object] | None = None,
    **options: Any,
) -> Callable[[F], F]:
    """The route of METHOD (a router's get, post, put, patch or delete) at RULE, documented by its
    function's docstring: the first paragraph is the operation's OpenAPI summary (without its
    full stop), the rest its description, its {NAME}s VALUES' (a limit of the schema), so that
    what the code's reader sees is what the API's reader sees. OPTIONS are METHOD's."""

    def register(func: F) -> F:
        doc = func.__doc__ or ""
        summary, _, description = (doc.format_map(values) if values else doc).partition("\n\n")
        documented = {
            "summary": " ".join(summary.split()).removesuffix(".") or None,
            "description": " ".join(description.split()) or None,
        }
        return method(rule, **documented, **options)(func)

    return register


def digits(value: object) -> object:
    """A query number as the client wrote it must be a plain integer: "1.0" or "1e1" is a
    client bug, not 1 or 10."""
    text = str(value)
    if not (text.isascii() and text.isdigit()):
        raise ValueError("must be a whole number written in digits")
    return value


def id_path(description: str) -> Any:
    """A path parameter that is an identifier: the one rule (schema.ID_PATTERN), checked before
    the route runs, so no id can name a dot segment or a key of another caller's."""
    return Path(**m.id_constraints(description))


SessionId = Annotated[
    str,
    id_path(
        "A session id from POST /sessions, or the caller's own id of a session from PUT "
        "/sessions/{session_id}, which names the conversation's newest session"
    ),
]
ClientSessionId = Annotated[
    str,
    id_path(
        'The caller\'s own id of the session (a thread id, "user42-conv"): it is the '
        "caller's alone, two callers' same id never meet"
    ),
]
Limit = Annotated[int, BeforeValidator(digits), Query(ge=1, le=100, description="Page size.")]
# The agent routes name a session by the server's id (a client id is its user's alone).
AgentSessionId = Annotated[str, id_path("A session id (GET /agent/handoffs lists them)")]
NextToken = Annotated[str | None, Query(max_length=2048, description="From the previous page.")]


def user(router: Router) -> str:
    """The caller of the request ROUTER is answering."""
    return caller_id(router.current_event.raw_event)


def session(router: Router, session_id: str) -> str:
    """The server's id of the session the caller's id names (sessions.resolve)."""
    return sessions.resolve(wiring.chat_deps().memory, user(router), session_id)


def on_session(
    router: Router,
    session_id: str,
    call: Callable[Concatenate[ShortTermMemory, str, str, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """CALL (a service function) with the caller's memory, the caller and the server's id of the
    session the caller's id names, then ARGS: what a route on one session does first."""
    return call(
        wiring.chat_deps().memory, user(router), session(router, session_id), *args, **kwargs
    )


def agent(router: Router) -> str:
    """The caller, if an agent (the Cognito group, or the IAM role of AGENT_GROUP and
    AGENT_ROLE_ARN); anyone else is refused with 403."""
    event = router.current_event.raw_event
    cfg = wiring.settings()
    if not is_agent(event, group=cfg.agent_group, role_arn=cfg.agent_role_arn):
        raise Forbidden("only agents may use the /agent routes")
    return caller_id(event)


def message(router: Router, session_id: str, body: m.PostMessageRequest) -> messages.Message:
    """A chat message as handlers/messages.py answers it, read by a route."""
    return messages.Message(
        user(router),
        session_id,
        body.content,
        body.client_message_id,
        body.window_turns,
        origin=None,  # the resolver adds CORS (handlers/http.OriginCORSConfig)
    )


def long_term(deps: chat.ChatDeps) -> tuple[LongTermIndex, Embedder]:
    """The long-term index and embedder, or 503 when the deployment has none."""
    if deps.long_term is None or deps.embedder is None:
        raise LongTermMemoryUnavailable("no long-term memory is configured")
    return deps.long_term, deps.embedder


def editing(deps: chat.ChatDeps) -> Editing:
    """An edit of the caller's profile, now, or 503 when the deployment has no long-term
    memory."""
    from chatmemory.services.profile.edits import Editing  # not at the chat's cold start

    index, embedder = long_term(deps)
    return Editing(deps.memory, embedder, index, deps.clock())


def answer_page(limit: int, next_token: str | None, order: str) -> TurnPage:
    """A page of a session's turns in `order` ("asc" or "desc") that fits one answer."""
    return TurnPage(limit, next_token, order == "asc", m.answer_room(m.turn_bytes))
