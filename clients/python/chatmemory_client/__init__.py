"""Python client of the chat memory API: `ChatMemoryClient`, its typed results and errors.

Integrations import their optional dependencies on their own: `chatmemory_client.langchain`
(LangChain chat message history), `chatmemory_client.langgraph`, `chatmemory_client.mcp`."""

from __future__ import annotations

__version__ = "0.1.0"

from chatmemory_client.client import ChatMemoryClient  # noqa: E402 - needs __version__
from chatmemory_client.errors import (  # noqa: E402
    BadRequest,
    ChatMemoryError,
    Conflict,
    ConnectionFailed,
    InvalidId,
    NotFound,
    PayloadTooLarge,
    ServerError,
    SessionEnded,
    Unauthorized,
    Unavailable,
)
from chatmemory_client.models import (  # noqa: E402
    DeletionStatus,
    Feedback,
    HandoffView,
    Memory,
    Provenance,
    Record,
    Sentiment,
    Session,
    Source,
    Turn,
)
from chatmemory_client.streaming import (  # noqa: E402
    DeltaEvent,
    ErrorEvent,
    MemoryEvent,
    MessageStream,
    StreamEvent,
    TurnEvent,
)

__all__ = [
    "BadRequest",
    "ChatMemoryClient",
    "ChatMemoryError",
    "Conflict",
    "ConnectionFailed",
    "DeletionStatus",
    "DeltaEvent",
    "ErrorEvent",
    "Feedback",
    "HandoffView",
    "InvalidId",
    "Memory",
    "MemoryEvent",
    "MessageStream",
    "NotFound",
    "PayloadTooLarge",
    "Provenance",
    "Record",
    "Sentiment",
    "ServerError",
    "Session",
    "SessionEnded",
    "Source",
    "StreamEvent",
    "Turn",
    "TurnEvent",
    "Unauthorized",
    "Unavailable",
    "__version__",
]
