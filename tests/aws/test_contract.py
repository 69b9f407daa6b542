"""The AWS contract check: the real handlers of both profiles run as their synthesized templates
deploy them, through a full scenario (chat with stacked answers and a model outage, records,
hand-off, import and export, the end and consolidation of a long session, recall, continuation,
the sweeper, ingestion, redrive, purge and forget), and every AWS request they send is checked
against botocore's service model, the documented limits botocore does not check, and the IAM
policy of the sending function's role in the template (tests/aws/judge.py). A missing grant,
an oversize request or an invalid parameter fails here with the request that broke.

The default profile (SageMaker endpoints, an OpenSearch domain of t3 instances) runs in
us-east-1, the serverless profile (Bedrock, S3 Vectors) in eu-central-1: a model that exists on
demand in us-east-1 only would pass there and fail everywhere else. The default profile runs a
second time in the middle of moving its memory index to a new generation (searchMemoryGeneration,
searchMigrateMemoryFrom), where its deletions reach the old index too and the migration runs.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from chatmemory import schema
from chatmemory.schema import user_vector_index
from tests.aws import capacity
from tests.aws.judge import Judge, Problem
from tests.aws.scenario import DeployedWorld
from tests.aws.template import deployment_of

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Each profile's long session: at 4,096 dimensions (GPT-J) 160 windows are more than a t3
# domain takes in one request; at 1,024 (Titan) 500 windows of long non-ASCII messages (JSON
# escapes each such character in 6 bytes) are more than PutVectors takes in one request.
PROFILES = {
    "default": (
        {},
        "us-east-1",
        160,
        "Day {n}: we planned the trip to Lisbon, packing list item {n}.",
    ),
    # The default profile in the middle of moving its memory index to a new generation
    # (docs/operations.md): deletions reach the old index too, and the migration runs.
    "migrating": (
        {"searchMemoryGeneration": "1", "searchMigrateMemoryFrom": schema.MEMORY_INDEX},
        "us-east-1",
        160,
        "Day {n}: we planned the trip to Lisbon, packing list item {n}.",
    ),
    "serverless": (
        {"profile": "serverless"},
        "eu-central-1",
        500,
        "День {n}: мы планировали поездку в Лиссабон. " + "Список вещей для поездки. " * 100,
    ),
}


@dataclass
class Outcome:
    world: DeployedWorld
    judge: Judge
    problems: list[Problem]
    notes: dict[str, Any]

    def operations(self) -> Counter[tuple[str, str]]:
        return Counter((s.function, f"{s.service} {s.operation}") for s in self.world.recorder.sent)


def _message(content: str, turn: int) -> dict[str, Any]:
    return {
        "input": content,
        "response": f"Answer {turn}.",
        "created_at": f"2026-01-0{1 + turn % 9}T10:{turn % 60:02d}:00.000Z",
    }


def _ttl_removal(item: dict[str, Any]) -> dict[str, Any]:
    """The records stream's record of DynamoDB's TTL deleting an expired item (in DynamoDB
    JSON; moto runs no TTL): a REMOVE by the service, with the item as its old image."""
    keys = {"user_id": item["user_id"], "record_id": item["record_id"]}  # DynamoDB JSON too
    return {
        "Records": [
            {
                "eventID": "ttl-1",
                "eventName": "REMOVE",
                "eventSource": "aws:dynamodb",
                "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
                "dynamodb": {
                    "Keys": keys,
                    "OldImage": item,
                    "SequenceNumber": "1",
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                },
            }
        ]
    }


def run_scenario(world: DeployedWorld, long_turns: int, long_text: str) -> dict[str, Any]:
    """Every route and stream path of the API, as a user, an agent and an operator would."""
    notes: dict[str, Any] = {"long_turns": long_turns}
    ok, call = world.ok, world.call
    # Chat, with stacked answers (every chat message is answered in one transaction).
    s1 = ok("POST", "/sessions", {"name": "dogs"})["session"]["session_id"]
    for text in ("Hi, I am Alice and I live in Porto.", "My greyhound is called Biscuit."):
        ok("POST", f"/sessions/{s1}/messages", {"content": text})
    ok("GET", f"/sessions/{s1}/messages?limit=10&order=desc")
    ok("PUT", f"/sessions/{s1}/turns/2/feedback", {"rating": "up", "comment": "nice"})
    stored = ok(
        "POST", f"/sessions/{s1}/turns", {"input": "I also like tea.", "client_message_id": "c-1"}
    )
    ok("PATCH", f"/sessions/{s1}/turns/{stored['turn']['turn']}", {"response": "Tea it is."})
    ok("GET", f"/sessions/{s1}/turns/1")
    ok("POST", f"/sessions/{s1}/messages", {"content": "/remember I am allergic to cats"})
    ok("POST", f"/sessions/{s1}/messages", {"content": "/past what did we say about holidays?"})
    # An OpenAI client (another user), answered by the stream function as deployed: its
    # history sent back is recognised and stored once, its sampling options passed to the
    # model, streamed the second time.
    opening = {"role": "user", "content": "I keep two beehives in the garden."}
    _, [(_, first)] = world.stream(
        "/v1/chat/completions", {"model": "m", "messages": [opening]}, user="olga"
    )
    history = [
        opening,
        {"role": "assistant", "content": first["choices"][0]["message"]["content"]},
        {"role": "user", "content": "How many hives do I keep?"},
    ]
    asked = {"model": "m", "messages": history, "max_tokens": 64, "temperature": 0.2}
    _, chunks = world.stream("/v1/chat/completions", {**asked, "stream": True}, user="olga")
    assert chunks[-1] == ("data", "[DONE]"), chunks
    kept = chunks[-2][1]["chatmemory"]["session_id"]
    notes["openai"] = (
        kept == first["chatmemory"]["session_id"],
        len(ok("GET", f"/sessions/{kept}/messages", user="olga")["messages"]),
        [m["id"] for m in ok("GET", "/v1/models", user="olga")["data"]],
    )
    # Records.
    record = ok("POST", "/memories/records", {"text": "I prefer window seats on trains."})["record"]
    ok("GET", "/memories/records?limit=10")
    ok("GET", "/memories/records?q=train")
    ok("GET", f"/memories/records/{record['record_id']}")
    ok(
        "PATCH",
        f"/memories/records/{record['record_id']}",
        {"text": "I prefer aisle seats on trains."},
    )
    keyed = {"text": "Favourite colour: green", "record_id": "colour"}
    ok("POST", "/memories/records", keyed)
    ok("POST", "/memories/records", {**keyed, "text": "Favourite colour: blue"})
    assert call("DELETE", f"/memories/records/{record['record_id']}").status == 204
    # An agent's store: items of namespaces (one of 64 KiB: the record keeps it whole, the
    # index and the embedding take its beginning), a search in a namespace with a filter, the
    # namespaces, and a key put again right after its delete (purged in the request).
    item = {"record_id": "memories:alice:k1", "namespace": ["memories", "alice"]}
    ok("POST", "/memories/records", {**item, "text": '{"kind":"trip","city":"Porto"}'})
    big = {"record_id": "memories:alice:big", "namespace": ["memories", "alice"]}
    ok("POST", "/memories/records", {**big, "text": "Notes on the trip. " * 3400})
    search = {"query": "trip to Porto", "namespace_prefix": ["memories"], "limit": 5}
    notes["store_search"] = ok(
        "POST", "/memories/records/search", {**search, "filter": {"kind": "trip"}}
    )["records"]
    ok("POST", "/memories/records/search", {"namespace_prefix": ["memories"], "offset": 1})
    notes["namespaces"] = ok("POST", "/memories/namespaces", {"max_depth": 1})["namespaces"]
    assert call("DELETE", "/memories/records/memories:alice:k1").status == 204
    ok("POST", "/memories/records", {**item, "text": '{"kind":"trip","city":"Faro"}'})
    # A record that expires: hidden from its expiry on, its key free at once (the expired
    # item's entries and item removed in the put), and DynamoDB's TTL delete of it purged.
    brief = {"record_id": "memories:alice:brief", "namespace": ["memories", "alice"]}
    ok("POST", "/memories/records", {**brief, "text": "Parked on level 3", "ttl_seconds": 1})
    removal = _ttl_removal(world.stored_record("alice", brief["record_id"]))
    time.sleep(2.05)  # expires_at is in whole seconds
    notes["expired_get"] = call("GET", "/memories/records/memories:alice:brief").status
    notes["expired_put"] = call(
        "POST", "/memories/records", {**brief, "text": "Parked on level 5", "ttl_seconds": 1}
    ).status
    time.sleep(2.05)
    purge = world.by_handler("handlers.purge.handler")
    notes["ttl_purge"] = world.invoke(purge, removal)
    # A model outage keeps the message pending; a hand-off gives it to the agent.
    world.models_down_for = world.by_handler("handlers.chat_api.handler").logical_id
    failed = call(
        "POST",
        f"/sessions/{s1}/messages",
        {"content": "Can a person help me?", "client_message_id": "m-9"},
    )
    world.models_down_for = None
    notes["outage_status"] = failed.status
    ok("POST", f"/sessions/{s1}/handoff", {"note": "wants a person"})
    retried = ok(
        "POST",
        f"/sessions/{s1}/messages",
        {"content": "Can a person help me?", "client_message_id": "m-9"},
    )
    notes["retried_for_agent"] = retried["turn"]["for_agent"]
    ok("POST", f"/sessions/{s1}/messages", {"content": "Are you there?"})
    ok("GET", "/agent/sessions?state=WAITING", user="agent-1", agent=True)
    ok("GET", f"/agent/sessions/{s1}", user="agent-1", agent=True)
    ok(
        "POST",
        f"/agent/sessions/{s1}/messages",
        {"content": "Hello, Jane here."},
        user="agent-1",
        agent=True,
    )
    ok("POST", f"/agent/sessions/{s1}/handback", user="agent-1", agent=True)
    ok("POST", f"/sessions/{s1}/messages", {"content": "Thanks, that helped."})
    # Export, and the import of a long session.
    exported = ok("GET", f"/sessions/{s1}/export")
    notes["exported_messages"] = len(exported["messages"])
    long_doc = {
        "session": {"name": "a long planning chat"},
        "messages": [_message(long_text.format(n=n), n) for n in range(1, long_turns + 1)],
    }
    s2 = ok("POST", "/sessions/import", long_doc)["session"]["session_id"]
    # A drain while the imported session is open and far past COMPACT_AFTER_TURNS: the
    # compaction function extends its rolling summary (the turns' Query, the summary model,
    # the conditional update), so its requests are judged against its grants too.
    world.drain()
    # Exported page by page (each a Lambda answer of at most 6 MB).
    page = ok("GET", f"/sessions/{s2}/export")
    pages, messages = 1, len(page["messages"])
    while page.get("next_token"):
        page = ok("GET", f"/sessions/{s2}/export?next_token={page['next_token']}")
        pages, messages = pages + 1, messages + len(page["messages"])
    notes["long_export"] = (pages, messages)
    # 100 long messages in a script JSON escapes (6 bytes a character) are 12 MB as an answer,
    # more than Lambda returns; a page of them stays within it because one DynamoDB Query
    # returns at most 1 MB (3 MB escaped), whatever the limit asked for.
    wordy = {
        "messages": [{"input": "Вопрос " * 571, "response": "Ответ " * 3333} for _ in range(100)]
    }
    s5 = ok("POST", "/sessions/import", wordy)["session"]["session_id"]
    page = ok("GET", f"/sessions/{s5}/messages?limit=100")
    notes["wordy_page"] = (len(page["messages"]), page["next_token"] is not None)
    assert call("DELETE", f"/sessions/{s5}").status == 204
    # End both (end_previous ends s1 and s2 with the new session's creation).
    s3 = ok("POST", "/sessions", {"name": "next", "end_previous": True})["session"]["session_id"]
    world.drain()
    notes["statuses"] = {s: ok("GET", f"/sessions/{s}")["session"]["status"] for s in (s1, s2)}
    # Recall: /past, the memories route, auto-recall in an ordinary message.
    past = ok("POST", f"/sessions/{s3}/messages", {"content": "/past what is my greyhound called?"})
    notes["past_sources"] = [s["id"] for s in past["turn"]["sources"]]
    memories = ok("GET", "/memories?q=Lisbon%20trip%20packing&k=3")["memories"]
    notes["memories"] = [m["session_id"] for m in memories]
    ok("POST", f"/sessions/{s3}/messages", {"content": "Where did we plan the trip to?"})
    # Continuation of an ended session.
    s4 = ok("POST", "/sessions", {"continue_from": s1})["session"]["session_id"]
    ok("POST", f"/sessions/{s4}/messages", {"content": "Back again about Biscuit."})
    # Verified documents: the operator's ingestion, then /verified.
    ingest = world.by_handler("handlers.ingest.handler")
    world.invoke(
        ingest,
        {
            "documents": [
                {
                    "doc_id": "leave.md",
                    "text": "Staff get 25 days of leave a year.\n\nLeave is booked in the HR portal.",
                    "title": "Leave",
                }
            ]
        },
    )
    ok("POST", f"/sessions/{s3}/messages", {"content": "/verified how many days of leave?"})
    # A streamed answer (the stream function: the model's streaming call where it has one),
    # then its retry, replayed from the stored turn.
    streamed = {"content": "Tell me about the Lisbon trip.", "client_message_id": "stream-1"}
    notes["streamed"] = world.stream(f"/sessions/{s3}/messages/stream", streamed)
    notes["stream_replayed"] = world.stream(f"/sessions/{s3}/messages/stream", streamed)
    notes["stream_refused"] = world.stream(f"/sessions/{s3}/messages/stream", {"content": ""})
    # The sweeper ends an idle session (its activity moved an hour back).
    idle = ok("POST", "/sessions", {"name": "idle"})["session"]["session_id"]
    ok("POST", f"/sessions/{idle}/messages", {"content": "Just saying hello."})
    _age(world, idle, hours=2)
    world.invoke(world.by_handler("handlers.sweep_idle.handler"), {})
    world.drain()
    notes["idle_status"] = ok("GET", f"/sessions/{idle}")["session"]["status"]
    # A consolidation that fails three times (the model is down for it), then the redrive.
    doomed = ok("POST", "/sessions", {"name": "unlucky"})["session"]["session_id"]
    ok("POST", f"/sessions/{doomed}/messages", {"content": "We talked about the garden."})
    world.models_down_for = world.by_handler("handlers.consolidate.handler").logical_id
    ok("POST", f"/sessions/{doomed}/end")
    world.drain()
    notes["doomed_status"] = ok("GET", f"/sessions/{doomed}")["session"]["status"]
    world.models_down_for = None
    notes["redrive"] = world.invoke(world.by_handler("handlers.redrive.handler"), {})
    world.drain()
    notes["migration"] = _migrate(world)
    # A LangGraph thread's checkpoints (ChatMemorySaver): a state larger than one item, pending
    # writes (one past an item too), reads, a listing, a checkpoint over the limit, and the
    # thread's delete, whose purge removes them.
    notes["checkpoints"] = _checkpoints(world)
    # A session under the caller's own id (PUT), ended and continued by its next message (the
    # alias moves in the continuation's transaction), then deleted whole and purged (the
    # purge drops the alias).
    notes["put_statuses"] = [
        call("PUT", "/sessions/thread-1", {"name": "thread"}).status,
        call("PUT", "/sessions/thread-1").status,
    ]
    ok("POST", "/sessions/thread-1/messages", {"content": "My thread starts here."})
    ok("POST", "/sessions/thread-1/end")
    ok("POST", "/sessions/thread-1/messages", {"content": "And goes on after its end."})
    notes["thread_continued"] = ok("GET", "/sessions/thread-1")["session"]["continued_from"]
    assert call("DELETE", "/sessions/thread-1").status == 204
    world.drain()
    notes["thread_after_delete"] = call("GET", "/sessions/thread-1").status
    # Deleting a session, then everything of another user.
    assert call("DELETE", f"/sessions/{s2}").status == 204
    world.drain()
    notes["after_delete"] = [
        m["session_id"] for m in ok("GET", "/memories?q=Lisbon%20packing&k=5")["memories"]
    ]
    # A fact said in two sessions is one record; deleting the first leaves it with the second's
    # provenance and date, its entry written again by the purge (an embedding, a bulk write, a
    # live check of the records).
    cats = []
    for _ in range(2):
        cat = ok("POST", "/sessions", {"name": "cat"})["session"]["session_id"]
        ok("POST", f"/sessions/{cat}/messages", {"content": "My cat is called Tom."})
        ok("POST", f"/sessions/{cat}/end")
        world.drain()
        cats.append(cat)
    assert call("DELETE", f"/sessions/{cats[0]}").status == 204
    world.drain()
    notes["cat_records"] = [
        (r["text"], [p["session_id"] for p in r["provenance"]], cats[1])
        for r in ok("GET", "/memories/records?type=fact&limit=100")["records"]
        if "Tom" in r["text"]
    ]
    b1 = ok("POST", "/sessions", {"name": "bob"}, user="bob")["session"]["session_id"]
    ok(
        "POST",
        f"/sessions/{b1}/messages",
        {"content": "I am Bob and I collect stamps."},
        user="bob",
    )
    ok("POST", "/memories/records", {"text": "I collect stamps."}, user="bob")
    ok("POST", f"/sessions/{b1}/end", user="bob")
    world.drain()
    assert call("DELETE", "/memories", user="bob").status == 204
    world.drain()
    notes["bob_deletions"] = ok("GET", "/deletions", user="bob")
    ok("GET", "/sessions?limit=5")
    notes["measured"] = _measure(world)
    return notes


def _measure(world: DeployedWorld) -> dict[str, Any]:
    """The capacity model's measured session (tests/aws/capacity.py): its creation, ten chat
    messages, what the streams run for them, its end and consolidation, each part's requests."""
    ok, sent = world.ok, world.recorder.sent
    functions = {f.logical_id: f.handler.split(".")[1] for f in world.functions.values()}
    parts: dict[str, Any] = {"turns": capacity.TURNS}

    def part(name: str, start: int) -> None:
        parts[name] = capacity.tally(
            sent[start:], functions=functions, tables={v: k for k, v in world.table_names.items()}
        )

    start = len(sent)
    sid = ok("POST", "/sessions", {"name": "measured"})["session"]["session_id"]
    part("session", start)
    start = len(sent)
    for n in range(1, capacity.TURNS + 1):
        ok("POST", f"/sessions/{sid}/messages", {"content": capacity.MESSAGE.format(n=n)})
    part("turns_requests", start)
    if world.vectors is not None:  # what each of those turns' queries read (S3 Vectors)
        parts["query_data"] = capacity.query_data(world.vectors, user_vector_index("alice"))
    start = len(sent)
    world.drain()  # the conversations stream's compaction, the sessions stream's
    part("turns_streams", start)
    start = len(sent)
    ok("POST", f"/sessions/{sid}/end")
    world.drain()
    part("consolidation", start)
    return parts


