"""The load a deployment is planned for, and the settings that follow from it: the stage's
throttle, the S3 vector buckets, the consolidation's concurrency and how fast the sweeper hands
lost consolidations back. Plain arithmetic (no aws_cdk): stacks/config.py derives its defaults
from it, and the capacity model (scripts/capacity) computes every component's peak rate with it.

The load is the issue's reading of a chat memory's users: each daily user sends 20 turns a day
in sessions of 10 turns, and the busiest second carries 5 times the day's average. Each number
is a setting of the capacity model (scripts/capacity/load.py) where it can be changed.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from chatmemory import limits

SECONDS_PER_DAY = 86_400


class Load(NamedTuple):
    """How the users of a deployment use it."""

    daily_users: int = 1_000_000
    turns_per_user_day: float = 20.0
    turns_per_session: float = 10.0
    peak_to_average: float = 5.0
    # Users with memories, for each daily user (people who came on other days): the users
    # whose long-term memory has an index of its own (S3 Vectors).
    users_per_daily_user: float = 3.0

    @property
    def turns_per_second(self) -> float:
        """Turns in the busiest second."""
        average = self.daily_users * self.turns_per_user_day / SECONDS_PER_DAY
        return average * self.peak_to_average

    @property
    def sessions_per_second(self) -> float:
        """Sessions ending in the busiest second (each one consolidated)."""
        return self.turns_per_second / self.turns_per_session

    def at(self, daily_users: int) -> Load:
        return self._replace(daily_users=daily_users)


# The stage throttle never below what a person trying the API needs (the former defaults).
MIN_THROTTLE_RATE = 20
MIN_THROTTLE_BURST = 40
# Requests a second for each turn a second: a turn is one POST, and the pages a client reads
# besides (its sessions, a session's messages) come to about as many again at most.
REQUESTS_PER_TURN = 2.0


def stage_throttle(load: Load) -> tuple[int, int]:
    """The stage's steady rate and burst (requests a second): the busiest second's requests,
    within the account's own API Gateway throttle (10,000 a second, burst 5,000: a quota to
    raise beyond that, which docs/cost.md names)."""
    rate = max(MIN_THROTTLE_RATE, math.ceil(load.turns_per_second * REQUESTS_PER_TURN))
    rate = min(rate, limits.APIGATEWAY_ACCOUNT_RATE)
    burst = min(max(MIN_THROTTLE_BURST, 2 * rate), limits.APIGATEWAY_ACCOUNT_BURST)
    return rate, burst


# An owners' bucket holds 10,000 indexes; hashing fills buckets unevenly (about 3 standard
# deviations over 1,000 buckets), so each is planned for 95% of that.
INDEXES_PLANNED_PER_BUCKET = int(limits.S3VECTORS_INDEXES_PER_BUCKET * 0.95)


def vector_buckets(load: Load) -> int:
    """S3 vector buckets for every user with memories to have an index of their own."""
    users = load.daily_users * load.users_per_daily_user
    return max(1, math.ceil(users / INDEXES_PLANNED_PER_BUCKET))


class ModelQuota(NamedTuple):
    """A model's requests a minute in the region (a Bedrock quota, or what an endpoint
    takes), and the share of it background work may use (the rest is the chat's)."""

    requests_per_minute: int
    background_share: float = 0.5


# A consolidation waits for its model calls one after another: about this long each (a
# summary or an extraction call of up to 256 new tokens on Nova Micro; not measured in AWS).
MODEL_CALL_SECONDS = 2.0
# Text model calls of one session's consolidation: its summary and the profile's extraction
# (bench.consolidation: at most 8 extraction calls a session, one for a short session).
CONSOLIDATION_MODEL_CALLS = 2.0


def consolidation_concurrency(quota: ModelQuota) -> int:
    """Consolidations running at once that keep within the background share of the text
    model's quota: each sends a request about every MODEL_CALL_SECONDS."""
    per_run = 60.0 / MODEL_CALL_SECONDS
    return max(1, math.floor(quota.requests_per_minute * quota.background_share / per_run))


def consolidations_per_minute(concurrency: int) -> float:
    """Sessions consolidated a minute by `concurrency` runs."""
    return concurrency * 60.0 / (MODEL_CALL_SECONDS * CONSOLIDATION_MODEL_CALLS)


def retries_per_sweep(concurrency: int, sweep_minutes: int) -> int:
    """Lost consolidations one sweep hands back: as many as consolidation takes until the next
    sweep, so a backlog is not handed over faster than it is worked off."""
    return max(1, math.floor(consolidations_per_minute(concurrency) * sweep_minutes))
