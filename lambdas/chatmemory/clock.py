"""Time as the system stores it: UTC, ISO 8601 with milliseconds, sortable as text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# Stored times sort as text, so every one has the same shape and a four-digit year. Times a
# client sends are held to a sane range: nothing before the Unix epoch (TTL and recency math
# start there), nothing more than a day ahead of this clock (a future "last activity" would
# keep a session from ever being idle).
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
MAX_AHEAD = timedelta(days=1)


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """Sortable UTC timestamp with milliseconds: the form every stored time uses."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{moment.microsecond // 1000:03d}Z"
    )


def parse_time(value: str) -> datetime | None:
    """A stored or client time as an aware datetime (naive means UTC); None if unreadable."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError, TypeError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def canonical_time(value: str, *, now: datetime | None = None) -> str:
    """A client's ISO 8601 time in the one stored form, or ValueError with a reason: outside
    EARLIEST .. now + MAX_AHEAD (year 1 or 9999 with an offset cannot even be shifted to UTC)."""
    if len(value) > 64:
        raise ValueError("not an ISO 8601 timestamp")
    moment = parse_time(value)
    if moment is None:
        raise ValueError("not an ISO 8601 timestamp")
    latest = (now or utc_now()) + MAX_AHEAD
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:
        raise ValueError("timestamp out of range") from None
    if not EARLIEST <= moment <= latest:
        raise ValueError(
            f"timestamp out of range ({EARLIEST:%Y-%m-%d} to a day after the server's clock)"
        )
    return iso(moment)