def _migrate(world: DeployedWorld) -> dict[str, Any] | None:
    """S3 Vectors: every owner's memories moved into the shared index (as a deployment made
    before per-user indexes kept them), then the migration function run over it."""
    found = [f for f in world.functions.values() if f.handler == "handlers.migrate_memory.handler"]
    if found and world.opensearch is not None:
        return _migrate_domain(world, found[0])
    if not found or world.vectors is None:
        return None
    vectors = world.vectors
    shared = vectors.indexes[schema.MEMORY_INDEX]
    before = {k: v for i in vectors.user_indexes().values() for k, v in i.vectors.items()}
    for (bucket, name), index in vectors.user_indexes().items():
        shared.vectors.update(index.vectors)
        del vectors.buckets[bucket][name]
    answer = world.invoke(found[0], {"token": None})
    after = {k: v for i in vectors.user_indexes().values() for k, v in i.vectors.items()}
    # Copied as they were; what is left behind is what no caller can reach (the entry of a
    # record that expired a moment ago, before DynamoDB's TTL and its purge removed it).
    return {
        "moved": len(before),
        "answer": answer,
        "as_they_were": all(after[key] == before[key] for key in after),
        "left": sorted(
            {json.loads(before[k][1]["doc"]).get("record_id") for k in set(before) - set(after)}
        ),
        "copied": len(after),
    }


