"""The models of LangGraph checkpoints (routes/checkpoints.py,
services/conversation/checkpoints.py)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    Field,
)

from chatmemory.api_models.base import (
    _Model,
    _Strict,
    _token,
    _token_data,
    answer_bytes,
    identifier,
)
from chatmemory.domain import (
    Blob,
    ListPosition,
    is_identifier,
)
from chatmemory.errors import BadRequest
from chatmemory.schema import (
    MAX_CHECKPOINT_ITEM_BYTES,
    MAX_CHECKPOINT_JSON_DEPTH,
)

if TYPE_CHECKING:
    from chatmemory.services.conversation.checkpoints import CheckpointTuple


# --- LangGraph checkpoints (services/conversation/checkpoints.py) ---------------------------------

# Each value as LangGraph's serde wrote it: its type tag ("msgpack", "json", "bytes", "empty"...)
# and its bytes in standard base64. The server stores them and never reads inside.
Base64Data = Annotated[
    str,
    # No length here: the request's size is bounded by the API (6 MB), and the service refuses
    # what is over a checkpoint's limits with a 413 that says which.
    Field(pattern=r"^[A-Za-z0-9+/]*={0,2}$", description="The bytes, in standard base64."),
]
SerdeType = Annotated[str, Field(min_length=1, max_length=64, description="The serde's type tag.")]
ChannelName = Annotated[str, Field(min_length=1, max_length=256)]
ChannelVersion = Annotated[str, Field(min_length=1, max_length=128)]
CheckpointNs = Annotated[
    str,
    Field(
        max_length=1024,
        description="The checkpoint namespace: empty for the graph, 'node:task_id|...' for a "
        "subgraph.",
    ),
]
CheckpointId = Annotated[str, identifier("A checkpoint id (LangGraph's: a UUID v6)")]


def _bytes_of(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        raise BadRequest("data is not valid base64") from None


class SerializedValue(_Strict):
    type: SerdeType
    data: Base64Data

    def blob(self) -> Blob:
        return Blob(self.type, _bytes_of(self.data))

    @classmethod
    def of(cls, blob: Blob) -> SerializedValue:
        return cls(type=blob.type, data=base64.b64encode(blob.data).decode("ascii"))


class ChannelValueIn(_Strict):
    channel: ChannelName
    version: ChannelVersion
    type: SerdeType
    data: Base64Data


class PutCheckpointRequest(_Strict):
    checkpoint_ns: CheckpointNs = ""
    parent_checkpoint_id: CheckpointId | None = Field(
        default=None, description="The checkpoint this one follows (LangGraph's parent_config)."
    )
    checkpoint: SerializedValue = Field(description="The checkpoint without channel_values.")
    metadata: SerializedValue = Field(description="Its metadata, as the serde wrote it.")
    metadata_json: dict[str, Any] = Field(
        default_factory=dict,
        description="The same metadata as JSON: what list filters compare (top-level keys); "
        f"nested at most {MAX_CHECKPOINT_JSON_DEPTH} levels deep.",
    )
    channel_versions: dict[ChannelName, ChannelVersion] = Field(
        description="Every channel of the checkpoint and the version of its value (with the "
        f"checkpoint and its metadata, at most {MAX_CHECKPOINT_ITEM_BYTES} bytes: 413 above)."
    )
    blobs: list[ChannelValueIn] = Field(
        default_factory=list,
        max_length=1000,
        description="The values of the channels that changed (new versions); the others are "
        "read from earlier checkpoints of the namespace at the versions named.",
    )


class PendingWriteIn(_Strict):
    idx: int = Field(
        ge=-1000, le=1_000_000, description="Its index in the task's writes (<0: special)."
    )
    channel: ChannelName
    type: SerdeType
    data: Base64Data


class PutWritesRequest(_Strict):
    checkpoint_ns: CheckpointNs = ""
    task_id: Annotated[str, Field(min_length=1, max_length=256)]
    task_path: Annotated[str, Field(max_length=1024)] = ""
    writes: list[PendingWriteIn] = Field(max_length=1000)


class CheckpointRef(_Model):
    checkpoint_ns: str
    checkpoint_id: str
    size: int = Field(description="The bytes of the checkpoint's channel values.")


class ChannelValueOut(_Model):
    channel: str
    version: str
    type: str
    data: str


class PendingWriteOut(_Model):
    task_id: str
    idx: int
    channel: str
    type: str
    data: str
    task_path: str


class CheckpointOut(_Model):
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None = None
    checkpoint: SerializedValue
    metadata: SerializedValue
    channel_versions: dict[str, str]
    created_at: str
    values: list[ChannelValueOut]
    writes: list[PendingWriteOut]

    @classmethod
    def of(cls, found: CheckpointTuple) -> CheckpointOut:
        c = found.checkpoint
        return cls(
            checkpoint_ns=c.checkpoint_ns,
            checkpoint_id=c.checkpoint_id,
            parent_checkpoint_id=c.parent_checkpoint_id,
            checkpoint=SerializedValue.of(c.checkpoint),
            metadata=SerializedValue.of(c.metadata),
            channel_versions=c.channel_versions,
            created_at=c.created_at,
            values=[
                ChannelValueOut(
                    channel=channel,
                    version=c.channel_versions[channel],
                    type=blob.type,
                    data=base64.b64encode(blob.data).decode("ascii"),
                )
                for channel, blob in found.values.items()
            ],
            writes=[
                PendingWriteOut(
                    task_id=w.task_id,
                    idx=w.idx,
                    channel=w.channel,
                    type=w.value.type,
                    data=base64.b64encode(w.value.data).decode("ascii"),
                    task_path=w.task_path,
                )
                for w in found.writes
            ],
        )


class CheckpointEnvelope(_Model):
    checkpoint: CheckpointOut


class CheckpointList(_Model):
    checkpoints: list[CheckpointOut]
    next_before: str | None = Field(
        default=None,
        description="More may follow: the id of the last checkpoint of the page (a page "
        "carries what fits one answer, at most 6 MB). Ask again with next_token, which also "
        "says its namespace: before=next_before skips, in a listing of every namespace, a "
        "checkpoint of another namespace with that id.",
    )
    next_token: str | None = Field(
        default=None,
        description="More may follow: ask again with next_token (and the same checkpoint_ns, "
        "filter and limit) for the next page.",
    )

    @classmethod
    def page(
        cls, found: Sequence[CheckpointTuple], next_position: ListPosition | None
    ) -> CheckpointList:
        return cls(
            checkpoints=[CheckpointOut.of(t) for t in found],
            next_before=next_position.checkpoint_id if next_position else None,
            next_token=(
                _token({"id": next_position.checkpoint_id, "ns": next_position.checkpoint_ns})
                if next_position
                else None
            ),
        )


def list_position(token: str | None) -> ListPosition | None:
    """Where a listing's next_token says its next page starts (None without one)."""
    if not token:
        return None
    try:
        data = _token_data(token)
        position = ListPosition(data["id"], data["ns"])
        valid = set(data) == {"id", "ns"} and all(isinstance(v, str) for v in position)
    except (ValueError, TypeError, KeyError, AttributeError):
        valid = False
    if not valid or not is_identifier(position.checkpoint_id):
        raise BadRequest("next_token is not valid")
    return position


def checkpoint_bytes(found: CheckpointTuple) -> int:
    """A listed checkpoint's size in the answer: its state, values and writes, in base64."""
    return answer_bytes(CheckpointOut.of(found))
