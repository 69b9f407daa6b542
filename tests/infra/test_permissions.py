"""Least privilege, role by role: each function may do exactly what its code calls.

The expected lists come from the runtime: which DynamoDB API each method of
chatmemory/adapters/dynamodb.py calls, which of them each handler's services use, and the
OpenSearch requests of chatmemory/adapters/opensearch.py (search: POST /<index>/_search,
hybrid search: POST /<index>/_msearch, bulk: POST /<index>/_bulk, delete by query: POST
/<index>/_delete_by_query; the index setup: HEAD and PUT /<index>, GET and PUT /<index>/_mapping,
PUT on the runtime role's two security API paths). A grant added anywhere fails here until it is
listed, with the code that needs it.

The records table (issue 13), by the DynamoDB call of each method of
chatmemory/adapters/dynamodb/records.py: get_record GetItem; list_records and records_of_owner
Query; put_record and save_record PutItem (conditional); mark_record_deleting UpdateItem;
remove_records BatchWriteItem; live BatchGetItem (with the sessions table); remove_deleted_record
DeleteItem (conditional on the tombstone: the API's DELETE purges in the request, so the id is
free at once, and the records stream's purge does the same).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chatmemory import schema
from stacks.config import Config
from stacks.models import DEFAULT_TEXT_MODEL
from tests.infra.synth import VARIANTS, Synth, render, statements

CONFIG = Config()
MEMORIES, PASSAGES = schema.MEMORY_INDEX, schema.PASSAGE_INDEX

XRAY = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
LOGS = {"logs:CreateLogStream", "logs:PutLogEvents"}
# What a DynamoDB stream event source adds (CDK's grant_stream_read); ListStreams needs "*".
STREAM = {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}
LIST_STREAMS = {"dynamodb:ListStreams"}
# What an SQS on-failure destination adds.
DLQ = {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
INVOKE = {"sagemaker:InvokeEndpoint"}
POST = {"es:ESHttpPost"}


def dynamodb(*names: str) -> set[str]:
    return {f"dynamodb:{name}" for name in names}


def sessions(*names: str, indexes: tuple[schema.IndexSpec, ...] = ()) -> dict[str, set[str]]:
    """The sessions table, and Query of each global secondary index the function reads (only
    those: issue 46, every role had '/index/*')."""
    return {
        "sessions": dynamodb(*names),
        **{f"sessions/index/{index.name}": dynamodb("Query") for index in indexes},
    }


def runtime(**resources: set[str]) -> dict[str, set[str]]:
    return {"own log group": LOGS, "*": XRAY, **resources}


def consumer(**resources: set[str]) -> dict[str, set[str]]:
    """A stream consumer: ListStreams joins the X-Ray actions on '*'."""
    return {"own log group": LOGS, "*": XRAY | LIST_STREAMS, **resources}


# services/background/consolidation.py with services/profile/profile.py: remember_summary
# (put_record, get_record, save_record), remember_facts (get_record, records_of_owner, save_record,
# put_record; a fact without a subject looks for a near duplicate with a k-NN search of the memory
# index), and _compensate for a session deleted meanwhile (drop_session_records: records_of_owner,
# save_record, remove_records); write_record_entries checks the records it indexed are still live
# (live: BatchGetItem of records only) and remember_summary marks a summary the caller deleted
# meanwhile (mark_record_deleting: UpdateItem).
CONSOLIDATION = {
    **sessions("GetItem", "UpdateItem", "BatchGetItem"),
    "conversations": dynamodb("Query"),
    "records": dynamodb(
        "GetItem", "Query", "PutItem", "UpdateItem", "BatchWriteItem", "BatchGetItem"
    ),
    "text endpoint": INVOKE,
    "embed endpoint": INVOKE,
    f"domain/{MEMORIES}/_search": POST,
    f"domain/{MEMORIES}/_bulk": POST,
    f"domain/{MEMORIES}/_delete_by_query": POST,
}

# Role by role, resource by resource (labels below), the exact actions of the default stack.
EXPECTED: dict[str, dict[str, set[str]]] = {
    # handlers.chat_api: sessions (get_owned and live_sessions batch-read, list and
    # open_sessions_of query the user index, create/end/delete/finish_import write), turns
    # (get, window and list queries, the turn put, complete_turn, the import's batch writes),
    # the caller's state (get, get_owned, forget, create_session's condition check); /past
    # and /verified each send one hybrid _msearch of their index.
    # The profile (services/profile/profile.py via the records routes and /remember): owned_record
    # and search_records read records (GetItem), list_records and _place's records_of_owner query
    # the caller's partition, state_record and correct_record write (put_record, save_record:
    # PutItem) and index the record at once (bulk), a correction that lost to a delete takes
    # its entry back (delete_documents: delete by query), delete_record_now marks it
    # (mark_record_deleting: UpdateItem) and purges it in the request (delete by query, then
    # remove_deleted_record: DeleteItem). Auto-recall (services/longterm/auto_recall.py): one
    # _msearch of the memory index per turn, then live (BatchGetItem over sessions and records); its
    # small-talk vectors, cached in one sessions item (GetItem, and PutItem by the first).
    # Every chat answer (complete_stack) and a hand-off of waiting messages (mark_for_agent)
    # is a transaction with a ConditionCheck item on the session (ConditionCheckItem).
    # Hand-off to a person (issue 16): the agents' queue is a Query of the sessions table's
    # handoff-sessions index; each hand-off and hand-back publishes one event on the stack's
    # bus (PutEvents, on that bus only).
    "Chat": runtime(
        **sessions(
            "GetItem",
            "BatchGetItem",
            "Query",
            "PutItem",
            "UpdateItem",
            "ConditionCheckItem",
            indexes=(schema.USER_SESSIONS_INDEX, schema.HANDOFF_SESSIONS_INDEX),
        ),  # fmt: skip
        conversations=dynamodb("GetItem", "Query", "PutItem", "UpdateItem", "BatchWriteItem"),
        users=dynamodb("GetItem", "BatchGetItem", "UpdateItem", "ConditionCheckItem"),
        records=dynamodb("GetItem", "Query", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem"),
        # The profile block of every chat prompt: one Query of the profile-records index.
        **{f"records/index/{schema.PROFILE_RECORDS_INDEX.name}": dynamodb("Query")},
        # POST /memories/namespaces: the keys and namespaces of the caller's records.
        **{f"records/index/{schema.RECORD_KEYS_INDEX.name}": dynamodb("Query")},
        # LangGraph checkpoints (adapters/dynamodb/checkpoints.py): get_checkpoint (GetItem),
        # list_checkpoints and get_writes (Query), get_blobs and blob_sizes (BatchGetItem),
        # put_checkpoint (BatchWriteItem of values, PutItem of the checkpoint), put_writes.
        checkpoints=dynamodb("GetItem", "Query", "BatchGetItem", "PutItem", "BatchWriteItem"),
        **{
            "text endpoint": INVOKE,
            "embed endpoint": INVOKE,
            f"domain/{MEMORIES}/_search": POST,
            f"domain/{MEMORIES}/_msearch": POST,
            f"domain/{MEMORIES}/_bulk": POST,
            f"domain/{MEMORIES}/_delete_by_query": POST,
            f"domain/{PASSAGES}/_msearch": POST,
            "handoff bus": {"events:PutEvents"},
        },
    ),
    # handlers.consolidate: get_session, all_turns, record_consolidation_failure /
    # mark_failed / mark_consolidated; summarize and embed; bulk upsert and the compensating
    # delete of a session deleted meanwhile; the profile's records (CONSOLIDATION above).
    "Consolidate": consumer(
        **CONSOLIDATION,
        **{"sessions stream": STREAM, "dlq ConsolidationDlq": DLQ},
    ),
    # handlers.compact: get_session, turns_between, update_running_summary; the text model.
    "Compact": consumer(
        **sessions("GetItem", "UpdateItem"),
        conversations=dynamodb("Query"),
        **{
            "text endpoint": INVOKE,
            "conversations stream": STREAM,
            "dlq CompactionDlq": DLQ,
        },
    ),
    # handlers.purge: get_session, delete_turns (Query of keys + BatchWriteItem), continue_purge,
    # remove_session; get_user, sessions_of_owner (user index), mark_deleting, save_purges;
    # delete_session / delete_user in the memory index. Records: purge_record (get_record,
    # delete_documents by query, remove_deleted_record: DeleteItem), a session's purge
    # (drop_session_records: records_of_owner, save_record of the records that keep other
    # sessions, remove_records; the entries of those whose words or dates change written again:
    # embedded, bulk-written, checked live with BatchGetItem), a forget's purge
    # (records_of_owner, remove_records).
    "Purge": consumer(
        **sessions(
            "GetItem", "Query", "UpdateItem", "DeleteItem", indexes=(schema.USER_SESSIONS_INDEX,)
        ),
        conversations=dynamodb("Query", "BatchWriteItem"),
        users=dynamodb("GetItem", "UpdateItem"),
        records=dynamodb(
            "GetItem", "Query", "PutItem", "DeleteItem", "BatchWriteItem", "BatchGetItem"
        ),
        # A session's LangGraph checkpoints, with its turns (delete_checkpoints).
        checkpoints=dynamodb("Query", "BatchWriteItem"),
        **{
            "embed endpoint": INVOKE,
            f"domain/{MEMORIES}/_bulk": POST,
            f"domain/{MEMORIES}/_delete_by_query": POST,
            "sessions stream": STREAM,
            "users stream": STREAM,
            "records stream": STREAM,
            "dlq SessionPurgeDlq": DLQ,
            "dlq UserPurgeDlq": DLQ,
            "dlq RecordPurgeDlq": DLQ,
        },
    ),
    # handlers.sweep_idle: stale_sessions (open-sessions index), end_session (GetItem explains
    # a failed condition), mark_deleting, continue_purge.
    # The sparse index page by page; conditional updates (GetItem explains a failed one); a
    # page of lost consolidations read at once (BatchGetItem) before starting them again.
    "SweepIdle": runtime(
        **sessions(
            "Query", "GetItem", "UpdateItem", "BatchGetItem", indexes=(schema.OPEN_SESSIONS_INDEX,)
        )
    ),
    # handlers.index_setup: indices.exists (HEAD) and create (PUT); for an index that exists,
    # get_mapping (GET) and put_mapping (PUT) of the fields a newer schema adds; then as the
    # FGAC master user the runtime's security role and its mapping (PUT).
    "IndexSetup": runtime(
        **{
            f"domain/{MEMORIES}": {"es:ESHttpHead", "es:ESHttpPut"},
            f"domain/{PASSAGES}": {"es:ESHttpHead", "es:ESHttpPut"},
            f"domain/{MEMORIES}/_mapping": {"es:ESHttpGet", "es:ESHttpPut"},
            f"domain/{PASSAGES}/_mapping": {"es:ESHttpGet", "es:ESHttpPut"},
            f"domain/_plugins/_security/api/roles/{schema.OPENSEARCH_RUNTIME_ROLE}": {
                "es:ESHttpPut"
            },
            f"domain/_plugins/_security/api/rolesmapping/{schema.OPENSEARCH_RUNTIME_ROLE}": {
                "es:ESHttpPut"
            },
        }
    ),
    # handlers.ingest: embed the passages, bulk-index them, delete a shortened document's tail.
    "Ingest": runtime(
        **{
            "embed endpoint": INVOKE,
            f"domain/{PASSAGES}/_bulk": POST,
            f"domain/{PASSAGES}/_delete_by_query": POST,
        }
    ),
    # handlers.redrive: failed_sessions scans, reset_consolidation, then consolidation; and
    # rekick_user_purges: pending_user_purges scans the users, get_user, save_purges.
    "Redrive": runtime(
        **{
            **CONSOLIDATION,
            "sessions": dynamodb("GetItem", "UpdateItem", "BatchGetItem", "Scan"),
            "users": dynamodb("Scan", "GetItem", "UpdateItem"),
        }
    ),
}

# handlers/stream.py (the stream function): a chat message answered on the same pipeline as the
# chat function's, so the same grants; the default text model (FLAN-T5's format) cannot stream,
# so its answer is the same InvokeEndpoint call (a TGI endpoint's or a Bedrock model's
# streaming call is granted to this role alone: test_only_the_stream_function_may_stream).
EXPECTED["Stream"] = EXPECTED["Chat"]


def spread(expected: dict[str, set[str]], synth: Synth) -> dict[str, set[str]]:
    """`expected` with each grant on the memory index made on every memory index of the
    synth's domain (its owners spread over several past an index's 1,024 shards)."""
    names = synth.stack.long_term.memory_indexes
    out: dict[str, set[str]] = {}
    for label, actions in expected.items():
        head, _, rest = label.partition("/")
        index, slash, path = rest.partition("/")
        if head == "domain" and index == MEMORIES:
            for name in names:
                out[f"domain/{name}{slash}{path}"] = actions
        else:
            out[label] = actions
    return out


def _role_id(synth: Synth, function: Any) -> str:
    return synth.stack.get_logical_id(function.role.node.default_child)


def _labeller(synth: Synth, function: Any) -> Callable[[str], str]:
    """Readable names for the resources of a role's statements."""
    stack = synth.stack
    resources = synth.json["Resources"]
    names: dict[str, str] = {}
    for label, table in (
        ("sessions", stack.storage.sessions),
        ("conversations", stack.storage.conversations),
        ("users", stack.storage.users),
        ("records", stack.storage.records),
        ("checkpoints", stack.storage.checkpoints),
    ):
        table_id = synth.logical_id(table)
        names[f"${{{table_id}.Arn}}"] = label
        names[f"${{{table_id}.Arn}}/index/*"] = f"{label}/index/*"
        for index in schema.TABLES[[t.logical_name for t in schema.TABLES].index(label)].indexes:
            names[f"${{{table_id}.Arn}}/index/{index.name}"] = f"{label}/index/{index.name}"
        names[f"${{{table_id}.StreamArn}}"] = f"{label} stream"
    for name, queue in stack.consolidation.dead_letter_queues.items():
        names[f"${{{synth.logical_id(queue)}.Arn}}"] = f"dlq {name}"
    if stack.handoff.bus is not None:
        names[f"${{{synth.logical_id(stack.handoff.bus)}.Arn}}"] = "handoff bus"
    log_group = resources[synth.logical_id(function)]["Properties"]["LoggingConfig"]["LogGroup"]
    names[f"${{{log_group['Ref']}.Arn}}"] = "own log group"
    endpoint = "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:endpoint/"
    names[endpoint + CONFIG.text_endpoint.lower()] = "text endpoint"
    names[endpoint + CONFIG.embed_endpoint.lower()] = "embed endpoint"
    model = "arn:${AWS::Partition}:bedrock:"
    mapping = stack.models.node.try_find_child("DefaultModelGeography")
    if mapping is not None:
        # The default text model: the inference profile of the region's geography, and its
        # model in every region the profile may send a request to.
        geography = f"${{{stack.get_logical_id(mapping)}[${{AWS::Region}}].prefix}}"
        profile = f"${{AWS::Region}}:${{AWS::AccountId}}:inference-profile/{geography}"
        names[f"{model}{profile}.{DEFAULT_TEXT_MODEL}"] = "text model"
        names[f"{model}*::foundation-model/{DEFAULT_TEXT_MODEL}"] = "text model"
    names[f"{model}${{AWS::Region}}::foundation-model/{stack.config.embed_model_id}"] = (
        "embed model"
    )
    long_term = stack.long_term
    if long_term.setup_function is not None:
        setup = f"${{{synth.logical_id(long_term.setup_function)}.Arn}}"
        names[setup] = "IndexSetup function"
        names[f"{setup}:*"] = "IndexSetup function:*"
    for index_name, index in long_term.vector_indexes.items():
        names[f"${{{synth.logical_id(index)}.IndexArn}}"] = f"vectors/{index_name}"
    if long_term.vector_bucket is not None:
        owners = (
            "arn:${AWS::Partition}:s3vectors:${AWS::Region}:${AWS::AccountId}:bucket/"
            f"{long_term.bucket_name}-u*"
        )
        names[owners] = "vectors/owners' buckets"
        names[f"{owners}/index/m-*"] = "vectors/owners' indexes"
    domain = (
        f"${{{synth.logical_id(long_term.domain)}.Arn}}" if long_term.domain is not None else None
    )

    def label(resource: str) -> str:
        if domain is not None and resource.startswith(domain + "/"):
            return "domain" + resource[len(domain) :]
        return names.get(resource, resource)

    return label