def _migrate_domain(world: DeployedWorld, function: Any) -> dict[str, Any]:
    """A domain: every memory of the new generation moved into the old index as an earlier
    version kept them (unrouted; every other one without its vector, as an index made with
    `_source.excludes`), then the migration function run over it."""
    domain = world.opensearch
    assert domain is not None
    old, new = schema.MEMORY_INDEX, schema.memory_index_base(1)
    current = domain.indexes[new]
    before = {key: dict(doc) for key, doc in current["docs"].items()}
    domain.indexes[old] = {
        "body": json.loads(json.dumps(current["body"])),
        "docs": {},
        "routing": {},
    }
    for n, (key, doc) in enumerate(sorted(before.items())):
        domain.indexes[old]["docs"][key] = {
            k: v for k, v in doc.items() if not (n % 2 and k == "embedding")
        }
    current["docs"].clear()
    current["routing"].clear()
    answer = world.invoke(function, {"token": None})
    after = current["docs"]
    return {
        "moved": len(before),
        "answer": answer,
        # Copied as they were, the vectors kept in the old index's source or embedded again.
        "as_they_were": all(after[key] == before[key] for key in after),
        "routed": all(current["routing"][key] == doc["user_id"] for key, doc in after.items()),
        "left": sorted({before[k].get("record_id") for k in set(before) - set(after)}),
        "copied": len(after),
    }


