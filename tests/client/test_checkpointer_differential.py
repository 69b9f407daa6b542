"""ChatMemorySaver against LangGraph's InMemorySaver, differentially: a Hypothesis state machine
puts checkpoints (forks of earlier ones among them, as update_state makes, and subgraph
namespaces that reuse the graph's ids), puts writes (special channels included), reads them
back with get_tuple and list (namespaces, before, limit, filters) and deletes threads; after
every step both savers answer the same, on local mode (DynamoDB Local, the real handlers).

A bounded number of examples runs in `make test`; CHATMEMORY_DIFFERENTIAL_EXAMPLES=200 runs
more. Where the two answer differently by design, the comparison says so (`_listed`).

What it found beyond issue 46's list: two writes of one special channel in one put_writes
(two `__error__` writes of a task: LangGraph's index -1 for both) answered 400; InMemorySaver
keeps the later, and so does the server now."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from chatmemory_client.langgraph import ChatMemorySaver
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from tests.client.differential import run_machine
from tests.integration.helpers import World

pytestmark = pytest.mark.integration


THREADS = ("t0", "t1")
NAMESPACES = ("", "child:1")
CHANNELS = ("messages", "count", "branch:to:answer")
values = st.one_of(
    st.integers(-1000, 1000),
    st.text(max_size=20),
    st.lists(st.text(max_size=8), max_size=4),
    st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(0, 9), max_size=3),
)
metadata = st.fixed_dictionaries(
    {
        "source": st.sampled_from(["input", "loop", "update"]),
        "step": st.integers(-1, 6),
        "color": st.sampled_from(["red", "blue"]),
    }
)


def _key(found: CheckpointTuple) -> tuple[str, str]:
    conf = found.config["configurable"]
    return conf["checkpoint_id"], conf["checkpoint_ns"]


def _shown(found: CheckpointTuple | None) -> Any:
    """What a saver answers of a checkpoint, comparable between savers."""
    if found is None:
        return None
    return (
        found.config,
        found.checkpoint,
        found.metadata,
        found.parent_config,
        sorted(found.pending_writes, key=repr),
    )


class SaverMachine(RuleBasedStateMachine):
    world: World

    def __init__(self) -> None:
        super().__init__()
        user = f"diff-{uuid.uuid4().hex[:12]}"
        self.ours = ChatMemorySaver(base_url=self.world.url, user_id=user, store_turns=False)
        self.theirs = InMemorySaver()
        # (thread, ns) -> the checkpoints put, by id: (checkpoint, versions)
        self.stored: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}

    checkpoints = Bundle("checkpoints")

    def _both(self, method: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        return getattr(self.ours, method)(*args, **kwargs), getattr(self.theirs, method)(
            *args, **kwargs
        )

    @rule(
        target=checkpoints,
        thread=st.sampled_from(THREADS),
        ns=st.sampled_from(NAMESPACES),
        changes=st.dictionaries(st.sampled_from(CHANNELS), values, max_size=3),
        meta=metadata,
        parent=st.integers(0, 1_000),
        fork=st.booleans(),
        reuse_id=st.booleans(),
    )
    def put(
        self,
        thread: str,
        ns: str,
        changes: dict[str, Any],
        meta: dict[str, Any],
        parent: int,
        fork: bool,
        reuse_id: bool,
    ) -> tuple[str, str, str]:
        """A checkpoint after the newest of its namespace, or (fork) after an earlier one, as
        update_state on it makes; a subgraph's may reuse an id of the graph's namespace."""
        here = self.stored.setdefault((thread, ns), {})
        ids = sorted(here)
        base_id = (ids[parent % len(ids)] if fork else ids[-1]) if ids else None
        base = here[base_id] if base_id else {"values": {}, "versions": {}}
        checkpoint = empty_checkpoint()
        elsewhere = [i for (t, n), s in self.stored.items() if t == thread and n != ns for i in s]
        if reuse_id and ns and elsewhere and max(elsewhere) not in here:
            checkpoint["id"] = max(elsewhere)
        versions = dict(base["versions"])
        top = max(versions.values(), default=None)
        new_versions = {}
        for channel in changes:
            new_versions[channel] = self.ours.get_next_version(top, None)
        versions.update(new_versions)
        values = {**base["values"], **changes}
        checkpoint["channel_versions"] = versions
        checkpoint["channel_values"] = values
        config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
        if base_id:
            config["configurable"]["checkpoint_id"] = base_id
        ours, theirs = self._both("put", config, checkpoint, meta, new_versions)
        assert ours == theirs
        here[checkpoint["id"]] = {"values": values, "versions": versions}
        return thread, ns, checkpoint["id"]

    @rule(
        target=checkpoints,
        at=checkpoints,
        task=st.sampled_from(["task-a", "task-b"]),
        path=st.sampled_from(["", "~__pregel_pull, answer"]),
        writes=st.lists(
            st.tuples(st.sampled_from([*CHANNELS, "__error__", "__interrupt__"]), values),
            min_size=1,
            max_size=3,
        ),
    )
    def put_writes(
        self, at: tuple[str, str, str], task: str, path: str, writes: list[tuple[str, Any]]
    ) -> tuple[str, str, str]:
        thread, ns, cid = at
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}}
        if cid not in self.stored.get((thread, ns), {}):
            return at  # its thread was deleted since
        self._both("put_writes", config, writes, task, path)
        return at

    @rule(thread=st.sampled_from(THREADS), ns=st.sampled_from(NAMESPACES), at=checkpoints)
    def get_tuple(self, thread: str, ns: str, at: tuple[str, str, str]) -> None:
        conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
        ours, theirs = self._both("get_tuple", {"configurable": conf})
        assert _shown(ours) == _shown(theirs)
        named = {"thread_id": at[0], "checkpoint_ns": at[1], "checkpoint_id": at[2]}
        ours, theirs = self._both("get_tuple", {"configurable": named})
        assert _shown(ours) == _shown(theirs)

    @rule(at=checkpoints)
    def async_reads(self, at: tuple[str, str, str]) -> None:
        """aget_tuple and alist, of the checkpoint and of its thread."""
        thread, ns, cid = at
        named = {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}

        async def read(saver: Any) -> Any:
            one = await saver.aget_tuple({"configurable": named})
            listed = [t async for t in saver.alist({"configurable": named})]
            return _shown(one), [_shown(t) for t in listed]

        assert asyncio.run(read(self.ours)) == asyncio.run(read(self.theirs))

    @rule(
        thread=st.sampled_from(THREADS),
        ns=st.sampled_from([None, *NAMESPACES]),
        before=st.one_of(st.none(), checkpoints),
        limit=st.one_of(st.none(), st.integers(1, 4)),
        wanted=st.dictionaries(
            st.sampled_from(["source", "color", "step"]),
            st.sampled_from(["input", "loop", "red", "blue", 0, 1, 2]),
            max_size=2,
        ),
    )
    def list(
        self,
        thread: str,
        ns: str | None,
        before: tuple[str, str, str] | None,
        limit: int | None,
        wanted: dict[str, Any],
    ) -> None:
        conf: dict[str, Any] = {"thread_id": thread}
        if ns is not None:
            conf["checkpoint_ns"] = ns
        ask: dict[str, Any] = {"filter": wanted or None, "limit": limit}
        if before is not None:
            ask["before"] = {"configurable": {"thread_id": thread, "checkpoint_id": before[2]}}
        assert self._listed({"configurable": conf}, **ask)

    @precondition(lambda self: bool(self.stored))
    @rule(thread=st.sampled_from(THREADS))
    def delete_thread(self, thread: str) -> None:
        self._both("delete_thread", thread)
        for key in [k for k in self.stored if k[0] == thread]:
            del self.stored[key]

    @invariant()
    def every_thread_reads_the_same(self) -> None:
        """Each thread's every checkpoint, with its values and writes, in every namespace."""
        for thread in THREADS:
            assert self._listed({"configurable": {"thread_id": thread}})

    def _listed(self, config: dict[str, Any], **ask: Any) -> bool:
        """Both savers list the same. A listing of every namespace is ordered by id then
        namespace here (as LangGraph's Postgres saver orders by id), InMemorySaver's by
        namespace first (its storage's order): the same checkpoints, and a `limit` keeps the
        first of that order."""
        limit = ask.pop("limit", None)
        ours = [_shown(t) for t in self.ours.list(config, limit=limit, **ask)]
        theirs_all = list(self.theirs.list(config, **ask))
        if "checkpoint_ns" not in config["configurable"]:
            theirs_all.sort(key=_key, reverse=True)
        theirs = [_shown(t) for t in theirs_all[:limit]]
        assert ours == theirs
        return True


def test_the_saver_answers_as_langgraphs_in_memory_saver(world: World) -> None:
    SaverMachine.world = world
    run_machine(SaverMachine, examples=5, steps=20)
