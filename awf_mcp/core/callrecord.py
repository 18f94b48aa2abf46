"""What one finished call looked like: the :class:`CallRecord` the call path hands its observer.

The call path (:mod:`awf_mcp.core.calls`) makes one record per call that reached a tool; the
observers read it: the call log and the audit log (:mod:`awf_mcp.core.observability`), and
whatever the command line adds. Both import it from here, so the logs never import the call path.
Imports: the standard library and :mod:`awf_mcp.ports` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from awf_mcp.ports import LOCAL_CALLER, Caller

#: The error of a call the client cancelled (it gets no result: the SDK answers nothing).
CANCELLED = "cancelled by the client"


@dataclass(frozen=True, slots=True)
class CallRecord:
    """What one finished call looked like; handed to the ``observer``.

    Every call that reached a tool gives one record — results, errors, denials, timeouts,
    and cancellations (``error`` = :data:`CANCELLED`). An unknown tool name gives none.
    """

    tool: str
    source: str
    arguments: Mapping[str, Any]
    duration_ms: float
    is_error: bool
    error: str | None
    confirmation: Mapping[str, Any] | None = None
    """For a call the policy asked about: ``question`` put to the user and ``answer`` given."""
    upstream_requests: tuple[Mapping[str, Any], ...] = ()
    """The requests the call's upstream server made of its client during the call, in order
    (:meth:`~awf_mcp.core.observability.UpstreamRequest.fields`: method and outcome, sizes, never content)."""
    upstream_requests_omitted: int = 0
    """How many more requests there were, past :data:`~awf_mcp.core.observability.MAX_RECORDED_REQUESTS`."""
    caller: Caller = LOCAL_CALLER
    """Who made the call."""