def _checkpoint_body(parent: str | None, values: dict[str, bytes], versions: dict[str, str]) -> Any:
    import base64

    return {
        "checkpoint_ns": "",
        **({"parent_checkpoint_id": parent} if parent else {}),
        "checkpoint": {"type": "msgpack", "data": base64.b64encode(b"checkpoint").decode()},
        "metadata": {"type": "msgpack", "data": base64.b64encode(b"metadata").decode()},
        "metadata_json": {"source": "loop", "step": len(values)},
        "channel_versions": versions,
        "blobs": [
            {
                "channel": channel,
                "version": versions[channel],
                "type": "msgpack",
                "data": base64.b64encode(data).decode(),
            }
            for channel, data in values.items()
        ],
    }


def _checkpoints(world: DeployedWorld) -> dict[str, Any]:
    import base64
    import os

    ok, call = world.ok, world.call
    thread = ok("POST", "/sessions", {"name": "graph"})["session"]["session_id"]
    base = f"/sessions/{thread}/checkpoints"
    big = os.urandom(900_000)  # three items' worth
    ok(
        "PUT",
        f"{base}/1ef-1",
        _checkpoint_body(None, {"messages": big, "step": b"1"}, {"messages": "1", "step": "1"}),
    )
    ok(
        "PUT",
        f"{base}/1ef-2",
        _checkpoint_body("1ef-1", {"step": b"2"}, {"messages": "1", "step": "2"}),
    )
    writes = {
        "task_id": "task-1",
        "writes": [
            {
                "idx": 0,
                "channel": "messages",
                "type": "msgpack",
                "data": base64.b64encode(big[:400_000]).decode(),
            },
            {"idx": -1, "channel": "__error__", "type": "msgpack", "data": "AA=="},
        ],
    }
    assert call("PUT", f"{base}/1ef-2/writes", writes).status == 204
    got = ok("GET", f"{base}/1ef-2?checkpoint_ns=")["checkpoint"]
    listed = ok("GET", f"{base}?checkpoint_ns=&limit=10&filter=%7B%22source%22%3A%22loop%22%7D")
    too_big = os.urandom(2_200_000)
    refused = call(
        "PUT",
        f"{base}/1ef-3",
        _checkpoint_body("1ef-2", {"step": too_big}, {"messages": "1", "step": "3"}),
    )
    assert call("DELETE", f"/sessions/{thread}").status == 204
    world.drain()
    left = boto3_client(world).query(
        TableName=world.table_names["checkpoints"],
        KeyConditionExpression="session_id = :s",
        ExpressionAttributeValues={":s": {"S": thread}},
    )["Items"]
    return {
        "read_back": base64.b64decode(
            next(v["data"] for v in got["values"] if v["channel"] == "messages")
        )
        == big,
        "writes": len(got["writes"]),
        "listed": len(listed["checkpoints"]),
        "too_big": refused.status,
        "left_after_purge": len(left),
    }


