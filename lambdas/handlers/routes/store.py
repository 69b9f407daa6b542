"""The routes of the records' store as agent frameworks use it (LangGraph's BaseStore): records
searched across namespaces, and the namespaces listed."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from chatmemory import api_models as m
from chatmemory import wiring
from chatmemory.schema import RecordType
from chatmemory.services.profile import profile, records
from handlers.routes.common import (
    long_term,
    route,
    user,
)

router = APIGatewayRouter()


@route(router.post, "/memories/records/search")
def search_records(body: Annotated[m.SearchRecordsRequest, Body()]) -> m.RecordPage:
    """Search records.

    The caller's records in the namespaces under namespace_prefix that pass filter: with query, the
    closest by meaning and words, each with its score; without, newest first (by record id). offset
    and limit page through them. Superseded records only with include_history. What a search in a
    namespace finds is the same whatever the other namespaces hold. Records that do not fit one
    answer (at most 6 MB) are left to the next request: next_offset says where they begin.
    """
    deps = wiring.chat_deps()
    index, embedder = long_term(deps)
    search = records.RecordSearch(
        query=body.query,
        namespace_prefix=body.namespace_prefix,
        agent_id=body.agent_id,
        run_id=body.run_id,
        record_type=RecordType(body.type) if body.type else None,
        conditions=body.filter,
        limit=body.limit,
        offset=body.offset,
        include_history=body.include_history,
    )
    found = records.search_records(
        user(router), search, memory=deps.memory, embedder=embedder, index=index
    )
    return m.RecordPage.found(found, body.offset)


@route(router.post, "/memories/namespaces")
def list_namespaces(body: Annotated[m.ListNamespacesRequest, Body()]) -> m.NamespaceList:
    """List namespaces.

    The namespaces the caller's records are in (the profile's among them, when it has records):
    those beginning with prefix and ending with suffix ("*" matches any one label), cut to max_depth
    labels, each once, sorted; offset and limit page through them. Namespaces that do not fit one
    answer (at most 6 MB) are left to the next request: next_offset says where they begin. Read from
    an index of the records' keys and namespaces, which DynamoDB keeps eventually consistent: a
    namespace whose first record was stored a moment ago (usually under a second) may not be listed
    yet.
    """
    found = profile.list_namespaces(
        wiring.chat_deps().memory,
        user(router),
        prefix=body.prefix,
        suffix=body.suffix,
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
    )
    return m.NamespaceList.found(found, body.offset)
