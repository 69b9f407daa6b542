"""The gateway's worker processes: N Lambda instances of the handler, each one request at a
time, so requests run at once and a slow one does not hold up the rest."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess
from typing import Any

from local.lambda_context import (
    Handler,
    LocalLambdaContext,
    import_object,
    load_handler,
    started_now,
)

log = logging.getLogger("local.gateway")


class WorkerPool:
    """N worker processes, each importing the handler once (a cold start) and then running one
    request at a time: N Lambda instances. They are spawned, not forked (this process runs
    threads), and inherit the environment as it is when they start.

    A handler that raises comes back as the exception; a worker that dies (a crash, `kill`)
    fails the requests in flight with `BrokenProcessPool` and the pool is replaced, so the next
    request gets fresh workers."""

    def __init__(self, handler_path: str, size: int, *, setup: Sequence[str] = ()) -> None:
        self.handler_path = handler_path
        self.size = size
        # Dotted paths of functions each worker calls once after importing the handler.
        self.setup = tuple(setup)
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._stopped = False

    def start(self) -> None:
        """Start the worker processes now (each imports the handler while nobody waits)."""
        self._current()

    def invoke(self, event: dict[str, Any], function_name: str) -> Any:
        """The handler's reply to one event, from the next free worker."""
        executor = self._current()
        try:
            return executor.submit(_worker_invoke, event, function_name).result()
        except BrokenProcessPool:
            if not self._stopped:
                log.warning("a worker process died; the next request starts new ones")
                self._replace(executor)
            raise

    def stop(self, grace_seconds: float = 5.0) -> None:
        """Workers exit after the request in hand; one still busy after `grace_seconds` is
        terminated, so that Ctrl-C does not wait for a long import."""
        with self._lock:
            executor, self._executor, self._stopped = self._executor, None, True
        if executor is None:
            return
        # ProcessPoolExecutor offers neither its processes nor a shutdown with a time limit.
        # Its own thread reaps the processes (waiting for them here too would race it), so
        # they are only signalled here.
        processes = list((executor._processes or {}).values())
        closing = threading.Thread(
            target=executor.shutdown,
            kwargs={"wait": True, "cancel_futures": True},
            name="worker-shutdown",
            daemon=True,
        )
        closing.start()
        closing.join(grace_seconds)
        for end in (BaseProcess.terminate, BaseProcess.kill):
            if not closing.is_alive():
                break
            for process in processes:
                end(process)
            closing.join(5)

    def _current(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._stopped:
                raise RuntimeError("the gateway is stopping")
            if self._executor is None:
                self._executor = self._new_executor()
            return self._executor

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            # Every request in flight on the broken pool ends here: replace it once.
            if self._executor is broken:
                self._executor = None if self._stopped else self._new_executor()
        broken.shutdown(wait=False, cancel_futures=True)

    def _new_executor(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(
            max_workers=self.size,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_start,
            initargs=(self.handler_path, self.setup, logging.getLogger().getEffectiveLevel()),
        )
        # The executor spawns a process per submission while none is idle: N submissions at
        # once start all N workers now, and each warms up while the gateway waits for requests.
        for _ in range(self.size):
            executor.submit(os.getpid)
        return executor


# The handler of this worker process (set once by _worker_start; None in the gateway's process).
_worker_handler: Handler | None = None


def _worker_start(handler_path: str, setup: Sequence[str], log_level: int) -> None:
    """Runs once in each new worker process: import the handler (a Lambda cold start), then the
    setup functions (loading a model, say); a setup failure only logs."""
    global _worker_handler
    # Ctrl-C reaches the whole process group: the gateway stops its workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(
        level=log_level,
        format="%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s",
        datefmt="%H:%M:%S",
    )
    _exit_with_parent()
    _worker_handler = load_handler(handler_path)
    for path in setup:
        try:
            import_object(path)()
        except Exception as error:  # noqa: BLE001 - the first request that needs it reports it
            log.warning("worker %s: %s failed: %s", os.getpid(), path, error)


def _worker_invoke(event: dict[str, Any], function_name: str) -> Any:
    """One invocation in a worker process, with its own Lambda context."""
    if _worker_handler is None:
        raise RuntimeError("the worker process has no handler")
    return _worker_handler(started_now(event), LocalLambdaContext(function_name=function_name))


def _exit_with_parent() -> None:
    """A worker whose gateway process died without stopping it (kill -9) exits too, instead of
    waiting forever for work that cannot come."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