def boto3_client(world: DeployedWorld) -> Any:
    """The test's own reads of DynamoDB Local (no function sends them)."""
    import boto3

    return boto3.client("dynamodb", endpoint_url=world.dynamodb_endpoint, region_name=world.region)


def _age(world: DeployedWorld, session_id: str, *, hours: float) -> None:
    """Move a session's last activity back, as if nobody had written for `hours` (the test's
    own write: no function sends it)."""
    from datetime import UTC, datetime, timedelta

    import boto3

    when = (datetime.now(UTC) - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    boto3.client(
        "dynamodb", endpoint_url=world.dynamodb_endpoint, region_name=world.region
    ).update_item(
        TableName=world.table_names["sessions"],
        Key={schema.SESSION_ID: {"S": session_id}},
        UpdateExpression=f"SET {schema.LAST_ACTIVE_AT} = :t, {schema.IDLE_BUCKET} = :b",
        ExpressionAttributeValues={":t": {"S": when}, ":b": {"S": schema.idle_bucket(when)}},
    )


@pytest.fixture(scope="module", params=sorted(PROFILES))
def outcome(
    request: pytest.FixtureRequest,
    dynamodb_local: Any,
    synth_cache: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Outcome]:
    settings, region, long_turns, long_text = PROFILES[request.param]
    synth = synth_cache(**settings)
    # A stack name of its own per profile: both deploy into one DynamoDB Local.
    stack_name = f"{synth.stack.stack_name}-{request.param}"
    deployment = deployment_of(synth.json, region=region, stack_name=stack_name)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
            "POWERTOOLS_METRICS_NAMESPACE": "ChatMemoryContract",
            "POWERTOOLS_DEV": "0",
        }.items():
            patch.setenv(key, value)
        patch.delenv("AWS_PROFILE", raising=False)
        world = DeployedWorld(deployment, dynamodb_local.endpoint, tmp_path_factory.mktemp("esm"))
        with world.started():
            notes = run_scenario(world, long_turns, long_text)
        judge = Judge(
            deployment,
            world.functions,
            security_roles=world.opensearch.roles if world.opensearch else {},
            security_mappings=world.opensearch.role_mappings if world.opensearch else {},
        )
        yield Outcome(world, judge, judge.problems(world.recorder.sent), notes)