def permissions(synth: Synth, function: Any) -> dict[str, set[str]]:
    """{resource label: actions} over every policy of the function's role."""
    label = _labeller(synth, function)
    found: dict[str, set[str]] = {}
    for statement in statements(synth, _role_id(synth, function)):
        assert statement["Effect"] == "Allow"
        assert "NotAction" not in statement
        if "Condition" in statement:  # the one kind: a model only through its profile
            only = {"StringEquals": ["bedrock:InferenceProfileArn"]}
            assert {k: list(v) for k, v in statement["Condition"].items()} == only, statement
        for resource in statement["Resource"]:
            found.setdefault(label(resource), set()).update(statement["Action"])
    return found


def test_every_function_has_its_exact_permission_list(default: Synth) -> None:
    assert set(default.stack.functions.functions) == set(EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_role_may_do_exactly_what_its_code_calls(default: Synth, name: str) -> None:
    function = default.stack.functions.functions[name]
    assert permissions(default, function) == spread(EXPECTED[name], default)


# CDK's custom-resource framework (stacks/long_term.py, Provider): it invokes the index setup's
# on_event function, waiting with GetFunction until that function is active, and logs.
FRAMEWORK = {
    "own log group": LOGS,
    "IndexSetup function": {"lambda:InvokeFunction", "lambda:GetFunction"},
    # grant_invoke names the function's versions and aliases too.
    "IndexSetup function:*": {"lambda:InvokeFunction"},
}


def test_the_provider_framework_may_only_invoke_the_index_setup(default: Synth) -> None:
    assert permissions(default, default.stack.long_term.provider_function) == FRAMEWORK


# The records table, role by role (also in EXPECTED; spelled out so that a change to who may
# touch a caller's profile is read in one place). Compact, SweepIdle, IndexSetup and Ingest
# never build a record.
RECORDS = {
    "Chat": dynamodb("GetItem", "Query", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem"),
    "Consolidate": CONSOLIDATION["records"],
    "Purge": dynamodb(
        "GetItem", "Query", "PutItem", "DeleteItem", "BatchWriteItem", "BatchGetItem"
    ),
    "Redrive": CONSOLIDATION["records"],
}
# A streamed message (/remember, the profile block) is the chat's.
RECORDS["Stream"] = RECORDS["Chat"]


def test_the_records_table_is_granted_per_role_exactly_its_calls(default: Synth) -> None:
    found = {
        name: actions
        for name, function in default.stack.functions.functions.items()
        if (actions := permissions(default, function).get("records"))
    }
    assert found == RECORDS
    # The API marks a record DELETING, and consolidation a summary the caller deleted while it
    # ran (profile.remember_summary); only the purge reads the records stream.
    assert {n for n, a in found.items() if "dynamodb:UpdateItem" in a} == {
        "Chat",
        "Stream",
        "Consolidate",
        "Redrive",
    }
    streams = {
        name
        for name, function in default.stack.functions.functions.items()
        if "records stream" in permissions(default, function)
    }
    assert streams == {"Purge"}
    # A record's item is deleted one at a time only while it is a tombstone (the API's DELETE
    # and the records stream's purge: remove_deleted_record); nobody scans.
    assert {n for n, a in found.items() if "dynamodb:DeleteItem" in a} == {
        "Chat",
        "Stream",
        "Purge",
    }
    assert not any("dynamodb:Scan" in a for a in found.values())


def test_only_the_chat_may_multi_search(default: Synth) -> None:
    """Every search of the chat is one hybrid request (POST /<index>/_msearch): the index is in
    the path and the domain refuses one named in the body, so the path is the limit."""
    msearch = {
        (name, resource)
        for name, function in default.stack.functions.functions.items()
        for resource in permissions(default, function)
        if resource.endswith("_msearch")
    }
    assert msearch == {
        (chat, f"domain/{index}/_msearch")
        for chat in ("Chat", "Stream")  # a streamed message searches as the chat's
        for index in (*default.stack.long_term.memory_indexes, PASSAGES)
    }


def test_no_role_may_scan_except_the_redrive_operator_tool(default: Synth) -> None:
    scanners = {
        name
        for name, function in default.stack.functions.functions.items()
        for actions in permissions(default, function).values()
        if "dynamodb:Scan" in actions
    }
    assert scanners == {"Redrive"}


def _http_grants(synth: Synth) -> dict[str, set[tuple[str, str]]]:
    """Domain access policy: {principal: {(action, path under the domain)}}."""
    (domain,) = synth.resources("AWS::OpenSearchService::Domain").values()
    prefix = f":domain/{domain['Properties']['DomainName']}"
    grants: dict[str, set[tuple[str, str]]] = {}
    for statement in domain["Properties"]["AccessPolicies"]["Statement"]:
        principal = render(statement["Principal"]["AWS"])
        for resource in render(statement["Resource"]):
            path = resource.split(prefix, 1)[1]
            grants.setdefault(principal, set()).add((statement["Action"], path))
    return grants


@pytest.mark.parametrize(("stack", "roles"), [("default", 7), ("migrating", 8)])
def test_domain_access_policy_allows_each_role_exactly_its_iam_requests(
    request: pytest.FixtureRequest, stack: str, roles: int
) -> None:
    """Within one account either the role's policy or the domain's would allow a request on
    its own, so the domain's must not allow more than the role's."""
    default: Synth = request.getfixturevalue(stack)
    functions = default.stack.functions.functions
    domain = f"${{{default.logical_id(default.stack.long_term.domain)}.Arn}}"
    expected: dict[str, set[tuple[str, str]]] = {}
    for function in functions.values():
        iam = {
            (action, resource[len(domain) :])
            for statement in statements(default, _role_id(default, function))
            for action in statement["Action"]
            if action.startswith("es:")
            for resource in statement["Resource"]
        }
        if iam:
            expected[f"${{{_role_id(default, function)}.Arn}}"] = iam
    assert _http_grants(default) == expected
    assert len(expected) == roles  # the index setup and six runtime roles (and the migration)


# --- a domain migrating its memory index to a new generation (docs/operations.md) --------------

NEW_MEMORIES = schema.memory_index_base(1)
# handlers.migrate_memory on a domain (services/background/migrate.py): pages through the old
# index (_search), checks each page's owner keys (users GetItem) and sessions and records (one
# BatchGetItem over both tables), embeds the entries the old index kept no vector of, writes
# them into the new index (_bulk) and deletes a copy whose session or record died meanwhile
# (delete_documents, delete_user: delete by query, in the old index too).
MIGRATE_ON_DOMAIN = runtime(
    **{
        "sessions": dynamodb("BatchGetItem"),
        "records": dynamodb("BatchGetItem"),
        "users": dynamodb("GetItem"),
        "embed endpoint": INVOKE,
        f"domain/{MEMORIES}/_search": POST,
        f"domain/{MEMORIES}/_delete_by_query": POST,
        f"domain/{NEW_MEMORIES}/_bulk": POST,
        f"domain/{NEW_MEMORIES}/_delete_by_query": POST,
    }
)


@pytest.fixture(scope="module")
def migrating(synth_cache: Callable[..., Synth]) -> Synth:
    return synth_cache(searchMemoryGeneration="1", searchMigrateMemoryFrom=MEMORIES)


def _on_new_generation(expected: dict[str, set[str]]) -> dict[str, set[str]]:
    """A default role's grants with its memory index the new generation's, and its deletions
    of memories sent to the old index too (until the migration is done)."""
    out = {
        label.replace(f"domain/{MEMORIES}", f"domain/{NEW_MEMORIES}", 1): actions
        for label, actions in expected.items()
    }
    if f"domain/{MEMORIES}/_delete_by_query" in expected:
        out[f"domain/{MEMORIES}/_delete_by_query"] = POST
    return out


@pytest.mark.parametrize("name", [*EXPECTED, "MigrateMemory"])
def test_a_migrating_domain_grants_each_role_exactly_its_calls_on_both_generations(
    migrating: Synth, name: str
) -> None:
    """Only the migration reads the old index; every role that deletes memories deletes there
    too; nothing else touches it, and the index setup makes only the new one."""
    function = migrating.stack.functions.functions[name]
    expected = MIGRATE_ON_DOMAIN if name == "MigrateMemory" else _on_new_generation(EXPECTED[name])
    assert permissions(migrating, function) == expected


def test_a_migrating_domain_names_both_generations_to_the_runtime_and_its_security_role(
    migrating: Synth, default: Synth
) -> None:
    functions = migrating.stack.functions.functions
    assert set(functions) == set(EXPECTED) | {"MigrateMemory"}
    assert "MigrateMemory" not in default.stack.functions.functions
    outputs = migrating.json["Outputs"]
    assert outputs["MigrateMemoryFunctionName"]["Value"] == {
        "Ref": migrating.logical_id(functions["MigrateMemory"])
    }
    for name in ("Chat", "Consolidate", "Purge", "Redrive", "MigrateMemory", "IndexSetup"):
        variables = migrating.json["Resources"][migrating.logical_id(functions[name])][
            "Properties"
        ]["Environment"]["Variables"]
        assert variables[schema.ENV_OPENSEARCH_MEMORY_GENERATION] == "1", name
        assert variables[schema.ENV_OPENSEARCH_PREVIOUS_MEMORY_INDEXES] == MEMORIES, name
    role = migrating.stack.long_term.runtime_role_body
    assert role is not None
    assert role["index_permissions"][0]["index_patterns"] == [NEW_MEMORIES, PASSAGES, MEMORIES]
    migration = migrating.json["Resources"][migrating.logical_id(functions["MigrateMemory"])]
    role_arn = f"${{{_role_id(migrating, functions['MigrateMemory'])}.Arn}}"
    (indexes,) = migrating.resources("Custom::LongTermIndexes").values()
    assert role_arn in render(indexes["Properties"]["RuntimeRoleArns"])
    assert migration["Properties"]["Timeout"] == 15 * 60


@pytest.mark.parametrize(
    ("name", "handler"),
    [("Ingest", "handlers.ingest.handler"), ("Redrive", "handlers.redrive.handler")],
)
def test_operator_tool_is_deployed_mapped_and_named_in_an_output(
    default: Synth, name: str, handler: str
) -> None:
    """Issue 10 item 5: operators ingest and redrive on a deployed stack with `aws lambda
    invoke`; the function's role is mapped in FGAC like the runtime roles and admitted by
    the domain access policy."""
    function = default.stack.functions.functions[name]
    function_id = default.logical_id(function)
    props = default.json["Resources"][function_id]["Properties"]
    assert props["Handler"] == handler
    assert props["Timeout"] == 15 * 60
    variables = props["Environment"]["Variables"]
    assert variables[schema.ENV_LONG_TERM_BACKEND] == "opensearch"
    assert variables[schema.ENV_OPENSEARCH_ENDPOINT] == {
        "Fn::GetAtt": [default.logical_id(default.stack.long_term.domain), "DomainEndpoint"]
    }
    role_arn = f"${{{_role_id(default, function)}.Arn}}"
    (indexes,) = default.resources("Custom::LongTermIndexes").values()
    assert role_arn in render(indexes["Properties"]["RuntimeRoleArns"])
    assert role_arn in _http_grants(default)
    assert default.json["Outputs"][f"{name}FunctionName"]["Value"] == {"Ref": function_id}


def test_ingest_writes_only_verified_passages_and_redrive_only_memories(default: Synth) -> None:
    functions = default.stack.functions.functions
    ingest = permissions(default, functions["Ingest"])
    redrive = permissions(default, functions["Redrive"])
    assert {r for r in ingest if r.startswith("domain/")} == {
        f"domain/{PASSAGES}/_bulk",
        f"domain/{PASSAGES}/_delete_by_query",
    }
    assert {r for r in redrive if r.startswith("domain/")} == {
        f"domain/{index}/{path}"
        for index in default.stack.long_term.memory_indexes
        for path in ("_search", "_bulk", "_delete_by_query")
    }
    assert "sessions" in redrive and "dynamodb:Scan" in redrive["sessions"]


# --- other settings -------------------------------------------------------------------------


def test_bedrock_mode_gives_each_role_exactly_the_models_it_calls(synth_cache) -> None:
    bedrock = synth_cache(modelMode="bedrock", powertoolsLayerVersion="latest")
    label = _labeller(bedrock, bedrock.stack.api.handler)
    models = {}
    for name, function in bedrock.stack.functions.functions.items():
        found = set()
        for statement in statements(bedrock, _role_id(bedrock, function)):
            if any(a.startswith(("bedrock:", "sagemaker:")) for a in statement["Action"]):
                # The stream function's answers stream (ConverseStream) when the text model's
                # do; the rest of its calls are the chat's.
                assert statement["Action"] in (
                    ["bedrock:InvokeModel"],
                    *(
                        [["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]]
                        if name == "Stream"
                        else []
                    ),
                ), name
                found.update(label(resource) for resource in statement["Resource"])
                # The text model through its inference profile only (issue 46): a grant of
                # its model in every region is conditioned on the profile it came through.
                for resource in statement["Resource"]:
                    if ":bedrock:*::foundation-model/" in render(resource):
                        (profile,) = [
                            r for s in statements(bedrock, _role_id(bedrock, function))
                            for r in s["Resource"] if ":inference-profile/" in render(r)
                        ]  # fmt: skip
                        condition = statement["Condition"]
                        assert list(condition) == ["StringEquals"], name
                        through = condition["StringEquals"]["bedrock:InferenceProfileArn"]
                        assert render(through) == render(profile), name
                    else:
                        assert "Condition" not in statement, name
        models[name] = found
    text, embed = "text model", "embed model"
    assert models == {
        "Chat": {text, embed},
        "Stream": {text, embed},
        "Consolidate": {text, embed},
        "Compact": {text},
        "Purge": {embed},
        "SweepIdle": set(),
        "IndexSetup": set(),
        "Ingest": {embed},
        "Redrive": {text, embed},
    }


def test_serverless_data_access_policy_gives_each_role_exactly_its_index_permissions(
    synth_cache,
) -> None:
    serverless = synth_cache(searchMode="serverless")
    functions = serverless.stack.functions.functions
    (policy,) = serverless.resources("AWS::OpenSearchServerless::AccessPolicy").values()
    entries = json.loads(render(policy["Properties"]["Policy"]))
    collection = serverless.stack.long_term._collection_name
    read, write = "aoss:ReadDocument", "aoss:WriteDocument"

    def role(name: str) -> str:
        return f"${{{_role_id(serverless, functions[name])}.Arn}}"

    granted = {}
    for entry in entries:
        (principal,) = entry["Principal"]
        granted[principal] = {
            resource.removeprefix(f"index/{collection}/"): set(rule["Permission"])
            for rule in entry["Rules"]
            for resource in rule["Resource"]
            if rule["ResourceType"] == "index"
        }
        assert len(granted[principal]) == len(entry["Rules"])
    # A Serverless upsert deletes the documents' keys by query first: writers read too.
    assert granted == {
        role("Chat"): {MEMORIES: {read, write}, PASSAGES: {read}},
        role("Stream"): {MEMORIES: {read, write}, PASSAGES: {read}},
        role("Consolidate"): {MEMORIES: {read, write}},
        role("Purge"): {MEMORIES: {read, write}},
        role("Ingest"): {PASSAGES: {read, write}},
        role("Redrive"): {MEMORIES: {read, write}},
        role("IndexSetup"): {
            MEMORIES: {"aoss:CreateIndex", "aoss:DescribeIndex", "aoss:UpdateIndex"},
            PASSAGES: {"aoss:CreateIndex", "aoss:DescribeIndex", "aoss:UpdateIndex"},
        },
    }
    collection_arn = f"${{{serverless.logical_id(serverless.stack.long_term.collection)}.Arn}}"
    for name, function in functions.items():
        aoss = {
            (action, resource)
            for statement in statements(serverless, _role_id(serverless, function))
            for action in statement["Action"]
            if action.startswith(("aoss:", "es:"))
            for resource in statement["Resource"]
        }
        expected = {("aoss:APIAccessAll", collection_arn)}
        assert aoss == (expected if role(name) in granted else set()), name


def test_a_bulk_request_may_only_write_the_index_its_path_names(default: Synth) -> None:
    """Bulk writes are granted per index path (POST /<index>/_bulk); the domain must refuse a
    body that names another index, or the path would limit nothing."""
    (domain,) = default.resources("AWS::OpenSearchService::Domain").values()
    assert domain["Properties"]["AdvancedOptions"] == {
        "rest.action.multi.allow_explicit_index": "false"
    }


# --- S3 Vectors (searchMode=s3vectors, and the serverless profile) ---------------------------

# What each method of chatmemory/adapters/s3vectors.py calls, as IAM actions on the index ARN
# (every S3 Vectors data-plane action names an index, none the bucket). vector_search and
# hybrid_search: QueryVectors filtered to the caller's user_id with returnMetadata, which needs
# GetVectors too, on the owner's own index. upsert: PutVectors (a vector's key is derived from
# its owner and doc_key, so a retry overwrites); the first write of an owner creates its index
# (CreateIndex) and, first in its bucket, the bucket (CreateVectorBucket). delete_session and
# delete_documents: DeleteVectors of derived keys (there is no delete-by-query), also in the
# shared memory index a deployment keeps until its migration; delete_user: DeleteIndex of the
# owner's index. delete_document (passages): GetVectors probes which passage keys exist, then
# DeleteVectors. ensure_indexes' GetIndex runs only locally: CloudFormation creates the
# stack's indexes.
QUERY = {"s3vectors:QueryVectors", "s3vectors:GetVectors"}
PUT = {"s3vectors:PutVectors"}
DELETE = {"s3vectors:DeleteVectors"}
PROBE = {"s3vectors:GetVectors"}
CREATE_INDEX = {"s3vectors:CreateIndex"}
CREATE_BUCKET = {"s3vectors:CreateVectorBucket"}
ERASE = {"s3vectors:DeleteIndex"}
LIST = {"s3vectors:ListVectors", "s3vectors:GetVectors"}
SETUP_ONLY = {"s3vectors:GetIndex"}
OWNERS = "vectors/owners' indexes"
OWNERS_BUCKETS = "vectors/owners' buckets"


def _without_opensearch(expected: dict[str, set[str]]) -> dict[str, set[str]]:
    return {label: actions for label, actions in expected.items() if not label.startswith("domain")}


# Role by role: the DynamoDB, model, log and stream grants of EXPECTED, and on the two vector
# indexes exactly the actions of the OpenSearch requests each role made there. No IndexSetup:
# CloudFormation creates the indexes.
EXPECTED_S3VECTORS: dict[str, dict[str, set[str]]] = {
    # /past and /verified query both indexes, auto-recall the memory index; a stated record is
    # indexed at once, a correction that lost to a delete takes its entry back.
    "Chat": {
        **_without_opensearch(EXPECTED["Chat"]),
        OWNERS: QUERY | PUT | DELETE | CREATE_INDEX,
        OWNERS_BUCKETS: CREATE_BUCKET,
        f"vectors/{MEMORIES}": DELETE,
        f"vectors/{PASSAGES}": QUERY,
    },
    # Near-duplicate facts (query), the upsert, the compensating delete of a deleted session.
    "Consolidate": {
        **_without_opensearch(EXPECTED["Consolidate"]),
        OWNERS: QUERY | PUT | DELETE | CREATE_INDEX,
        OWNERS_BUCKETS: CREATE_BUCKET,
        f"vectors/{MEMORIES}": DELETE,
    },
    "Compact": EXPECTED["Compact"],
    # Deletes by key (a session's, a record's entries), a forgotten owner key's index whole,
    # and the entries of records that stay without a deleted session's words or dates, written
    # again.
    "Purge": {
        **_without_opensearch(EXPECTED["Purge"]),
        OWNERS: PUT | DELETE | CREATE_INDEX | ERASE,
        OWNERS_BUCKETS: CREATE_BUCKET,
        f"vectors/{MEMORIES}": DELETE,
    },
    "SweepIdle": EXPECTED["SweepIdle"],
    # Verified passages only: the upsert, and a shortened document's old tail (probed, then
    # deleted). The only role that may read vectors without querying.
    "Ingest": {
        **_without_opensearch(EXPECTED["Ingest"]),
        f"vectors/{PASSAGES}": PUT | PROBE | DELETE,
    },
    "Redrive": {
        **_without_opensearch(EXPECTED["Redrive"]),
        OWNERS: QUERY | PUT | DELETE | CREATE_INDEX,
        OWNERS_BUCKETS: CREATE_BUCKET,
        f"vectors/{MEMORIES}": DELETE,
    },
    # The shared memory index, page by page, copied into the owners' indexes; what died
    # meanwhile is deleted again; a page's sessions and records checked live.
    "MigrateMemory": {
        "own log group": LOGS,
        "sessions": dynamodb("BatchGetItem"),
        "records": dynamodb("BatchGetItem"),
        "users": dynamodb("GetItem"),
        "*": XRAY,
        OWNERS: PUT | DELETE | CREATE_INDEX | ERASE,
        OWNERS_BUCKETS: CREATE_BUCKET,
        f"vectors/{MEMORIES}": LIST | DELETE,
    },
}


EXPECTED_S3VECTORS["Stream"] = EXPECTED_S3VECTORS["Chat"]


def _on_bedrock(expected: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same role with Bedrock's foundation models instead of the SageMaker endpoints."""
    renamed = {"text endpoint": "text model", "embed endpoint": "embed model"}
    return {
        renamed.get(label, label): {"bedrock:InvokeModel"} if label in renamed else actions
        for label, actions in expected.items()
    }


@pytest.fixture(scope="module")
def s3vectors(synth_cache: Callable[..., Synth]) -> Synth:
    return synth_cache(searchMode="s3vectors")


@pytest.fixture(scope="module")
def serverless_profile(synth_cache: Callable[..., Synth]) -> Synth:
    return synth_cache(profile="serverless")


def test_s3_vectors_functions_are_the_default_ones_without_the_index_setup(
    s3vectors: Synth,
) -> None:
    assert set(s3vectors.stack.functions.functions) == set(EXPECTED_S3VECTORS)
    assert set(EXPECTED_S3VECTORS) == set(EXPECTED) - {"IndexSetup"} | {"MigrateMemory"}


@pytest.mark.parametrize("name", EXPECTED_S3VECTORS)
def test_s3_vectors_role_may_do_exactly_what_its_code_calls(s3vectors: Synth, name: str) -> None:
    function = s3vectors.stack.functions.functions[name]
    assert permissions(s3vectors, function) == EXPECTED_S3VECTORS[name]


@pytest.mark.parametrize("name", EXPECTED_S3VECTORS)
def test_serverless_profile_role_may_do_exactly_what_its_code_calls(
    serverless_profile: Synth, name: str
) -> None:
    function = serverless_profile.stack.functions.functions[name]
    expected = _on_bedrock(EXPECTED_S3VECTORS[name])
    if name == "Stream":  # its answers stream (ConverseStream)
        expected["text model"] = {"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}
    assert permissions(serverless_profile, function) == expected


def test_s3_vectors_grants_name_index_arns_and_only_the_owners_buckets_by_pattern(
    serverless_profile: Synth,
) -> None:
    """Each statement with an s3vectors action names one resource: an index of the stack by its
    GetAtt IndexArn, or the pattern of the owners' indexes (this stack's '<bucket>-u*' buckets,
    'm-*' indexes) with actions that act on an index; the bucket pattern is named for
    CreateVectorBucket only (the service authorization reference: the one action of these on a
    bucket)."""
    synth = serverless_profile
    indexes = {
        f"${{{synth.logical_id(index)}.IndexArn}}"
        for index in synth.stack.long_term.vector_indexes.values()
    }
    assert len(indexes) == len(schema.LONG_TERM_INDEXES)
    buckets = "arn:${AWS::Partition}:s3vectors:${AWS::Region}:${AWS::AccountId}:bucket/"
    buckets += "chatmemory-dev-vectors-u*"
    owners = f"{buckets}/index/m-*"
    granted = set()
    for function in synth.stack.functions.functions.values():
        for statement in statements(synth, _role_id(synth, function)):
            vector_actions = {a for a in statement["Action"] if a.startswith("s3vectors:")}
            if not vector_actions:
                continue
            assert vector_actions == set(statement["Action"])
            (resource,) = statement["Resource"]
            if resource == buckets:
                assert vector_actions == CREATE_BUCKET
            elif resource == owners:
                assert vector_actions <= QUERY | PUT | DELETE | CREATE_INDEX | ERASE
            else:
                assert resource in indexes
                assert vector_actions <= QUERY | PUT | DELETE | LIST
            granted.add(resource)
    assert granted == indexes | {buckets, owners}


def _adapter_calls(module: str, service: str) -> set[str]:
    """The IAM actions of the calls an adapter makes on its boto3 client
    (`self._client.put_events(...)` is "events:PutEvents"), read from its source."""
    import chatmemory.adapters

    source = Path(chatmemory.adapters.__file__).with_name(module)
    calls = {
        node.func.attr
        for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "_client"
    }
    return {f"{service}:" + "".join(part.title() for part in call.split("_")) for call in calls}


def test_s3_vectors_grants_are_exactly_the_adapters_data_plane_calls(
    serverless_profile: Synth,
) -> None:
    """Every S3 Vectors API the adapter calls (`self._client.<operation>(...)`) is granted to
    some role, and nothing else is: a new call in the adapter fails here until a grant (and
    EXPECTED_S3VECTORS) says who may make it. The index set-up calls are local only."""
    called = _adapter_calls("s3vectors.py", "s3vectors")
    assert called >= SETUP_ONLY
    granted = {
        action
        for function in serverless_profile.stack.functions.functions.values()
        for actions in permissions(serverless_profile, function).values()
        for action in actions
        if action.startswith("s3vectors:")
    }
    assert granted == called - SETUP_ONLY


def test_only_the_purge_and_the_writers_may_delete_vectors(serverless_profile: Synth) -> None:
    deleters = {
        (name, resource)
        for name, function in serverless_profile.stack.functions.functions.items()
        for resource, actions in permissions(serverless_profile, function).items()
        if "s3vectors:DeleteVectors" in actions
    }
    writers = ("Chat", "Stream", "Consolidate", "Purge", "Redrive", "MigrateMemory")
    assert deleters == {
        *((name, OWNERS) for name in writers),
        *((name, f"vectors/{MEMORIES}") for name in writers),  # the shared index, kept
        ("Ingest", f"vectors/{PASSAGES}"),
    }
    erasers = {
        name
        for name, function in serverless_profile.stack.functions.functions.items()
        for actions in permissions(serverless_profile, function).values()
        if ERASE & actions
    }
    assert erasers == {"Purge", "MigrateMemory"}


# --- hand-off to a person (issue 16) ---------------------------------------------------------


def _events_grants(synth: Synth) -> set[tuple[str, str, str]]:
    """(function, action, resource) of every EventBridge grant of every function's role."""
    return {
        (name, action, resource)
        for name, function in synth.stack.functions.functions.items()
        for statement in statements(synth, _role_id(synth, function))
        for action in statement["Action"]
        if action.startswith("events:")
        for resource in statement["Resource"]
    }


@pytest.mark.parametrize("variant", ["default", "iam-auth", "serverless-profile"])
def test_only_the_chat_may_put_events_and_only_on_the_handoff_bus(
    synth_cache: Callable[..., Synth], variant: str
) -> None:
    synth = synth_cache(**VARIANTS[variant])
    bus = synth.stack.handoff.bus
    assert bus is not None
    # A hand-off by a streamed message publishes its event as the chat's does.
    assert _events_grants(synth) == {
        (chat, "events:PutEvents", f"${{{synth.logical_id(bus)}.Arn}}")
        for chat in ("Chat", "Stream")
    }


def test_event_grants_are_exactly_the_event_adapters_calls(default: Synth) -> None:
    """Every EventBridge API the adapter calls (`self._client.<operation>(...)`) is granted to
    the chat role, and nothing else: a new call fails here until a grant says who may make it."""
    called = _adapter_calls("eventbridge.py", "events")
    assert called == {"events:PutEvents"}
    assert {action for _, action, _ in _events_grants(default)} == called


def test_without_handoff_events_no_role_may_put_events(synth_cache: Callable[..., Synth]) -> None:
    synth = synth_cache(**VARIANTS["handoff-rules"])
    assert synth.stack.handoff.bus is None
    assert _events_grants(synth) == set()
    assert permissions(synth, synth.stack.api.handler) == spread(
        {label: actions for label, actions in EXPECTED["Chat"].items() if label != "handoff bus"},
        synth,
    )


def test_the_chat_may_query_the_agents_queue_index(default: Synth) -> None:
    """GET /agent/sessions reads the sparse handoff-sessions index of the sessions table, which
    CDK builds from schema.SESSIONS; the chat is granted it by name (no other role reads it)."""
    assert schema.HANDOFF_SESSIONS_INDEX in schema.SESSIONS.indexes
    table = default.json["Resources"][default.logical_id(default.stack.storage.sessions)][
        "Properties"
    ]
    assert schema.HANDOFF_SESSIONS_INDEX.name in {
        index["IndexName"] for index in table["GlobalSecondaryIndexes"]
    }
    chat = permissions(default, default.stack.api.handler)
    assert chat[f"sessions/index/{schema.HANDOFF_SESSIONS_INDEX.name}"] == {"dynamodb:Query"}


def test_each_role_reads_only_the_indexes_its_code_queries(default: Synth) -> None:
    """Failed before (issue 46): every role granted the sessions table got '<table>/index/*',
    so the idle sweeper could read the user-sessions and hand-off indexes (names, hand-off
    reasons and agents of every user)."""
    read: dict[str, set[str]] = {}
    for name, function in default.stack.functions.functions.items():
        label = _labeller(default, function)
        read[name] = {
            label(resource)
            for statement in statements(default, _role_id(default, function))
            for resource in statement["Resource"]
            if "/index/" in label(resource)
        }
    user, opened, handoff = (f"sessions/index/{i.name}" for i in schema.SESSIONS.indexes)
    profile = f"records/index/{schema.PROFILE_RECORDS_INDEX.name}"
    keys = f"records/index/{schema.RECORD_KEYS_INDEX.name}"
    assert read == {
        "Chat": {user, handoff, profile, keys},
        "Stream": {user, handoff, profile, keys},
        "Consolidate": set(),
        "Compact": set(),
        "Purge": {user},
        "SweepIdle": {opened},
        "IndexSetup": set(),
        "Ingest": set(),
        "Redrive": set(),
    }


def _execute_api(synth: Synth, path: str) -> str:
    """A rendered execute-api ARN of the chat API's stage; `path` is "<method>/<resource>"."""
    api = synth.stack.api.rest_api
    stage = synth.logical_id(api.deployment_stage)
    return (
        "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:"
        f"${{{synth.logical_id(api)}}}/${{{stage}}}/{path}"
    )


@pytest.fixture(scope="module")
def iam_auth(synth_cache: Callable[..., Synth]) -> Synth:
    return synth_cache(**VARIANTS["iam-auth"])


def test_the_agent_role_may_invoke_the_agent_routes_of_this_api_and_nothing_else(
    iam_auth: Synth,
) -> None:
    role = iam_auth.stack.api.auth.agent_role
    assert role is not None
    role_id = iam_auth.logical_id(role)
    found = [
        (s["Effect"], s["Action"], s["Resource"], s.get("Condition"))
        for s in statements(iam_auth, role_id)
    ]
    assert found == [("Allow", ["execute-api:Invoke"], [_execute_api(iam_auth, "*/agent/*")], None)]
    props = iam_auth.json["Resources"][role_id]["Properties"]
    assert "ManagedPolicyArns" not in props and "Policies" not in props
    # No path: the runtime compares the caller's assumed-role ARN (which has none) with it.
    assert "Path" not in props
    # Principals of this account, once an administrator lets them assume it; nobody else.
    (trust,) = props["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Effect"] == "Allow" and trust["Action"] == "sts:AssumeRole"
    assert "Condition" not in trust
    assert render(trust["Principal"]["AWS"]) == "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"
    (stage,) = iam_auth.resources("AWS::ApiGateway::Stage").values()
    assert stage["Properties"]["StageName"] == "v1"


def test_only_the_agent_role_and_the_user_policy_name_the_api(iam_auth: Synth) -> None:
    """No function role may call the API; the users' managed policy allows every route of the
    stage and denies the agents' routes (a Deny wins over any Allow the same principal has)."""
    role_id = iam_auth.logical_id(iam_auth.stack.api.auth.agent_role)
    invokers = {
        render(ref)
        for policy in iam_auth.resources("AWS::IAM::Policy").values()
        if "execute-api" in json.dumps(policy["Properties"]["PolicyDocument"])
        for ref in policy["Properties"]["Roles"]
    }
    assert invokers == {f"${{{role_id}}}"}
    (managed,) = iam_auth.resources("AWS::IAM::ManagedPolicy").values()
    props = managed["Properties"]
    # Attached by the deployer to the users' principals, to nothing by the stack.
    assert not {"Roles", "Users", "Groups"} & set(props)
    assert [
        (s["Effect"], s["Action"], render(s["Resource"]))
        for s in props["PolicyDocument"]["Statement"]
    ] == [
        ("Allow", "execute-api:Invoke", _execute_api(iam_auth, "*/*")),
        ("Deny", "execute-api:Invoke", _execute_api(iam_auth, "*/agent/*")),
    ]


def test_with_cognito_the_agents_are_a_group_and_no_principal_is_granted_the_api(
    default: Synth,
) -> None:
    assert default.stack.api.auth.agent_role is None
    default.template.resource_count_is("AWS::IAM::ManagedPolicy", 0)
    for policy in default.resources("AWS::IAM::Policy").values():
        assert "execute-api" not in json.dumps(policy["Properties"]["PolicyDocument"])
    default.template.resource_count_is("AWS::Cognito::UserPoolGroup", 1)


def test_only_the_stream_function_may_stream_and_only_its_text_model(synth_cache) -> None:
    """The models' streaming calls (ConverseStream, InvokeEndpointWithResponseStream) are
    granted to the stream function alone, on the text model, when its answers can stream (a
    Bedrock model, a TGI endpoint; FLAN-T5's answers come whole)."""
    streaming = {
        "bedrock:InvokeModelWithResponseStream",
        "sagemaker:InvokeEndpointWithResponseStream",
    }
    for settings, expected in (
        ({"modelMode": "bedrock"}, {"bedrock:InvokeModelWithResponseStream"}),
        ({"textFormat": "tgi"}, {"sagemaker:InvokeEndpointWithResponseStream"}),
        ({}, set()),
    ):
        synth = synth_cache(**settings)
        for name, function in synth.stack.functions.functions.items():
            granted = {
                action
                for statement in statements(synth, _role_id(synth, function))
                for action in statement["Action"]
                if action in streaming
            }
            assert granted == (expected if name == "Stream" else set()), (settings, name)
