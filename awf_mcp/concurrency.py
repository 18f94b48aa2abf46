"""Calling code that may be synchronous or asynchronous, from the event loop.

Providers and plugin functions may be written either way: ``def`` or ``async def``,
and a ``def`` may even return an awaitable. :func:`call_either` is the one rule for
calling them: a coroutine function is awaited on the loop; anything else runs in a
worker thread, so blocking I/O never stalls the loop, and is abandoned (left to
finish on its own) if the caller is cancelled; an awaitable it returns is awaited.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any


async def call_either(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, awaited if async, else in a worker thread; see the module docstring."""
    if inspect.iscoroutinefunction(function):
        return await function(*args, **kwargs)
    import anyio.to_thread

    call = functools.partial(function, *args, **kwargs) if kwargs else function
    outcome = await anyio.to_thread.run_sync(call, *([] if kwargs else args), abandon_on_cancel=True)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome
