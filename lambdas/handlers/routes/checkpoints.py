"""The routes of LangGraph checkpoints (chatmemory_client.langgraph.ChatMemorySaver)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Concatenate, ParamSpec, TypeVar

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from chatmemory import api_models as m
from chatmemory import schema, wiring
from chatmemory.domain import ChannelBlob, PendingWrite
from chatmemory.errors import BadRequest
from chatmemory.schema import ID_MAX_LENGTH
from chatmemory.services.conversation import checkpoints
from handlers.json_body import strict_json
from handlers.routes.common import (
    Limit,
    NextToken,
    SessionId,
    id_path,
    route,
    session,
    user,
)

router = APIGatewayRouter()
P = ParamSpec("P")
T = TypeVar("T")


def _on_thread(
    session_id: str,
    call: Callable[Concatenate[checkpoints.Thread, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """CALL (a checkpoint service) on the caller's thread: the caller's memory, the checkpoint
    store, the caller and the server's id of the session the caller's id names; then ARGS."""
    memory, store = wiring.chat_deps().memory, wiring.checkpoint_store()
    thread = checkpoints.Thread(memory, store, user(router), session(router, session_id))
    return call(thread, *args, **kwargs)


# The limits the routes' docstrings name ({NAME}: schema.NAME).
_LIMITS = {
    name: getattr(schema, name)
    for name in (
        "MAX_CHECKPOINT_BYTES",
        "MAX_CHECKPOINT_ITEM_BYTES",
        "MAX_CHECKPOINT_JSON_DEPTH",
        "MAX_CHECKPOINT_WRITES_BYTES",
    )
}
CheckpointId = Annotated[str, id_path("A checkpoint id (LangGraph's)")]
CheckpointNsQuery = Annotated[
    str | None,
    Query(
        max_length=1024,
        description="The checkpoint namespace (empty: the graph's own; absent from a listing: "
        "every namespace).",
    ),
]


@route(router.put, "/sessions/<session_id>/checkpoints/<checkpoint_id>", values=_LIMITS)
def put_checkpoint(
    session_id: SessionId,
    checkpoint_id: CheckpointId,
    body: Annotated[m.PutCheckpointRequest, Body()],
) -> m.CheckpointRef:
    """Store a checkpoint.

    Stores a LangGraph checkpoint of the session (the thread) in its namespace, with the values of
    the channels that changed; unchanged channels keep the values stored with earlier checkpoints.
    Storing the same id again replaces it. A channel's value at a version, once stored, never
    changes: the same bytes again are a retry, other bytes answer 409 conflict and nothing of the
    checkpoint is stored (give a changed value a new version, as LangGraph's savers do). A
    checkpoint's channel values may hold {MAX_CHECKPOINT_BYTES} bytes in all, and the checkpoint
    without them, with its metadata (serde bytes and JSON) and its channel_versions,
    {MAX_CHECKPOINT_ITEM_BYTES} bytes (413 above either); metadata_json nests at most
    {MAX_CHECKPOINT_JSON_DEPTH} levels deep (400 deeper).
    """
    stored = _on_thread(
        session_id,
        checkpoints.put_checkpoint,
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


@route(router.get, "/sessions/<session_id>/checkpoints/<checkpoint_id>")
def get_checkpoint(
    session_id: SessionId, checkpoint_id: CheckpointId, checkpoint_ns: CheckpointNsQuery = None
) -> m.CheckpointEnvelope:
    """Get a checkpoint.

    One checkpoint of the session in a namespace, with the values of its channels and its pending
    writes. 404 checkpoint_not_found when there is none of that id.
    """
    found = _on_thread(
        session_id,
        checkpoints.get_checkpoint,
        checkpoint_ns=checkpoint_ns or "",
        checkpoint_id=checkpoint_id,
    )
    return m.CheckpointEnvelope(checkpoint=m.CheckpointOut.of(found))


@route(router.get, "/sessions/<session_id>/checkpoints", values=_LIMITS)
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
    """List checkpoints.

    The session's checkpoints, newest first, each with its channel values and pending writes: of one
    namespace (checkpoint_ns) or all, below `before` (a checkpoint id), whose metadata has every key
    of `filter` (a JSON object) with its value. Ordered by id, then namespace. A page holds at most
    `limit` checkpoints and what fits one answer (at most 6 MB; at least one checkpoint): while
    next_token is set, more may follow (ask again with it). limit=1 is the newest checkpoint. A
    `before` that is not a checkpoint id, or a filter nested deeper than {MAX_CHECKPOINT_JSON_DEPTH}
    levels, is a 400.
    """
    found, next_position = _on_thread(
        session_id,
        checkpoints.list_checkpoints,
        checkpoint_ns=checkpoint_ns,
        before=before,
        after=m.list_position(next_token),
        limit=limit,
        filter=_json_object(filter, "filter"),
        room=m.answer_room(m.checkpoint_bytes),
    )
    return m.CheckpointList.page(found, next_position)


@route(
    router.put,
    "/sessions/<session_id>/checkpoints/<checkpoint_id>/writes",
    values=_LIMITS,
    responses={204: {"description": "Stored"}},
)
def put_writes(
    session_id: SessionId, checkpoint_id: CheckpointId, body: Annotated[m.PutWritesRequest, Body()]
) -> Response[None]:
    """Store pending writes.

    Stores a task's writes for a checkpoint (LangGraph's put_writes). A write is identified by
    (task_id, idx): stored again, it is kept as first stored, but a special channel's (negative idx)
    is replaced. A checkpoint's writes may hold {MAX_CHECKPOINT_WRITES_BYTES} bytes in all (413
    above).
    """
    _on_thread(
        session_id,
        checkpoints.put_writes,
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
