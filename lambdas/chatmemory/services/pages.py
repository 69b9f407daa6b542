"""Pages of a store's listing cut to what one answer may carry."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

from chatmemory import limits
from chatmemory.domain import Page, Turn
from chatmemory.limits import Room
from chatmemory.ports import TurnStore

T = TypeVar("T")


def fitted_page(
    read: Callable[[int], Page[T]],
    limit: int,
    size_of: Callable[[T], int] | None,
    page_bytes: int,
) -> Page[T]:
    """`read(limit)`, a store's page of at most `limit` items; when its items do not fit
    `page_bytes` by `size_of`, the page read again with the limit cut to those that fit, so
    that the store's token goes on right after them. (A DynamoDB page is 1 MB at most, but an
    answer measures its text escaped: a control character is 7 bytes there.) A page that
    filters may come back with fewer items; every read has a smaller limit, down to one."""
    page = read(limit)
    if size_of is None:
        return page
    while (count := limits.fitting(page.items, size_of, page_bytes)) < len(page.items):
        page = read(count)
    return page


class TurnPage(NamedTuple):
    """A page of a session's turns asked for: at most `limit` after `next_token`, oldest first
    when `ascending`, and as many as fit `room` when given (at least one)."""

    limit: int
    next_token: str | None
    ascending: bool
    room: Room[Turn] | None = None


def turn_page(memory: TurnStore, session_id: str, asked: TurnPage) -> Page[Turn]:
    """The page of the session's turns `asked` for (fitted_page of list_turns)."""
    room = asked.room
    return fitted_page(
        lambda count: memory.list_turns(session_id, count, asked.next_token, asked.ascending),
        asked.limit,
        room.size_of if room else None,
        room.bytes if room else 0,
    )
