"""A stateless-revision ``requestState`` answers one round, once.

The SDK's :class:`~mcp.server.request_state.RequestStateBoundary` seals ``requestState`` and
binds it to the request (tool and arguments), the caller (the access token's principal) and ten
minutes. Within those ten minutes the same sealed state could be sent again after its call
finished: a confirmation the user gave once (``Bash`` ``git push``: yes) would run the call a
second time without asking. :class:`SingleUseRequestState`, outside the boundary, remembers the
digest of every state whose round ended in a final result, for as long as the state lives, and
refuses a state it has seen (``-32602``, saying to start the call again). The memory is bounded
(:data:`MAX_REMEMBERED` digests, the oldest forgotten first) and per process: replicas behind a
load balancer each keep their own.
"""

from __future__ import annotations

import collections
import hashlib
import time
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.methods import INPUT_REQUIRED_METHODS, is_input_required

STATE_SECONDS = 600.0
"""How long the SDK's sealed state lives (``RequestStateSecurity``'s TTL), and so its memory here."""

MAX_REMEMBERED = 10_000


class SingleUseRequestState:
    """Server middleware: a ``requestState`` whose round finished is refused when it comes again."""

    def __init__(self, ttl: float = STATE_SECONDS) -> None:
        self.ttl = ttl
        self._used: collections.OrderedDict[str, float] = collections.OrderedDict()

    def _forget_expired(self, now: float) -> None:
        while self._used and (len(self._used) > MAX_REMEMBERED or next(iter(self._used.values())) < now):
            self._used.popitem(last=False)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        state = (ctx.params or {}).get("requestState") if ctx.method in INPUT_REQUIRED_METHODS else None
        if not isinstance(state, str) or not state:
            return await call_next(ctx)
        digest = hashlib.sha256(state.encode("utf-8", "surrogatepass")).hexdigest()
        now = time.monotonic()
        self._forget_expired(now)
        if digest in self._used:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="this requestState was used already: its call has finished; start the call again",
            )
        result = await call_next(ctx)
        if not is_input_required(result):
            self._used[digest] = now + self.ttl
        return result
