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

from chatmemory import limits, schema

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
    # Months of memories kept (turnTtlDays=0: never expired): what long-term memory holds.
    months_of_history: float = 12.0

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

    @property
    def sessions_per_day(self) -> float:
        return self.daily_users * self.turns_per_user_day / self.turns_per_session


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


# --- The OpenSearch domain (searchMode=domain) ---------------------------------------------------
#
# Long-term memory grows with the users and the months kept: every session leaves
# ENTRIES_PER_SESSION entries, each a vector of `dimension` floats with its text. The domain is
# sized for what `months_of_history` of the load leave: the k-NN graphs must fit the memory the
# k-NN plugin may use, the entries the data nodes' volumes, and the primary shards AWS's size
# guidance. An index's shard count is fixed when it is created, so it is planned for the load too.

HNSW_M = schema.HNSW_M
# Entries a consolidated session leaves in long-term memory (its windows, summary, opening and
# profile records), as the AWS contract scenario measures (scripts/capacity/measured.json); the
# capacity tests hold the measurement to this.
ENTRIES_PER_SESSION = 11
# An entry's stored _source without its vector (schema.SOURCE_EXCLUDES): its text, keys and
# times, as the scenario measures (the capacity tests hold the measurement to this).
SOURCE_BYTES_PER_ENTRY = 3_000
# AWS's "Sizing Amazon OpenSearch Service domains": an index takes about 10% more than its
# source, Linux reserves 5% and OpenSearch Service 20% of a volume, and 10% is kept for a node's
# failure: storage = data x copies x 1.45.
STORAGE_OVERHEAD = 1.45
# AWS's shard guidance: 10-50 GiB a shard (the upper end: entries are small, and a search of
# one user's memories reads one shard whatever its size); an index holds at most 1,024 primary
# shards (OpenSearch's index.number_of_shards).
SHARD_GIB = 50
# AWS's "Shard strategy": at most 25 shards a GiB of a data node's JVM heap.
SHARDS_PER_HEAP_GIB = 25
MAX_SHARDS = limits.OPENSEARCH_SHARDS_PER_INDEX
# The fewest data nodes of the smallest instance type that holds the load, up to this many;
# beyond, the largest type, as many as needed (AWS's default quota: 80 instances a domain).
PREFERRED_MAX_NODES = 10
GIB = 2**30


class SearchInstance(NamedTuple):
    """A data node's instance type: its memory and the largest gp3 volume it takes (GiB)."""

    name: str
    memory_gib: int
    max_volume_gib: int

    @property
    def heap_gib(self) -> float:
        """OpenSearch Service gives the JVM heap half of the memory, at most 32 GiB."""
        return min(self.memory_gib / 2, 32)

    @property
    def knn_memory_bytes(self) -> float:
        """What the k-NN plugin may use for graphs: half of what the heap leaves (its circuit
        breaker, knn.memory.circuit_breaker.limit: 50%)."""
        return (self.memory_gib - self.heap_gib) * 0.5 * GIB


# The ladder the domain is sized on (memory: AWS's instance types; the largest gp3 volume of
# each: OpenSearch Service quotas, "EBS volume size quotas", recalled, not re-read offline).
# t3 types only for a single node outside production (AWS does not recommend them there).
SEARCH_INSTANCES = (
    SearchInstance("t3.small.search", 2, 100),
    SearchInstance("t3.medium.search", 4, 200),
    SearchInstance("r6g.large.search", 16, 1_024),
    SearchInstance("r6g.xlarge.search", 32, 1_536),
    SearchInstance("r6g.2xlarge.search", 64, 3_072),
    SearchInstance("r6g.4xlarge.search", 128, 6_144),
    SearchInstance("r6g.8xlarge.search", 256, 12_288),
    SearchInstance("r6g.12xlarge.search", 384, 24_576),
)
# Dedicated master nodes (three) by data nodes, after AWS's "Choosing instance types for
# dedicated master nodes" (recalled, not re-read offline): (at most this many data nodes, type).
MASTER_INSTANCES = (
    (10, "m6g.large.search"),
    (30, "c6g.2xlarge.search"),
    (75, "r6g.2xlarge.search"),
    (125, "r6g.4xlarge.search"),
    (1_000, "r6g.8xlarge.search"),
)


def instance(name: str) -> SearchInstance | None:
    """The ladder's instance type of that name (None: one the sizing does not know)."""
    return next((i for i in SEARCH_INSTANCES if i.name == name), None)


