"""The worker-thread hand-off: outcomes, the caller's context, abandon on cancel, no call behind another."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from awf_mcp import concurrency
from awf_mcp.concurrency import call_either, in_worker_thread
from awf_mcp.ports import CallContext, bind_call_context, current_call, unbind_call_context

pytestmark = pytest.mark.anyio


async def test_the_function_runs_in_another_thread_and_its_value_or_error_comes_back() -> None:
    assert await in_worker_thread(threading.get_ident) != threading.get_ident()
    assert await in_worker_thread(lambda a, b: a + b, 2, 3) == 5

    def fail() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        await in_worker_thread(fail)

    def stop() -> None:
        raise StopIteration

    with pytest.raises(RuntimeError, match="StopIteration"):
        await in_worker_thread(stop)


async def test_the_worker_sees_the_callers_call_context() -> None:
    context = CallContext(tool_name="Read", output_budget=1234)
    token = bind_call_context(context)
    try:
        assert await in_worker_thread(current_call) is context
    finally:
        unbind_call_context(token)
    assert (await in_worker_thread(current_call)).tool_name == ""


async def test_call_either_awaits_coroutines_and_threads_plain_functions() -> None:
    async def on_loop(value: int) -> int:
        return value * 2

    def plain(value: int, *, extra: int = 0) -> int:
        return value + extra

    async def later() -> str:
        return "awaited"

    assert await call_either(on_loop, 4) == 8
    assert await call_either(plain, 4, extra=1) == 5
    assert await call_either(lambda: later()) == "awaited"


async def test_a_cancelled_caller_stops_waiting_and_the_function_finishes_on_its_own() -> None:
    release = threading.Event()
    finished = threading.Event()

    def slow() -> str:
        release.wait(10)
        finished.set()
        return "late"

    with anyio.move_on_after(0.2):
        await in_worker_thread(slow)
        pytest.fail("the caller waited for the function")
    assert not finished.is_set()
    release.set()
    assert finished.wait(10)


async def test_a_call_is_never_queued_behind_a_running_one(monkeypatch: pytest.MonkeyPatch) -> None:
    await in_worker_thread(lambda: None)  # at least one idle worker now
    await anyio.sleep(0.05)
    second_ran = threading.Event()

    def first() -> bool:
        return second_ran.wait(10)  # only returns True if the second call runs meanwhile

    async with anyio.create_task_group() as group:
        outcome: list[bool] = []

        async def run_first() -> None:
            outcome.append(await in_worker_thread(first))

        group.start_soon(run_first)
        group.start_soon(in_worker_thread, second_ran.set)
    assert outcome == [True]


async def test_a_call_abandoned_before_it_starts_never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(concurrency, "MAX_WORKERS", 0)  # no worker may start: every call queues
    pool = concurrency._Workers()
    monkeypatch.setattr(concurrency, "_WORKERS", pool)
    ran = threading.Event()
    with anyio.move_on_after(0.1):
        await in_worker_thread(ran.set)
    monkeypatch.setattr(concurrency, "MAX_WORKERS", 1)
    assert await in_worker_thread(lambda: "next") == "next"  # runs after the abandoned call's turn
    assert not ran.is_set()


async def test_a_call_stuck_after_its_caller_gave_up_leaves_room_for_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(concurrency, "MAX_WORKERS", 1)
    monkeypatch.setattr(concurrency, "_WORKERS", concurrency._Workers())
    release = threading.Event()
    with anyio.move_on_after(0.2):
        await in_worker_thread(release.wait, 10)  # holds the only worker, then is abandoned
    try:
        with anyio.fail_after(5):
            assert await in_worker_thread(lambda: "served") == "served"
    finally:
        release.set()


async def test_idle_workers_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(concurrency, "IDLE_SECONDS", 0.1)
    pool = concurrency._Workers()
    monkeypatch.setattr(concurrency, "_WORKERS", pool)
    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(in_worker_thread, time.sleep, 0.05)
    assert pool._threads == 3
    with anyio.fail_after(5):
        while pool._threads:
            await anyio.sleep(0.05)
    assert pool._idle == 0
    assert await in_worker_thread(lambda: "again") == "again"


async def test_hand_over_does_not_yield_while_the_stream_has_room_and_waits_when_full() -> None:
    """``hand_over`` lets no other task run while the stream has room (the control: anyio's
    ``send`` does), and waits for room when it is full."""
    send, receive = anyio.create_memory_object_stream[int](2)
    ran: list[str] = []

    async def other(name: str) -> None:
        ran.append(name)

    async with anyio.create_task_group() as group:
        group.start_soon(other, "first")
        await concurrency.hand_over(send, 1)
        assert ran == []  # no pass of the loop: the other task has not run
        await send.send(2)
        assert ran == ["first"]  # the control: send yields
        full = anyio.Event()

        async def third() -> None:
            await concurrency.hand_over(send, 3)
            full.set()

        group.start_soon(third)
        await anyio.sleep(0.01)
        assert not full.is_set()  # full: it waits
        assert receive.receive_nowait() == 1
        await anyio.sleep(0.01)
        assert full.is_set()
    assert [receive.receive_nowait() for _ in range(2)] == [2, 3]
