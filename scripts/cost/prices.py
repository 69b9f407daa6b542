"""The price table (prices.toml): every price with its unit, date and source, read once."""

from __future__ import annotations

import datetime
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PRICES_FILE = Path(__file__).with_name("prices.toml")


@dataclass(frozen=True)
class Price:
    """One published price: `usd` per `unit`."""

    id: str
    usd: float
    unit: str
    source: str
    date: datetime.date
    unverified: str | None = None


@dataclass(frozen=True)
class Fact:
    """A quantity the prices depend on (a free tier, a minimum, the hours in a month)."""

    id: str
    value: float
    unit: str
    source: str
    date: datetime.date


@dataclass(frozen=True)
class PriceTable:
    """Prices and facts by id ("opensearch.instance.t3.small.search", "lambda.free_requests")."""

    date: datetime.date
    region: str
    currency: str
    path: Path
    prices: Mapping[str, Price]
    facts: Mapping[str, Fact]

    def usd(self, price_id: str) -> float:
        """The amount of a price, in the table's currency per its unit."""
        return self.price(price_id).usd

    def price(self, price_id: str) -> Price:
        """A price by id; MissingPrice names what to add to the table."""
        try:
            return self.prices[price_id]
        except KeyError:
            raise MissingPrice(price_id, self.path) from None

    def fact(self, fact_id: str) -> float:
        """The value of a fact (a free tier, a minimum) by id."""
        try:
            return self.facts[fact_id].value
        except KeyError:
            raise MissingPrice(fact_id, self.path) from None

    def has(self, price_id: str) -> bool:
        """Whether the table prices this id."""
        return price_id in self.prices

    @property
    def hours_per_month(self) -> float:
        """The hours an always-on resource bills in a month."""
        return self.fact("facts.hours_per_month")

    def unverified(self) -> list[Price]:
        """The prices marked as not checked against their page."""
        return [p for p in self.prices.values() if p.unverified]


class MissingPrice(KeyError):
    """The template holds something the table has no price for: add it to the table."""

    def __init__(self, price_id: str, path: Path) -> None:
        super().__init__(price_id)
        self.price_id = price_id
        self.path = path

    def __str__(self) -> str:
        return f"no price {self.price_id!r} in {self.path.name}: add it (with unit and source)"


def load(path: Path = PRICES_FILE) -> PriceTable:
    """Read and check the table: every entry ends up with a unit, a date and a source."""
    raw = tomllib.loads(path.read_text())
    date = raw.get("date")
    if not isinstance(date, datetime.date):
        raise ValueError(f"{path.name}: `date` must be a TOML date (YYYY-MM-DD)")
    prices: dict[str, Price] = {}
    facts: dict[str, Fact] = {}
    for entry_id, entry, source, when in _entries(raw, (), None, date):
        if not source:
            raise ValueError(f"{path.name}: {entry_id} has no source")
        unit = entry.get("unit")
        if not isinstance(unit, str) or not unit:
            raise ValueError(f"{path.name}: {entry_id} has no unit")
        if "usd" in entry:
            prices[entry_id] = Price(
                entry_id, float(entry["usd"]), unit, source, when, entry.get("unverified")
            )
        else:
            facts[entry_id] = Fact(entry_id, float(entry["value"]), unit, source, when)
    return PriceTable(date, str(raw["region"]), str(raw["currency"]), path, prices, facts)


@cache
def table() -> PriceTable:
    """The repository's price table."""
    return load()


def _entries(
    node: Mapping[str, Any], path: tuple[str, ...], source: str | None, date: datetime.date
) -> Iterator[tuple[str, Mapping[str, Any], str | None, datetime.date]]:
    source = node.get("source", source)
    date = node.get("date", date)
    for key, value in node.items():
        if not isinstance(value, dict):
            continue
        if "usd" in value or "value" in value:
            yield (
                ".".join((*path, key)),
                value,
                value.get("source", source),
                value.get("date", date),
            )
        else:
            yield from _entries(value, (*path, key), source, date)
