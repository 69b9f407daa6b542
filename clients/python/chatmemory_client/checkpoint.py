"""A LangGraph checkpointer (`BaseCheckpointSaver`) over the chat memory API: each thread is a
session of the caller, whose checkpoints, channel values and pending writes the server keeps.

    saver = ChatMemorySaver(base_url="http://127.0.0.1:8000", user_id="alice")
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "alice-1"}})

The thread id is the session id (PUT /sessions/{id} creates the session the first time a
checkpoint is stored), so the conversation is one of the caller's sessions: listed, exported,
ended, consolidated and recalled like any chat. Each time a checkpoint's `messages` channel ends
with an answer (an AI message without tool calls after a human message), that exchange is stored
as the session's turn (`store_turns=False` stores none). A turn the API refuses (longer than
its limits for a turn's input and answer) does not stop the graph: it is logged and warned
about (`TurnNotStored`), or raised with `strict_turns=True`. `delete_thread` deletes the
session: checkpoints, writes and turns are unreachable at once and purged in the background.

Values are serialized here with LangGraph's serde and stored as bytes; the server never reads
them. A checkpoint's channel values may hold 2 MiB serialized, its pending writes 2 MiB (the
API answers 413, raised as `PayloadTooLarge`, above either).
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import contextlib
import hashlib
import json
import logging
import random
import threading
import warnings
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from chatmemory_client.client import ID_MAX_LENGTH, ID_PATTERN, ChatMemoryClient, _path, checked_id
from chatmemory_client.errors import BadRequest, NotFound, PayloadTooLarge, SessionEnded

__all__ = ["ChatMemorySaver", "TurnNotStored"]

log = logging.getLogger(__name__)

# The API's page size bound for a listing.
_MAX_PAGE = 100
# A version's step is its value divided by this (get_next_version): 12 random digits below it.
_VERSION_STEP = 10**12
# How many exchanges a saver remembers having stored (a retry or a later checkpoint of the same
# exchange sends nothing; the server also knows each by its client_message_id).
_REMEMBERED_TURNS = 4096


class TurnNotStored(UserWarning):
    """An exchange of a thread was not stored as a turn (the checkpoint was): longer than the
    API takes for a turn's input or answer, or the thread names an ended session by its server
    id."""


class ChatMemorySaver(BaseCheckpointSaver[int]):
    """LangGraph's checkpointer on one caller's chat memory sessions (sync and async)."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        user_id: str | None = None,
        token: str | None = None,
        client: ChatMemoryClient | None = None,
        serde: SerializerProtocol | None = None,
        store_turns: bool = True,
        strict_turns: bool = False,
    ) -> None:
        super().__init__(serde=serde)
        if client is None:
            if not base_url:
                raise ValueError("ChatMemorySaver needs base_url (or a ChatMemoryClient)")
            client = ChatMemoryClient(base_url, user_id=user_id, token=token)
        self.client = client
        self.store_turns = store_turns
        self.strict_turns = strict_turns
        self._stored_turns: dict[tuple[str, str], None] = {}
        self._lock = threading.Lock()

    # --- BaseCheckpointSaver ------------------------------------------------------------------

    def get_next_version(self, current: int | None, channel: None) -> int:
        """A channel's next version: the step number times 10**12 plus 12 random digits. As
        LangGraph's InMemorySaver and Postgres saver make theirs (the step, then a random
        fraction), two branches of a thread (a fork by update_state on an earlier checkpoint)
        never give one version two values, and a later step's version is greater. Unlike
        theirs it is an int, as this saver's versions were (1, 2, 3: LangGraph's default), so
        a thread stored with those goes on (LangGraph compares a thread's versions with each
        other, and an int with a string fails). The server keeps each (namespace, channel,
        version) once and refuses other bytes at a stored version (409)."""
        step = 0 if current is None else current // _VERSION_STEP or current
        return (step + 1) * _VERSION_STEP + random.randrange(_VERSION_STEP)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint of config's checkpoint_id, or the thread's newest in its namespace."""
        conf = config["configurable"]
        thread_id = _thread(conf)
        ns = conf.get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        try:
            if checkpoint_id:
                path = _path("sessions", thread_id, "checkpoints", checkpoint_id)
                answer = self.client._call("GET", path, params={"checkpoint_ns": ns})
                found = [answer["checkpoint"]]
            else:
                path = _path("sessions", thread_id, "checkpoints")
                answer = self.client._call("GET", path, params={"checkpoint_ns": ns, "limit": 1})
                found = answer["checkpoints"]
        except NotFound:  # no such session (thread), or no such checkpoint
            return None
        return self._tuple(thread_id, found[0]) if found else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The thread's checkpoints, newest first (config names the thread; without
        checkpoint_ns in it, of every namespace)."""
        if config is None:
            raise ValueError("ChatMemorySaver.list needs a config with a thread_id")
        cursor = _before(before)
        left = limit
        while left is None or left > 0:
            page, cursor = self._page(config, filter, cursor, left)
            yield from page
            if left is not None:
                left -= len(page)
            if not cursor:
                return

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store the checkpoint with the values of the channels in new_versions; then, if its
        messages end with an answer, that exchange as a turn of the session."""
        conf = config["configurable"]
        thread_id = _thread(conf)
        ns = conf.get("checkpoint_ns", "")
        values = dict(checkpoint["channel_values"])
        stripped = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        full_metadata = get_checkpoint_metadata(config, metadata)
        blobs = []
        for channel, version in new_versions.items():
            kind, data = (
                self.serde.dumps_typed(values[channel]) if channel in values else ("empty", b"")
            )
            blobs.append(
                {"channel": channel, "version": str(version), "type": kind, "data": _b64(data)}
            )
        body = {
            "checkpoint_ns": ns,
            "parent_checkpoint_id": conf.get("checkpoint_id"),
            "checkpoint": _typed(self.serde.dumps_typed(stripped)),
            "metadata": _typed(self.serde.dumps_typed(full_metadata)),
            "metadata_json": _jsonable(full_metadata),
            "channel_versions": {k: str(v) for k, v in checkpoint["channel_versions"].items()},
            "blobs": blobs,
        }
        if body["parent_checkpoint_id"] is None:
            del body["parent_checkpoint_id"]
        path = _path("sessions", thread_id, "checkpoints", checked_id(checkpoint["id"], "id"))
        self._in_session(thread_id, lambda: self.client._call("PUT", path, body))
        if self.store_turns and not ns and "messages" in new_versions:
            self._store_exchange(thread_id, values.get("messages"), checkpoint["id"])
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes for the config's checkpoint (idempotent by (task_id, idx))."""
        conf = config["configurable"]
        thread_id = _thread(conf)
        body = {
            "checkpoint_ns": conf.get("checkpoint_ns", ""),
            "task_id": task_id,
            "task_path": task_path,
            "writes": [
                {
                    "idx": WRITES_IDX_MAP.get(channel, idx),
                    "channel": channel,
                    **_typed(self.serde.dumps_typed(value)),
                }
                for idx, (channel, value) in enumerate(writes)
            ],
        }
        checkpoint_id = checked_id(conf["checkpoint_id"], "checkpoint id")
        path = _path("sessions", thread_id, "checkpoints", checkpoint_id, "writes")
        self._in_session(thread_id, lambda: self.client._call("PUT", path, body))

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's session: its checkpoints, writes and turns (nothing if none)."""
        with contextlib.suppress(NotFound):
            self.client._call("DELETE", _path("sessions", _thread({"thread_id": thread_id})))

    # --- async: the same calls off the event loop (the HTTP client is synchronous) ------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        if config is None:
            raise ValueError("ChatMemorySaver.alist needs a config with a thread_id")
        cursor = _before(before)
        left = limit
        while left is None or left > 0:
            page, cursor = await asyncio.to_thread(self._page, config, filter, cursor, left)
            for item in page:
                yield item
            if left is not None:
                left -= len(page)
            if not cursor:
                return

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    # --- helpers ------------------------------------------------------------------------------

    def _page(
        self,
        config: RunnableConfig,
        filter: dict[str, Any] | None,  # noqa: A002
        cursor: dict[str, str],
        left: int | None,
    ) -> tuple[builtins.list[CheckpointTuple], dict[str, str]]:
        """One page of a listing (from `cursor`: LangGraph's `before`, or the token of the
        page before), and the cursor of the next one (empty: no more)."""
        conf = config["configurable"]
        thread_id = _thread(conf)
        params: dict[str, Any] = {
            "checkpoint_ns": conf.get("checkpoint_ns"),
            **cursor,
            "limit": min(_MAX_PAGE, left) if left is not None else _MAX_PAGE,
            "filter": json.dumps(_jsonable(filter), separators=(",", ":")) if filter else None,
        }
        wanted = conf.get("checkpoint_id")
        try:
            answer = self.client._call(
                "GET", _path("sessions", thread_id, "checkpoints"), params=params
            )
        except NotFound:
            return [], {}
        found = [self._tuple(thread_id, item) for item in answer["checkpoints"]]
        if wanted:  # a config naming one checkpoint lists that one only
            found = [t for t in found if t.config["configurable"]["checkpoint_id"] == wanted]
        # The token says where the page ended, namespace included (a server before it only
        # says next_before: an id, which across namespaces can skip one of the same id).
        if answer.get("next_token"):
            return found, {"next_token": answer["next_token"]}
        return found, {"before": answer["next_before"]} if answer.get("next_before") else {}

    def _tuple(self, thread_id: str, item: dict[str, Any]) -> CheckpointTuple:
        checkpoint: Checkpoint = self.serde.loads_typed(_untyped(item["checkpoint"]))
        checkpoint["channel_values"] = {
            value["channel"]: self.serde.loads_typed((value["type"], _unb64(value["data"])))
            for value in item["values"]
            if value["type"] != "empty"
        }
        ns = item["checkpoint_ns"]
        parent = item.get("parent_checkpoint_id")
        return CheckpointTuple(
            config={
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": item["checkpoint_id"],
                }
            },
            checkpoint=checkpoint,
            metadata=self.serde.loads_typed(_untyped(item["metadata"])),
            parent_config=(
                {
                    "configurable": {
                        "thread_id": thread_id,
                        "checkpoint_ns": ns,
                        "checkpoint_id": parent,
                    }
                }
                if parent
                else None
            ),
            pending_writes=[
                (w["task_id"], w["channel"], self.serde.loads_typed((w["type"], _unb64(w["data"]))))
                for w in item["writes"]
            ],
        )

    def _in_session(self, thread_id: str, call: Any) -> Any:
        """`call`, after creating the thread's session if it has none yet (the first write)."""
        try:
            return call()
        except NotFound as error:
            if error.code != "session_not_found":
                raise
        self.client.ensure_session(thread_id)
        return call()

    def _store_exchange(self, thread_id: str, messages: Any, checkpoint_id: str) -> None:
        """The last exchange of `messages` as the session's turn, if it ends with an answer
        and was not stored yet (a retry is harmless: the server knows its client_message_id)."""
        exchange = last_exchange(messages)
        if exchange is None:
            return
        message_id, text, answer = exchange
        key = (thread_id, message_id)
        with self._lock:
            if key in self._stored_turns:
                return
        try:
            self.client.store_turn(
                thread_id,
                text,
                response=answer,
                client_message_id=message_id,
                metadata={"source": "langgraph", "checkpoint_id": checkpoint_id},
            )
        except (SessionEnded, PayloadTooLarge, BadRequest) as error:
            # The checkpoint is stored: the thread goes on. The turn is a copy for the memory
            # pipeline, refused for its length (the API's limits on input and answer) or as
            # the thread names an ended session by its server id (a client id continues it).
            if self.strict_turns:
                raise
            message = f"thread {thread_id}: the exchange is not stored as a turn: {error}"
            log.warning(message)
            warnings.warn(message, TurnNotStored, stacklevel=2)
            return
        with self._lock:
            self._stored_turns[key] = None
            while len(self._stored_turns) > _REMEMBERED_TURNS:
                self._stored_turns.pop(next(iter(self._stored_turns)))