def graph_bytes(dimension: int, on_disk: bool) -> float:
    """Memory of one vector in the HNSW graph of faiss: its vector (1 bit a dimension when on
    disk, 32x quantized; 4 bytes a dimension in memory) and its links, with 10% overhead."""
    return 1.1 * ((dimension / 8 if on_disk else 4 * dimension) + 8 * HNSW_M)


def entry_bytes(
    dimension: int, on_disk: bool, source_bytes: float = SOURCE_BYTES_PER_ENTRY
) -> float:
    """Disk of one entry: its full-precision vector (the k-NN plugin's doc values), the faiss
    file (graph and, on disk, the quantized vector; in memory, the vector again) and its
    source without the vector."""
    return 4 * dimension + graph_bytes(dimension, on_disk) / 1.1 + source_bytes


def memory_entries(load: Load) -> float:
    """Entries in long-term memory after `months_of_history` of the load."""
    return load.sessions_per_day * 30.4 * load.months_of_history * ENTRIES_PER_SESSION


class DomainSize(NamedTuple):
    """The domain a load needs."""

    instance_type: str
    data_nodes: int
    volume_gb: int
    shards: int
    master_nodes: int
    master_instance_type: str
    memory_indexes: int = 1


def copies(data_nodes: int) -> int:
    """Copies of each shard: a primary and, where there is a second node, a replica (the
    indexes' default: one)."""
    return 2 if data_nodes > 1 else 1


# The daily users a domain outside production is sized for unless dailyUsers (or
# searchDailyUsers) is set: a trial. A domain bills by the hour from its first deploy, users or
# not, and a million daily users' is 60 r6g.12xlarge.search nodes (docs/decisions.md); ten
# daily users' year of memories fits the former development domain, one t3.small.search of
# 10 GiB, so a plain deploy of an earlier version's development stack keeps its domain.
TRIAL_DAILY_USERS = 10


def search_domain(
    load: Load,
    *,
    dimension: int,
    on_disk: bool,
    production: bool,
    instance_type: str | None = None,
    data_nodes: int | None = None,
) -> DomainSize:
    """The instance type, data nodes, volume and shards of a domain that holds `load`'s
    long-term memory (production: at least two nodes in two AZs and three dedicated masters);
    `instance_type`, when one of SEARCH_INSTANCES, is used instead of the smallest that fits,
    and `data_nodes` instead of the nodes it needs. The shards are never more than the nodes'
    heaps hold (AWS: at most 25 shards a GiB of heap)."""
    entries = memory_entries(load)
    graphs = entries * graph_bytes(dimension, on_disk)
    data = entries * entry_bytes(dimension, on_disk)
    fixed = instance(instance_type) if instance_type else None
    ladder = [fixed] if fixed else SEARCH_INSTANCES
    plan: tuple[SearchInstance, int] | None = None
    for kind in ladder:
        nodes = 2 if production else 1
        while True:
            n = copies(nodes)
            needed = max(
                nodes,
                math.ceil(n * graphs / kind.knn_memory_bytes),
                math.ceil(n * data * STORAGE_OVERHEAD / (kind.max_volume_gib * GIB)),
            )
            if needed > 1:
                needed += needed % 2  # even: two AZs
            if needed == nodes:
                break
            nodes = needed
        if kind.name.startswith("t3") and (nodes > 1 or production) and not fixed:
            continue
        plan = (kind, nodes)
        if nodes <= PREFERRED_MAX_NODES:
            break
    assert plan is not None
    kind, nodes = plan
    nodes = data_nodes or nodes
    per_node = copies(nodes) * data * STORAGE_OVERHEAD / nodes / GIB
    volume = min(kind.max_volume_gib, max(10, math.ceil(per_node)))
    # Shards of at most SHARD_GIB, no more than the nodes' heaps hold, over as many memory
    # indexes as an index's MAX_SHARDS make necessary (the passages' index gets as many).
    held = int(nodes * SHARDS_PER_HEAP_GIB * kind.heap_gib // copies(nodes))
    wanted = max(1, min(held, max(2 if production else 1, math.ceil(data / (SHARD_GIB * GIB)))))
    indexes = math.ceil(wanted / MAX_SHARDS)
    shards = math.ceil(wanted / indexes)
    masters = 3 if production or nodes > 2 else 0
    master = next((t for most, t in MASTER_INSTANCES if nodes <= most), MASTER_INSTANCES[-1][1])
    return DomainSize(kind.name, nodes, volume, shards, masters, master, indexes)
