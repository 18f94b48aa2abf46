"""A server's tool list, bounded in bytes while its pages are read (:class:`Listing`).

A definition's size is its JSON (:func:`definition_bytes`). A tool listed twice (the
second), or whose definition passes :data:`MAX_TOOL_DEFINITION_BYTES`, is left out; the
tools that would take the server past its share of definition bytes
(:data:`MAX_SERVER_DEFINITION_BYTES`, less when more than
:data:`MAX_UPSTREAM_DEFINITION_BYTES` / that many servers are enabled,
:func:`definition_share`) are left out and no further page is asked for, as once
:data:`MAX_LISTING_BYTES` were read. Each is a sentence in :attr:`Listing.left_out`.
"""

from __future__ import annotations

import logging

from awf_mcp import budget
from awf_mcp.ports import (
    ToolDefinition,
)

log = logging.getLogger("awf_mcp.upstream")

MAX_TOOL_DEFINITION_BYTES = 128 * 1024
"""The largest tool definition (name, description, schemas, annotations as JSON) awf-mcp serves."""
MAX_SERVER_DEFINITION_BYTES = 1024 * 1024
"""The most definition bytes served of one server (a server with 100 tools of 2 KB takes 200 KB)."""
MAX_UPSTREAM_DEFINITION_BYTES = 6 * 1024 * 1024
"""The most definition bytes served of all servers together: with more than six servers enabled,
each gets an equal share. Built-ins and plugins add tens of KB: the ``tools/list`` answer stays
well below the 10 MiB frame limit (:data:`~awf_mcp.wire.framing.MAX_MESSAGE_BYTES`)."""
MAX_LISTING_BYTES = 32 * 1024 * 1024
"""The most definition bytes read in one listing, served or not: no page is asked for after that.
Each page is dropped once taken; what the SDK keeps of a page (output schemas) stays below it."""
MAX_INSTRUCTIONS_BYTES = 32 * 1024
"""The largest ``instructions`` of one server relayed in awf-mcp's own."""
MAX_RELAYED_INSTRUCTIONS_BYTES = 256 * 1024
"""The most bytes of the servers' ``instructions`` relayed together."""


def definition_bytes(tool: ToolDefinition) -> int:
    """About how many bytes ``tool`` takes in a ``tools/list`` answer: its fields as UTF-8 JSON."""
    return budget.json_size(
        [tool.name, tool.description, tool.input_schema, tool.output_schema, tool.annotations]
    )


def text_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def definition_share(servers: int) -> int:
    """The definition bytes each of ``servers`` enabled servers may have served."""
    return min(MAX_SERVER_DEFINITION_BYTES, MAX_UPSTREAM_DEFINITION_BYTES // max(servers, 1))


SHOWN_NAME_CHARS = 80
"""How much of a tool's name a sentence about what was left out quotes."""


def _shown(name: str) -> str:
    return name if len(name) <= SHOWN_NAME_CHARS else name[:SHOWN_NAME_CHARS] + "…"


class Listing:
    """One listing of a server's tools under its byte bounds (see the module docstring)."""

    def __init__(self, served_bytes: int) -> None:
        self.served_bytes = served_bytes
        self.kept: list[ToolDefinition] = []
        self.left_out: list[str] = []
        self._names: set[str] = set()
        self._kept_bytes = 0
        self._read_bytes = 0

    def take(self, tool: ToolDefinition) -> bool:
        """Keep ``tool``, or note why it is left out; ``False`` when no further tool is to be read."""
        if self._read_bytes > MAX_LISTING_BYTES:
            return self._stop(tool, MAX_LISTING_BYTES, "reads")
        size = definition_bytes(tool)
        self._read_bytes += size
        if tool.name in self._names:
            self.left_out.append(f"tool '{_shown(tool.name)}' is listed twice: the second is left out")
        elif size > MAX_TOOL_DEFINITION_BYTES:
            self.left_out.append(
                f"tool '{_shown(tool.name)}' is left out: its definition takes {size:,} bytes, over the "
                f"{MAX_TOOL_DEFINITION_BYTES:,} awf-mcp serves of one tool"
            )
        elif self._kept_bytes + size > self.served_bytes:
            return self._stop(tool, self.served_bytes, "serves")
        else:
            self._names.add(tool.name)
            self.kept.append(tool)
            self._kept_bytes += size
        return True

    def _stop(self, tool: ToolDefinition, bound: int, verb: str) -> bool:
        self.left_out.append(
            f"its tools from '{_shown(tool.name)}' on are left out: their definitions pass the "
            f"{bound:,} bytes awf-mcp {verb} of one server"
        )
        return False