def last_exchange(messages: Any) -> tuple[str, str, str] | None:
    """(client_message_id, what the user said, the answer) of the last human message and the
    AI message that answers it, when `messages` ends with that answer (an AI message without
    tool calls); None otherwise. Tool calls and results in between are not part of the turn."""
    if not isinstance(messages, list) or not messages:
        return None
    answer = messages[-1]
    if getattr(answer, "type", None) != "ai" or getattr(answer, "tool_calls", None):
        return None
    for message in reversed(messages[:-1]):
        if getattr(message, "type", None) == "human":
            text, reply = _text(message), _text(answer)
            if not text or not reply:
                return None
            return _message_id(message, text), text, reply
    return None


def _text(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content.strip()
    parts = [
        p if isinstance(p, str) else p.get("text", "")
        for p in content or []
        if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")
    ]
    return "\n".join(p for p in parts if p).strip()


def _message_id(message: Any, text: str) -> str:
    """The human message's id when the API accepts it as a client_message_id, else a digest."""
    found = getattr(message, "id", None)
    if isinstance(found, str) and len(found) <= ID_MAX_LENGTH and ID_PATTERN.match(found):
        return found
    return "lg-" + hashlib.sha256(f"{found}|{text}".encode()).hexdigest()[:40]


def _before(before: RunnableConfig | None) -> dict[str, str]:
    """The first page's cursor of a listing: LangGraph's `before` (a config), as its id."""
    checkpoint_id = get_checkpoint_id(before) if before else None
    return {"before": checkpoint_id} if checkpoint_id else {}


def _thread(conf: Any) -> str:
    return checked_id(conf["thread_id"], "thread id")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(data: str) -> bytes:
    return base64.b64decode(data)


def _typed(typed: tuple[str, bytes]) -> dict[str, str]:
    return {"type": typed[0], "data": _b64(typed[1])}


def _untyped(value: dict[str, str]) -> tuple[str, bytes]:
    return value["type"], _unb64(value["data"])


def _jsonable(value: Any) -> Any:
    """Metadata as JSON for the server's filters (what JSON cannot hold becomes its repr)."""
    return json.loads(json.dumps(value, default=repr))
