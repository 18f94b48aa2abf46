"""What a transport needs of the server it serves, so that the transports need not import it.

:mod:`awf_mcp.wire.stdio` and :mod:`awf_mcp.wire.http` carry an
:class:`~awf_mcp.wire.server.McpServer` without importing :mod:`awf_mcp.wire.server` (which
imports them): they take any :class:`ServedServer`, the SDK's low-level server to run plus the
one thing a transport asks of it at its end, to close the ``subscriptions/listen`` streams.
Imports only the SDK's server type, for type checking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server


class ServedServer(Protocol):
    """The server a transport serves: :class:`~awf_mcp.wire.server.McpServer` is one."""

    @property
    def sdk_server(self) -> Server[Any]:
        """The SDK's low-level server the transport runs (stdio: ``run``; HTTP: its ASGI app)."""
        ...

    def end_listen_streams(self) -> None:
        """End every open ``subscriptions/listen`` stream with its result; refuse new ones.

        Called when the transport's clients are gone or going: at stdin EOF, at HTTP shutdown.
        """
        ...
