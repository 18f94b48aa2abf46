"""Text from elsewhere (an upstream's tool names and descriptions, a failure's reason) as rich prints it.

:func:`shown` makes it inert (:func:`~awf_mcp.ports.inert_text`: control characters, ANSI
escapes and bidirectional overrides become visible escapes) and escapes rich's markup, so
that ``[red]`` in a description is printed as written, not obeyed.
"""

from __future__ import annotations

from rich.markup import escape

from awf_mcp.ports import inert_text


def shown(text: str) -> str:
    """``text`` for a rich table cell or a rich ``print``: inert, its markup escaped."""
    return escape(inert_text(text))