def test_every_request_fits_its_service_and_its_functions_grants(outcome: Outcome) -> None:
    report = "\n".join(str(p) for p in outcome.problems[:40])
    assert outcome.problems == [], f"{len(outcome.problems)} problems:\n{report}"


def test_the_scenario_works_as_a_user_would_see_it(outcome: Outcome) -> None:
    notes = outcome.notes
    assert notes["outage_status"] == 503
    assert notes["long_export"][1] == notes["long_turns"]
    count, more = notes["wordy_page"]
    assert 0 < count < 100 and more  # cut by DynamoDB's 1 MB, the next page follows
    assert notes["retried_for_agent"] is True
    assert [r["record_id"] for r in notes["store_search"]] == ["memories:alice:k1"]
    assert notes["store_search"][0]["score"] is not None
    assert ["memories"] in notes["namespaces"] and ["profile"] in notes["namespaces"]
    assert set(notes["statuses"].values()) == {"CONSOLIDATED"}
    assert notes["idle_status"] in ("ENDED", "CONSOLIDATED")
    assert notes["doomed_status"] == "FAILED"
    assert list(notes["redrive"]["sessions"].values()) == ["consolidated"]
    if notes["migration"] is not None:  # the shared index or old generation of a deployment
        migration = notes["migration"]
        if "routed" in migration:  # a domain: each copy routed by its owner, and the entries
            # the old index kept no vector of embedded again by the migration function
            assert migration["routed"], migration
            migrate = outcome.world.by_handler("handlers.migrate_memory.handler").logical_id
            sent_by_migration = {
                (s.service, s.operation)
                for s in outcome.world.recorder.sent
                if s.function == migrate
            }
            assert ("sagemaker-runtime", "InvokeEndpoint") in sent_by_migration, sent_by_migration
        answer = migration["answer"]
        assert answer["done"] and migration["as_they_were"], migration
        assert answer["copied"] == migration["copied"] > 0
        assert answer["copied"] + answer["skipped"] == migration["moved"]
        assert migration["left"] in ([], ["memories:alice:brief"])  # expired: not copied
    assert notes["memories"], "nothing recalled after consolidation"
    assert notes["bob_deletions"]["complete"] is True
    assert notes["checkpoints"] == {
        "read_back": True,
        "writes": 2,
        "listed": 2,
        "too_big": 413,
        "left_after_purge": 0,
    }
    assert notes["openai"] == (True, 2, ["chatmemory"])
    assert notes["put_statuses"] == [201, 200]
    assert notes["thread_continued"] is not None
    assert notes["thread_after_delete"] == 404
    assert (notes["expired_get"], notes["expired_put"]) == (404, 201)
    assert notes["ttl_purge"] == {"batchItemFailures": []}
    [(text, provenance, kept)] = notes["cat_records"]
    assert text == "My cat is called Tom." and provenance == [kept]
    status, events = notes["streamed"]
    names = [name for name, _ in events]
    assert status == 200 and names[0] == "memory" and names[-1] == "turn", events
    text = "".join(data["text"] for name, data in events if name == "delta")
    assert text and text == events[-1][1]["turn"]["response"]
    status, replayed = notes["stream_replayed"]
    assert (
        status == 200
        and replayed[-1] == events[-1]
        and [n for n, _ in replayed]
        == [
            "delta",
            "turn",
        ]
    )
    status, refused = notes["stream_refused"]
    assert status == 400 and refused[0][0] == "json"


