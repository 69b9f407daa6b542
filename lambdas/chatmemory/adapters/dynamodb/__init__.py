"""Short-term memory on DynamoDB: the adapter (memory.py, composed of one part per aggregate:
users.py, sessions.py, handoff.py, records.py, turns.py; tables.py what they share), the
item codec (codec.py), page tokens (tokens.py) and the client wrapper that reports outages
(client.py)."""

from chatmemory.adapters.dynamodb.codec import deserialize, serialize
from chatmemory.adapters.dynamodb.memory import DynamoShortTermMemory

__all__ = ["DynamoShortTermMemory", "deserialize", "serialize"]
