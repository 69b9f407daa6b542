"""Items of the three tables and the domain objects they hold, in DynamoDB's JSON."""

from __future__ import annotations

from dataclasses import asdict, fields
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from chatmemory import schema
from chatmemory.domain import (
    Feedback,
    MemoryRecord,
    Provenance,
    PurgeEntry,
    Sentiment,
    Session,
    Source,
    Turn,
    UserState,
)
from chatmemory.schema import (
    Intent,
    RecordOrigin,
    RecordStatus,
    RecordType,
    SentimentLabel,
    SessionStatus,
    SourceKind,
    TurnOrigin,
)

_ser = TypeSerializer()
_de = TypeDeserializer()

# A session item holds the Session dataclass's fields under their own names (session_id,
# user_id, status, started_at and last_active_at being schema.py's key attributes).
_SESSION_FIELDS = [f.name for f in fields(Session)]


def to_dynamo(value: Any) -> Any:
    """Floats become Decimals and None values are dropped (DynamoDB stores neither)."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: to_dynamo(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [to_dynamo(v) for v in value]
    return value


def from_dynamo(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_dynamo(v) for v in value]
    return value


def serialize_value(value: Any) -> dict[str, Any]:
    """One attribute value in DynamoDB's JSON (for expression values)."""
    return dict(_ser.serialize(to_dynamo(value)))


def serialize(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(v) for k, v in to_dynamo(item).items()}


def deserialize(item: dict[str, Any]) -> dict[str, Any]:
    return from_dynamo({k: _de.deserialize(v) for k, v in item.items()})


def open_shard(session_id: str, state: str = SessionStatus.OPEN) -> str:
    """Spread sessions in `state` over OPEN_SHARDS partitions of the sweeper's sparse index."""
    return schema.sweep_shard_of(session_id, state)


idle_bucket = schema.idle_bucket


# Statuses whose sessions the sweeper watches through the sparse index.
_SWEPT = (SessionStatus.OPEN, SessionStatus.ENDED, SessionStatus.IMPORTING, SessionStatus.DELETING)


def session_to_item(session: Session) -> dict[str, Any]:
    item = {name: getattr(session, name) for name in _SESSION_FIELDS}
    if not session.forgotten_facts:  # DynamoDB stores no empty set
        del item["forgotten_facts"]
    if session.handoff_state:
        item[schema.HANDOFF_QUEUE] = session.handoff_state
    if session.status in _SWEPT:
        item[schema.OPEN_SHARD] = open_shard(session.session_id, session.status)
        since = session.ended_at if session.status == SessionStatus.ENDED else ""
        item[schema.IDLE_BUCKET] = idle_bucket(since or session.last_active_at)
    return item


def session_from_item(item: dict[str, Any]) -> Session:
    data = deserialize(item)
    values = {k: data[k] for k in _SESSION_FIELDS if k in data}
    if schema.STATUS in values:
        values[schema.STATUS] = SessionStatus(values[schema.STATUS])
    if "forgotten_facts" in values:
        values["forgotten_facts"] = frozenset(values["forgotten_facts"])
    return Session(**values)


def user_from_item(user_id: str, item: dict[str, Any] | None) -> UserState:
    if not item:
        return UserState(user_id)
    data = deserialize(item)
    return UserState(
        user_id=user_id,
        generation=int(data.get(schema.GENERATION, 0)),
        purges=[PurgeEntry(**entry) for entry in data.get(schema.PURGES, [])],
        purge_round=int(data.get(schema.PURGE_ROUND, 0)),
    )


def _source_item(source: Source) -> dict[str, Any]:
    return {k: v for k, v in asdict(source).items() if v is not None}


def _source(data: dict[str, Any]) -> Source:
    kind = data.get("kind", SourceKind.SESSION)
    known = kind in set(SourceKind)
    return Source(**{**data, "kind": SourceKind(kind) if known else kind})


def record_to_item(record: MemoryRecord) -> dict[str, Any]:
    item = asdict(record)
    # A provenance's own words only where they are not the record's (most have none).
    item["provenance"] = [
        {k: v for k, v in asdict(p).items() if k != "text" or v is not None}
        for p in record.provenance
    ]
    # The namespace as its path (schema.namespace_path): listing filters on its prefix.
    del item["namespace"]
    if record.namespace:
        item[schema.RECORD_NAMESPACE] = schema.namespace_path(record.namespace)
    if not record.generation:
        del item["generation"]
    if record.expires_at is None:
        del item[schema.EXPIRES_AT]
    if not record.category:
        del item["category"]
    if record.indexed:
        del item["indexed"]
    if record.in_profile:
        item[schema.PROFILE_RANK] = record.profile_rank
    return item