def test_the_stream_function_streams_its_answers_where_the_model_can(outcome: Outcome) -> None:
    """The stream function's model calls (judged against its own grants above): Bedrock's
    ConverseStream, or FLAN-T5's whole answer, which cannot stream. The one OpenAI request of
    the scenario without `stream` (also the stream function's route) is answered whole."""
    world = outcome.world
    stream = world.by_handler("stream.sh").logical_id
    sent = Counter(
        f"{s.service} {s.operation}" for s in world.recorder.sent if s.function == stream
    )
    if world.models.text_endpoint:
        assert sent["sagemaker-runtime InvokeEndpoint"] and not sent["bedrock-runtime Converse"]
    else:
        assert sent["bedrock-runtime ConverseStream"] and sent["bedrock-runtime Converse"] == 1


def test_the_capacity_model_counts_the_requests_the_scenario_sends(
    outcome: Outcome, request: pytest.FixtureRequest
) -> None:
    """scripts/capacity/measured.json holds what a session, its turns and its consolidation
    send in this scenario (CHATMEMORY_RECORD_CAPACITY=1 writes it): the capacity model's
    input is what the code does, measured, not an assumption."""
    profile = request.node.callspec.params["outcome"]
    if profile == "migrating":
        pytest.skip("the default profile's requests, with its deletions sent to an old index too")
    measured = outcome.notes["measured"]
    kept = capacity.check_or_record(profile, measured)
    if kept is None:
        pytest.skip(f"recorded {capacity.MEASURED.name} for {profile}")
    assert kept, f"{capacity.MEASURED} has no part for {profile}: make capacity ARGS=--measure"
    data, kept_data = measured.get("query_data"), kept.get("query_data")
    if data or kept_data:
        # The caller's own index is the measured session's user's alone; every user's memories
        # hold an entry or two whose presence depends on timing (a record of a 1-second expiry).
        own = ("own_index_vectors", "own_index_bytes")
        assert {k: data[k] for k in own} == {k: kept_data[k] for k in own}
        assert data["all_users_bytes"] == pytest.approx(kept_data["all_users_bytes"], rel=0.1)
    for name in ("session", "turns_requests", "turns_streams", "consolidation"):
        counts = {_row_key(r): r["count"] for r in measured[name]}
        assert counts == {_row_key(r): r["count"] for r in kept[name]}, name
        for row, old in zip(measured[name], kept[name], strict=True):
            assert abs(row["units"] - old["units"]) <= max(1.0, 0.1 * old["units"]), (name, row)


