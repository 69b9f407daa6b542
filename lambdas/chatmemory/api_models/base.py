"""What every model of the chat API shares: the base models, the answer's size, the rules of
times, scores and identifiers, opaque next tokens, the error body."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Self, cast, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
)

from chatmemory import limits
from chatmemory.clock import canonical_time
from chatmemory.schema import (
    ID_MAX_LENGTH,
    ID_PATTERN,
    SourceKind,
)

if TYPE_CHECKING:
    from chatmemory.domain import Page


# What the items of one answer may take as sent (answer_bytes).
ANSWER_ITEMS_BYTES = limits.LAMBDA_ANSWER_ITEMS_BYTES


def answer_room(size_of: Callable[[Any], int]) -> limits.Room[Any]:
    """What one answer's items may take (ANSWER_ITEMS_BYTES), each measured by `size_of`."""
    return limits.Room(size_of, ANSWER_ITEMS_BYTES)


def answer_bytes(item: Any) -> int:
    """The bytes `item` (a model, or JSON data) adds to a Lambda answer: its JSON as the API
    serializes it (non-ASCII escaped: 6 bytes a character), inside the proxy answer's body
    string, which escapes its quotes and backslashes again; with a separator."""
    data = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
    return len(json.dumps(json.dumps(data, separators=(",", ":")))) - 1


class _Model(BaseModel):
    """Every model here: validators are built when a model is first used, not when the
    module is imported (each Lambda cold start imports it; most requests use a few models)."""

    model_config = ConfigDict(defer_build=True)


class _Strict(_Model):
    """A request body: unknown fields and loose types ("5" for 5, 1 for true) are refused."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


# What a client may store as one turn's answer (the bound an import has too).
MAX_STORED_RESPONSE_CHARS = 20_000
# A time a client sends: ISO 8601 in a sane range, stored in one canonical form.
Timestamp = Annotated[str, Field(max_length=64), AfterValidator(canonical_time)]
# Scores a client may send back (sources of an exported turn): finite, of a sane size and
# rounded to what our scores carry, so they store exactly (DynamoDB numbers stop at 38 digits,
# 1E+125 and 1E-130: 1e-300 would not store at all).
Score = Annotated[
    float,
    Field(allow_inf_nan=False, ge=-1e6, le=1e6, strict=False),
    AfterValidator(lambda score: round(score, 6)),
]


# The one rule of identifiers (schema.ID_PATTERN): what a client may send as a session id, a
# record id or a client_message_id, and what every id the API issues follows.
ID_RULE = f"1-{ID_MAX_LENGTH} letters, digits and _ . : - (at least one not a dot: never . or ..)"


def id_constraints(description: str) -> dict[str, Any]:
    """The rule as the constraints of a field or a parameter, with what this one names."""
    return {
        "min_length": 1,
        "max_length": ID_MAX_LENGTH,
        "pattern": ID_PATTERN,
        "description": f"{description} ({ID_RULE}).",
    }


def identifier(description: str) -> object:
    """The Field of an identifier in a request body: the rule, with what this one names."""
    return Field(**id_constraints(description))


ClientMessageId = Annotated[
    str, identifier("Idempotency key: a retry with the same id returns the stored turn")
]


class _Out(_Model):
    """An answer model, built from the domain object of the same name (its attributes)."""

    model_config = ConfigDict(from_attributes=True, defer_build=True)

    @classmethod
    def of(cls, item: Any) -> Self:
        """The answer model of a domain object."""
        return cls.model_validate(item)


class _Envelope(_Model):
    """An answer that holds one object under its name (`{"session": {...}}`), its first field:
    `of` builds it from the domain object, through that field's answer model (an `_Out`)."""

    @classmethod
    def of(cls, item: Any) -> Self:
        name, field = next(iter(cls.model_fields.items()))
        out = cast("type[_Out]", field.annotation)
        return cls(**{name: out.of(item)})


class _Listing(_Model):
    """A page of answers: the items under their name, its first field (a list of an `_Out`),
    then `next_token`. `of` builds it from a page of domain objects."""

    @classmethod
    def of(cls, page: Page[Any]) -> Self:
        name, field = next(iter(cls.model_fields.items()))
        (out,) = cast("tuple[type[_Out]]", get_args(field.annotation))
        items = [out.of(item) for item in page.items]
        return cls(**{name: items, "next_token": page.next_token})


class SourceOut(_Out):
    kind: SourceKind | str
    id: str
    title: str | None = None
    date: str | None = None
    score: float | None = None
    doc_id: str | None = None
    passage_id: str | None = None


def _token(data: dict[str, Any]) -> str:
    """An opaque next_token: `data` as JSON in URL-safe base64."""
    raw = json.dumps(data, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _token_data(token: str) -> Any:
    """What _token encoded (ValueError for what it cannot have made)."""
    return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


class DeletionStatus(_Out):
    complete: bool = Field(
        description="Everything the caller deleted or forgot is physically gone from storage."
    )
    sessions_pending: int = Field(description="Deleted sessions whose purge has not finished.")
    forget_requests_pending: int = Field(
        description="Forget requests whose sessions are not all queued for purging yet."
    )


class ErrorBody(_Model):
    code: str
    message: str


class ErrorEnvelope(_Model):
    error: ErrorBody
