"""Short-term memory on DynamoDB: the sessions, conversations, users and records tables of
schema.py, one module per aggregate (users, sessions, handoff, records, turns; tables.py what
they share), composed here into the one adapter of ports.ShortTermMemory."""

from __future__ import annotations

from chatmemory.adapters.dynamodb.handoff import DynamoHandoffStore
from chatmemory.adapters.dynamodb.records import DynamoRecordStore
from chatmemory.adapters.dynamodb.sessions import DynamoSessionStore
from chatmemory.adapters.dynamodb.turns import DynamoTurnStore
from chatmemory.adapters.dynamodb.users import DynamoUserStore


class DynamoShortTermMemory(
    DynamoUserStore, DynamoSessionStore, DynamoHandoffStore, DynamoRecordStore, DynamoTurnStore
):
    """SessionStore + TurnStore + RecordStore + HandoffStore on the sessions, conversations,
    users and records tables (physical names from the deployment): one client and one set of
    table names (DynamoTables.__init__) shared by every part."""