def _row_key(row: dict[str, Any]) -> str:
    return f"{row['function']} {row['service']} {row['operation']} {row['resource']}"


def test_a_sessions_purge_writes_again_the_entry_of_a_record_that_stays(outcome: Outcome) -> None:
    """The purge's own model and index requests (judged against its grants above)."""
    purge = outcome.world.by_handler("handlers.purge.handler").logical_id
    sent = {(s.service, s.operation) for s in outcome.world.recorder.sent if s.function == purge}
    assert any(operation == "InvokeModel" for _, operation in sent) or any(
        operation == "InvokeEndpoint" for _, operation in sent
    ), sorted(sent)


def test_compaction_extended_a_rolling_summary(outcome: Outcome) -> None:
    """Failed before (issue 46): no open session was past COMPACT_AFTER_TURNS at a drain, so
    the compaction function only ever read sessions and stopped; its model call and its
    update of the summary were never judged against its grants."""
    world = outcome.world
    compact = world.by_handler("handlers.compact.handler").logical_id
    sent = Counter(
        f"{s.service} {s.operation}" for s in world.recorder.sent if s.function == compact
    )
    models = sent["bedrock-runtime Converse"] + sent["sagemaker-runtime InvokeEndpoint"]
    assert models and sent["dynamodb Query"] and sent["dynamodb UpdateItem"], sent


def test_every_function_of_the_template_ran(outcome: Outcome) -> None:
    ran = {s.function for s in outcome.world.recorder.sent}
    runtime = {
        f.logical_id for f in outcome.world.functions.values() if f.handler.startswith("handlers.")
    }
    assert runtime <= ran, f"never sent a request: {sorted(runtime - ran)}"


def test_requests_per_function_are_reported(outcome: Outcome) -> None:
    """Not an assertion of numbers: the table the closing note quotes (pytest -s shows it):
    requests per function and operation, with the largest payload of each."""
    table = outcome.operations()
    largest: dict[tuple[str, str], int] = {}
    for sent in outcome.world.recorder.sent:
        key = (sent.function, f"{sent.service} {sent.operation}")
        largest[key] = max(largest.get(key, 0), sent.payload_bytes)
    lines = [
        f"{count:5d} {largest[key]:>11,d} B  {key[0]:42s} {key[1]}"
        for key, count in sorted(table.items())
    ]
    print("\n" + "\n".join(lines))
    assert sum(table.values()) == len(outcome.world.recorder.sent)
