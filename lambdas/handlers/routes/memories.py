"""The routes of what is remembered of the caller: past sessions searched, everything forgotten,
the deletions' progress, and the records of the caller's profile."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from pydantic import BeforeValidator

from chatmemory import api_models as m
from chatmemory import wiring
from chatmemory.schema import RecordType
from chatmemory.services.background import forget
from chatmemory.services.longterm import recall
from chatmemory.services.profile import profile, records
from handlers.routes.common import (
    Limit,
    NextToken,
    digits,
    editing,
    id_path,
    long_term,
    route,
    user,
)

router = APIGatewayRouter()


@route(router.get, "/memories")
def search_memories(
    q: Annotated[str, Query(min_length=1, max_length=1000, description="What to recall.")],
    k: Annotated[
        int, BeforeValidator(digits), Query(ge=1, le=50, description="How many sessions.")
    ] = 5,
) -> m.MemoryList:
    """Search past sessions.

    The caller's consolidated past sessions that best match q (meaning, words and recency), most
    relevant first. When the snippets would not all fit one answer (at most 6 MB), the longer ones
    are cut to an equal share and end with an ellipsis.
    """
    deps = wiring.chat_deps()
    found = recall.search_memories(
        deps.memory,
        deps.embedder,
        deps.long_term,
        user_id=user(router),
        query=q,
        k=k,
        weights=wiring.chat_policy().recall_weights,
        now=deps.clock(),
    )
    return m.MemoryList.of(found)


@route(router.delete, "/memories", responses={204: {"description": "Forgotten"}})
def forget_memories() -> Response[None]:
    """Forget everything.

    Makes every session, turn and long-term memory of the caller unreachable at once and removes
    them in the background (GET /deletions tells when).
    """
    forget.forget_user(wiring.chat_deps().memory, user(router))
    return Response(status_code=204, body=None)


@route(router.get, "/deletions")
def deletion_status() -> m.DeletionStatus:
    """Deletion progress.

    Whether the removal of what the caller deleted or forgot has finished, and how much is pending.
    """
    return m.DeletionStatus.model_validate(
        forget.deletion_status(wiring.chat_deps().memory, user(router))
    )


RecordId = Annotated[str, id_path("A record id from GET /memories/records")]


@route(router.get, "/memories/records")
def list_records(
    type: Annotated[  # noqa: A002
        RecordType | None,
        Query(description="fact, preference, summary or open_question."),
    ] = None,
    q: Annotated[str | None, Query(min_length=1, max_length=1000, description="A search.")] = None,
    limit: Limit = 20,
    next_token: NextToken = None,
) -> m.RecordList:
    """What is remembered about the caller.

    The caller's profile: facts, preferences, session summaries and what sessions left open
    (open_question), newest first, each with its provenance and, when a newer record replaced or
    settled it, what superseded it. With q, the limit records closest to q by meaning and words
    instead; when they do not all fit one answer (at most 6 MB), next_token gives the rest. A page
    holds fewer than limit records when they would not fit one answer.
    """
    deps = wiring.chat_deps()
    if q:
        index, embedder = long_term(deps)
        at = m.SearchPosition.of(next_token, limit)
        found = profile.search_records(
            deps.memory,
            user(router),
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
        user(router),
        record_type=type,
        limit=limit,
        next_token=next_token,
        size_of=m.record_bytes,
        page_bytes=m.ANSWER_ITEMS_BYTES,
    )
    return m.RecordList.of(records, token)


@route(
    router.post,
    "/memories/records",
    responses={201: {"description": "Remembered"}, 200: {"description": "Replaced"}},
)
def create_record(body: Annotated[m.CreateRecordRequest, Body()]) -> tuple[m.RecordEnvelope, int]:
    """Remember something.

    The caller states a fact or a preference (the chat command /remember does the same). A newer
    record about the same thing (where they live, their job, a liking) supersedes the older one,
    which is kept as history. With record_id (the client's own key), the record with that id is
    created (201) or its text replaced (200). With ttl_seconds, the record expires then: never read
    again from that second on, its key free, the item deleted later by DynamoDB's TTL. With
    index false, a keyed record of a client's namespace is kept but not embedded: search by
    meaning never finds it (LangGraph's put with index=False).
    """
    new = records.NewRecord(
        body.text,
        record_type=RecordType(body.type) if body.type else None,
        record_id=body.record_id,
        agent_id=body.agent_id,
        run_id=body.run_id,
        namespace=body.namespace,
        ttl_seconds=body.ttl_seconds,
        indexed=body.index,
    )
    record, created = records.create_record(user(router), new, editing(wiring.chat_deps()))
    return m.RecordEnvelope.of(record), 201 if created else 200


@route(router.get, "/memories/records/<record_id>")
def get_record(record_id: RecordId) -> m.RecordEnvelope:
    """Get a record.

    One record of the caller's profile, with its provenance and history.
    """
    return m.RecordEnvelope.of(
        profile.owned_record(wiring.chat_deps().memory, user(router), record_id)
    )


@route(router.patch, "/memories/records/<record_id>")
def correct_record(
    record_id: RecordId, body: Annotated[m.UpdateRecordRequest, Body()]
) -> m.RecordEnvelope:
    """Correct a record.

    Replaces the record's text (it is embedded again); its history is kept.
    """
    edit = editing(wiring.chat_deps())
    record = profile.correct_record(user(router), record_id, body.text, edit)
    return m.RecordEnvelope.of(record)


@route(router.delete, "/memories/records/<record_id>", responses={204: {"description": "Deleted"}})
def delete_record(record_id: RecordId) -> Response[None]:
    """Delete a record.

    The record is unreachable at once (never recalled, listed or searched again) and removed before
    the answer (what fails then is removed in the background): its id can be used again at once.
    """
    deps = wiring.chat_deps()
    # Purged at once (entries, then item), so the id is free when this answers.
    profile.delete_record_now(deps.memory, user(router), record_id, index=deps.long_term)
    return Response(status_code=204, body=None)
