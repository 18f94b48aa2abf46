"""Calling code that may be synchronous or asynchronous, from the event loop.

Providers and plugin functions may be written either way: ``def`` or ``async def``,
and a ``def`` may even return an awaitable. :func:`call_either` is the one rule for
calling them: a coroutine function is awaited on the loop; anything else runs in a
worker thread, so blocking I/O never stalls the loop, and is abandoned (left to
finish on its own) if the caller is cancelled; an awaitable it returns is awaited.

:func:`hand_over` puts a message on a memory stream without yielding while the stream has room.

:func:`in_worker_thread` is that worker-thread hand-off, for code that must not
block the loop (the built-in file tools' I/O):

* The function runs with a copy of the caller's :mod:`contextvars` context, so
  :func:`awf_mcp.ports.current_call` there is the caller's call.
* If the caller is cancelled, it stops waiting at once; the function, if it has
  started, finishes on its own and its outcome is dropped; if it has not started,
  it never runs.
* On asyncio it costs one wake-up of an idle worker (a ``SimpleQueue``) and one
  ``call_soon_threadsafe`` back, about half of ``anyio.to_thread.run_sync``. Up to
  :data:`MAX_WORKERS` threads run at once (anyio's default limit too); more calls
  queue. A worker idle for :data:`IDLE_SECONDS` exits. The workers are daemon
  threads: exit never waits for one.
* These are not anyio worker threads: ``anyio.from_thread`` needs its ``token=``
  argument there. On another event loop (trio), ``anyio.to_thread.run_sync`` is
  used instead, with the same guarantees.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

    from anyio.streams.memory import MemoryObjectSendStream

T = TypeVar("T")

MAX_WORKERS = 40
"""Worker threads running at once; further calls wait for one to come free."""

IDLE_SECONDS = 10.0
"""How long a worker with nothing to do waits before it exits."""


async def call_either(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, awaited if async, else in a worker thread; see the module docstring."""
    if inspect.iscoroutinefunction(function):
        return await function(*args, **kwargs)
    call = functools.partial(function, *args, **kwargs) if kwargs else function
    outcome = await in_worker_thread(call, *([] if kwargs else args))
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome


async def hand_over(stream: MemoryObjectSendStream[T], item: T) -> None:
    """Send ``item`` on ``stream`` without a pass of the event loop while it has room (anyio's
    ``send`` always yields first, which costs a relayed message 15-40 µs); wait only when it is full."""
    import anyio

    try:
        stream.send_nowait(item)
    except anyio.WouldBlock:
        await stream.send(item)


async def in_worker_thread(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` in a worker thread, abandoned on cancellation; see the module docstring."""
    import asyncio  # here, not at the top: importing the public face stays light

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not asyncio
        import anyio.to_thread

        return await anyio.to_thread.run_sync(function, *args, abandon_on_cancel=True)
    job = _Job(loop, loop.create_future(), contextvars.copy_context(), function, args)
    _WORKERS.submit(job)
    try:
        return await job.future  # type: ignore[no-any-return]
    finally:
        if job.future.cancelled():
            _WORKERS.abandon(job)


class _Job:
    """One call handed to a worker, and where its outcome goes."""

    __slots__ = ("abandoned", "args", "context", "function", "future", "loop", "running")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        context: contextvars.Context,
        function: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> None:
        self.loop = loop
        self.future = future
        self.context = context
        self.function = function
        self.args = args
        self.running = False
        self.abandoned = False

    def run(self) -> None:
        """Call the function in the caller's context and send the outcome back to the loop."""
        settle: Callable[[asyncio.Future[Any], Any], None] = _succeed
        try:
            outcome: Any = self.context.run(self.function, *self.args)
        except BaseException as exc:  # delivered to the caller, whatever it is
            if isinstance(exc, StopIteration):  # a Future refuses it
                exc = RuntimeError(f"{self.function!r} raised StopIteration")
            settle, outcome = _fail, exc
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            self.loop.call_soon_threadsafe(settle, self.future, outcome)


class _Workers:
    """A pool of daemon threads taking jobs from one queue; see the module docstring.

    Under the lock, ``idle - backlog`` is the number of workers waiting for a job
    minus the jobs queued. A job abandoned while it runs gives up its worker's
    place in :data:`MAX_WORKERS` (the worker exits when the function returns), as
    anyio's limiter does: calls stuck in a slow file system cannot starve the rest.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0  # workers counted against MAX_WORKERS
        self._idle = 0  # workers waiting for a job that no queued job is meant for
        self._backlog = 0  # queued jobs no worker is free for

    def submit(self, job: _Job) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
            elif self._threads < MAX_WORKERS:
                self._start_worker()
            else:
                self._backlog += 1
            self._jobs.put(job)

    def abandon(self, job: _Job) -> None:
        """The caller of ``job`` stopped waiting; a running job's worker leaves the pool."""
        with self._lock:
            if job.running and not job.abandoned:
                job.abandoned = True
                self._threads -= 1
                if self._backlog:
                    self._backlog -= 1
                    self._start_worker()

    def _start_worker(self) -> None:
        self._threads += 1
        threading.Thread(target=self._work, name="awf-mcp worker", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    try:
                        job = self._jobs.get_nowait()  # submitted as the wait ran out
                    except queue.Empty:
                        self._idle -= 1
                        self._threads -= 1
                        return
            with self._lock:
                job.running = not job.future.cancelled()  # not if abandoned before it started
            if job.running:
                job.run()
            with self._lock:
                if job.abandoned:
                    return
                if self._backlog:
                    self._backlog -= 1
                else:
                    self._idle += 1
            del job


def _succeed(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


_WORKERS = _Workers()


def watch_children_with_pidfds() -> None:
    """Have this event loop learn of its child processes' exits through pidfds, where it can.

    Python 3.11's asyncio waits for each child in a thread of its own
    (``ThreadedChildWatcher``): starting that thread, and its wake-up at the exit, cost a Bash
    call about 2.5 ms. A pidfd in the loop is what 3.12 and later use by default. Call it once,
    from the server's one event loop (the watcher is bound to it); elsewhere it does nothing.
    """
    if sys.version_info >= (3, 12) or not sys.platform.startswith("linux"):
        return
    import asyncio
    import warnings

    try:
        asyncio.get_running_loop()
        os.close(os.pidfd_open(os.getpid()))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            watcher = asyncio.PidfdChildWatcher()
            watcher.attach_loop(asyncio.get_running_loop())
            asyncio.get_event_loop_policy().set_child_watcher(watcher)
    except (OSError, RuntimeError, AttributeError):
        return