def record_from_item(item: dict[str, Any]) -> MemoryRecord:
    data = deserialize(item)
    return MemoryRecord(
        record_id=data[schema.RECORD_ID],
        user_id=data[schema.USER_ID],
        type=RecordType(data["type"]),
        text=data.get("text", ""),
        created_at=data.get("created_at", ""),
        updated_at=data.get("updated_at", ""),
        origin=RecordOrigin(data.get("origin", RecordOrigin.EXTRACTED)),
        status=RecordStatus(data.get(schema.STATUS, RecordStatus.ACTIVE)),
        subject=data.get("subject", ""),
        provenance=[Provenance(**p) for p in data.get("provenance", [])],
        superseded_by=data.get("superseded_by"),
        valid_until=data.get("valid_until"),
        version=int(data.get("version", 0)),
        namespace=schema.namespace_of_path(data.get(schema.RECORD_NAMESPACE, "")),
        generation=data.get("generation", ""),
        expires_at=int(data[schema.EXPIRES_AT]) if schema.EXPIRES_AT in data else None,
        category=data.get("category", ""),
        indexed=bool(data.get("indexed", True)),
    )


def turn_to_item(turn: Turn) -> dict[str, Any]:
    item: dict[str, Any] = {
        "session_id": turn.session_id,
        "turn": turn.turn,
        "user_id": turn.user_id,
        "input": turn.input,
        "response": turn.response,
        "intent": turn.intent,
        "sources": [_source_item(s) for s in turn.sources],
        "model": turn.model,
        "created_at": turn.created_at,
        "client_message_id": turn.client_message_id,
        "prompt": turn.prompt,
        "latency_ms": turn.latency_ms,
        "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens,
        "expires_at": turn.expires_at,
    }
    if turn.pending:
        item["pending"] = True
    if turn.degraded:
        item["degraded"] = True
    if not turn.remember_response:
        item["remember_response"] = False
    # Written only when set: a chat turn's item (and its write units) stays as it was.
    if turn.origin != TurnOrigin.CHAT:
        item["origin"] = turn.origin
    if turn.metadata:
        item["metadata"] = turn.metadata
    if turn.feedback is not None:
        item["feedback"] = asdict(turn.feedback)
    if turn.sentiment is not None:
        # About 40 bytes: {"label": "negative", "score": -0.6114}.
        item["sentiment"] = asdict(turn.sentiment)
    if turn.agent_id:
        item["agent_id"] = turn.agent_id
    if turn.answered_by is not None:
        item["answered_by"] = turn.answered_by
    if turn.answering_until is not None:
        item["answering_until"] = turn.answering_until
    if turn.for_agent:
        item["for_agent"] = True
    if turn.stopped:
        item["stopped"] = True
    if turn.messages is not None:
        item["messages"] = turn.messages
    return item


def turn_from_item(item: dict[str, Any]) -> Turn:
    data = deserialize(item)
    return Turn(
        session_id=data["session_id"],
        turn=data["turn"],
        user_id=data.get("user_id", ""),
        input=data.get("input", ""),
        response=data.get("response"),
        intent=Intent(data.get("intent", Intent.CHAT)),
        sources=[_source(s) for s in data.get("sources", [])],
        model=data.get("model", ""),
        created_at=data.get("created_at", ""),
        client_message_id=data.get("client_message_id"),
        prompt=data.get("prompt"),
        latency_ms=data.get("latency_ms"),
        input_tokens=data.get("input_tokens"),
        output_tokens=data.get("output_tokens"),
        pending=bool(data.get("pending", False)),
        degraded=bool(data.get("degraded", False)),
        remember_response=bool(data.get("remember_response", True)),
        expires_at=data.get("expires_at"),
        origin=TurnOrigin(data.get("origin", TurnOrigin.CHAT)),
        metadata=dict(data.get("metadata") or {}),
        feedback=Feedback(**data["feedback"]) if data.get("feedback") else None,
        sentiment=_sentiment(data.get("sentiment")),
        agent_id=data.get("agent_id"),
        messages=data.get("messages"),
        answered_by=data.get("answered_by"),
        for_agent=bool(data.get("for_agent", False)),
        answering_until=data.get("answering_until"),
        stopped=bool(data.get("stopped", False)),
    )


def _sentiment(data: Any) -> Sentiment | None:
    if not isinstance(data, dict) or data.get("label") not in set(SentimentLabel):
        return None
    return Sentiment(SentimentLabel(data["label"]), float(data.get("score", 0)))
