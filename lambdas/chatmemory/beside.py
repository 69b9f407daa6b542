"""Work a request starts beside its own (a read or a search it needs later, sent while it writes):
on a few threads kept for the process, so that a turn does not start a thread of its own for
each (a thread's start, a few hundred microseconds on an idle machine, was milliseconds on a
busy one, on the path to the answer's first word). A Lambda's execution environment keeps them
between requests; each task runs with the request's context (its deadline).

Only short tasks that wait for nothing of this pool go here (a task that waited for another
could wait behind it for ever once every thread is taken).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

# Three tasks a turn at most (the profile's read, auto-recall's search, a stacked message's
# write beside its model call); local mode answers several turns at once. A thread is started
# only when none is idle.
MAX_THREADS = 8

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def run_beside(task: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
    """`task(*args, **kwargs)` started on the process's threads, with the caller's context."""
    context = contextvars.copy_context()
    return _threads().submit(lambda: context.run(task, *args, **kwargs))


def _threads() -> ThreadPoolExecutor:
    global _pool  # noqa: PLW0603 - created on first use, never at import (see the docstring)
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(MAX_THREADS, thread_name_prefix="beside")
        return _pool
