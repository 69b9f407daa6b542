"""Time expressions in a recall question ("on 3 June, 2023", "in May", "last week") as a window,
and how close a session's date is to it. `/past` uses this to favour sessions from the time
the question names: people recall conversations by when they happened."""

from __future__ import annotations

import calendar
import math
import re
from datetime import UTC, date, datetime, timedelta
from functools import cache
from typing import NamedTuple

from chatmemory.clock import parse_time

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
# A month name alone is a time only after one of these ("in May", not "May I ask").
_LEAD = r"(?:in|during|since|before|after|of|last|this|early|late|mid)"


@cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    """Most specific first: the first pattern that matches decides the window. Compiled on
    first use (a message whose memories are ranked, a /past question), not at every chat
    function's cold start."""
    return (
        re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I),  # 3 June, 2023
        re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I),  # June 3, 2023
        re.compile(rf"\b{_YEAR}-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b"),  # 2023-06-03
        re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I),  # June 2023
        re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b", re.I),  # 3 June
        re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\s*(?:am|pm|:))", re.I),  # June 3
        re.compile(rf"\b{_LEAD}[\s-]+{_MONTH}\b", re.I),  # in June, early June
        re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b", re.I),  # in 2022
    )


_RELATIVE = {
    "today": (0, 1),
    "yesterday": (1, 1),
    "last week": (7, 7),
    "this week": (6, 7),
    "last month": (31, 31),
    "this month": (30, 31),
}


class TimeWindow(NamedTuple):
    """[start, end) in UTC; an `any_year` window ("in May", "on 3 June") recurs every year."""

    start: datetime
    end: datetime
    any_year: bool = False

    def distance_days(self, moment: datetime) -> float:
        """Days from `moment` to the window (0 inside it)."""
        if self.any_year:
            years = (moment.year - 1, moment.year, moment.year + 1)
            return min(self._in_year(year).distance_days(moment) for year in years)
        if moment < self.start:
            return (self.start - moment).total_seconds() / 86_400
        if moment >= self.end:
            return (moment - self.end).total_seconds() / 86_400
        return 0.0

    def _in_year(self, year: int) -> TimeWindow:
        length = self.end - self.start
        try:
            start = self.start.replace(year=year)
        except ValueError:  # 29 February
            start = self.start.replace(year=year, day=28)
        return TimeWindow(start, start + length)

    def closeness(self, moment: datetime, half_life_days: float) -> float:
        """1.0 inside the window, halving every `half_life_days` outside it."""
        return math.pow(0.5, self.distance_days(moment) / half_life_days)


def timeliness(created_at: str, window: TimeWindow | None, half_life_days: float) -> float:
    """How close a stored time is to the time a message names (TimeWindow.closeness); 0.0
    without a window or a readable time."""
    moment = parse_time(created_at)
    if window is None or moment is None:
        return 0.0
    return window.closeness(moment, half_life_days)


def _month_range(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def _month_number(raw: str) -> int | None:
    return int(raw) if raw.isdigit() else _MONTHS.get(raw.lower().rstrip("."))


def time_window(question: str, now: datetime) -> TimeWindow | None:
    """The time a question refers to, or None when it names none."""
    lowered = question.lower()
    for phrase, (back, days) in _RELATIVE.items():
        if re.search(rf"\b{phrase}\b", lowered):
            start = datetime.combine(now.date() - timedelta(days=back), datetime.min.time())
            start = start.replace(tzinfo=UTC)
            return TimeWindow(start, start + timedelta(days=days))
    for pattern in _patterns():
        match = pattern.search(question)
        if match is None:
            continue
        parts = match.groupdict()
        month = _month_number(parts["month"]) if parts.get("month") else None
        year = int(parts["year"]) if parts.get("year") else None
        day = int(parts["day"]) if parts.get("day") else None
        try:
            if day and month:
                found = date(year or now.year, month, day)
                start = datetime(found.year, found.month, found.day, tzinfo=UTC)
                return TimeWindow(start, start + timedelta(days=1), any_year=year is None)
            if month and year:
                return TimeWindow(*_month_range(year, month))
            if month:
                return TimeWindow(*_month_range(now.year, month), any_year=True)
            if year:
                return TimeWindow(
                    datetime(year, 1, 1, tzinfo=UTC),
                    datetime(year + 1, 1, 1, tzinfo=UTC),
                )
        except ValueError:
            continue  # "31 February": not a date
    return None
