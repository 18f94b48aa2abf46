"""The agent's client channel as the core uses it, beyond what a tool sees of it.

A tool asks the agent's client through :class:`~awf_mcp.ports.ClientChannel`. An upstream
server's requests reach the same channel through the core (:mod:`awf_mcp.core.upstream`), which
needs three things more of it; the SDK adapter (:mod:`awf_mcp.wire.channel`) provides them:

* which requests a server may send a client during a call, and the capability each needs
  (:data:`CLIENT_METHODS`, :func:`feature_of`);
* log messages on the call's own request, on the stateless revision (:class:`RequestLog`,
  at the :data:`LOG_LEVELS`);
* the end of a URL-mode elicitation (:class:`ElicitationCompletion`).

Imports: the standard library and :mod:`awf_mcp.ports` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from awf_mcp.ports import ClientFeature

CLIENT_METHODS: Mapping[str, ClientFeature] = {
    "roots/list": "roots",
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
}
"""The requests a server may send a client during a call, and the capability each needs."""


def feature_of(method: str, params: Mapping[str, Any]) -> ClientFeature | None:
    """The capability the request ``method`` with ``params`` needs (an elicitation in URL mode needs
    ``elicitation_url``); ``None`` for a request a server may not send a client."""
    feature = CLIENT_METHODS.get(method)
    if feature == "elicitation" and params.get("mode") == "url":
        return "elicitation_url"
    return feature


LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The levels of MCP log messages (``notifications/message``), the least severe first."""


@runtime_checkable
class RequestLog(Protocol):
    """Log messages sent on the call's own request, as the stateless revision (2026-07-28) delivers
    them: only to a request whose ``_meta`` asked for them, at its level and above."""

    def log_level(self) -> str | None:
        """The least severe level (among :data:`LOG_LEVELS`) the request asked for; ``None``: none."""
        ...

    async def log(self, level: str, logger: str, data: Any) -> None:
        """Send one log message on the request (the client's level filters it)."""
        ...


@runtime_checkable
class ElicitationCompletion(Protocol):
    """Telling the agent's client that a URL-mode elicitation's out-of-band interaction completed
    (``notifications/elicitation/complete``, revision 2025-11-25). The stateless revision
    (2026-07-28) removed that notification: there, nothing is sent."""

    async def elicitation_complete(self, elicitation_id: str) -> None:
        """Send the notification for ``elicitation_id`` on the client's connection (not the call's
        stream: the call may have ended); a client gone meanwhile is not an error."""
        ...
