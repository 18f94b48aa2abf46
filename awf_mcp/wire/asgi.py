"""ASGI's shapes, named once for the HTTP modules' middleware (:mod:`~awf_mcp.wire.http`,
:mod:`~awf_mcp.wire.httpauth`, :mod:`~awf_mcp.wire.health`).

Type aliases only, from the standard library: importing this module imports neither the SDK
nor an HTTP server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
"""One connection's ASGI scope (``type``, ``path``, ``headers``, ...)."""
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
"""How an ASGI application awaits the next message from the client."""
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
"""How an ASGI application sends a message (the response's start, a part of its body)."""
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
"""An ASGI application, or middleware wrapping one."""
