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
from typing import Generic, TypeVar

from awf_mcp import budget
from awf_mcp.core.upstream.session import OfferedItem
from awf_mcp.ports import (
    PromptDefinition,
    ResourceDefinition,
    ToolDefinition,
)

log = logging.getLogger("awf_mcp.upstream")

Item = TypeVar("Item", ToolDefinition, PromptDefinition, ResourceDefinition)

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
        [
            tool.name,
            tool.description,
            tool.input_schema,
            tool.output_schema,
            tool.annotations,
            tool.meta,
            tool.icons,
        ]
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


def item_bytes(item: ToolDefinition | OfferedItem) -> int:
    """About how many bytes ``item`` takes in its list answer: its fields as UTF-8 JSON."""
    if isinstance(item, ToolDefinition):
        return definition_bytes(item)
    if isinstance(item, PromptDefinition):
        arguments = [[a.name, a.description, a.required] for a in item.arguments]
        return budget.json_size([item.name, item.description, item.title, arguments])
    return budget.json_size([item.uri, item.name, item.description, item.mime_type, item.title])


def item_key(item: ToolDefinition | OfferedItem) -> str:
    """What names ``item`` in its server's listing: a tool's or prompt's name, a resource's URI."""
    return item.uri if isinstance(item, ResourceDefinition) else item.name


KIND_WORDS = {"tools": "tool", "prompts": "prompt", "resources": "resource", "templates": "resource template"}
"""The word for one item of each kind of listing, in the sentences about what was left out."""


class Listing(Generic[Item]):
    """One listing of a server's tools (or prompts, resources, templates: ``kind``) under its byte
    bounds (see the module docstring)."""

    def __init__(self, served_bytes: int, kind: str = "tools") -> None:
        self.served_bytes = served_bytes
        self.kind = kind
        self.kept: list[Item] = []
        self.left_out: list[str] = []
        self._names: set[str] = set()
        self._kept_bytes = 0
        self._read_bytes = 0

    def take(self, item: Item) -> bool:
        """Keep ``item``, or note why it is left out; ``False`` when no further item is to be read."""
        key = item_key(item)
        if self._read_bytes > MAX_LISTING_BYTES:
            return self._stop(key, MAX_LISTING_BYTES, "reads")
        size = item_bytes(item)
        self._read_bytes += size
        word = KIND_WORDS.get(self.kind, self.kind)
        if key in self._names:
            self.left_out.append(f"{word} '{_shown(key)}' is listed twice: the second is left out")
        elif size > MAX_TOOL_DEFINITION_BYTES:
            self.left_out.append(
                f"{word} '{_shown(key)}' is left out: its definition takes {size:,} bytes, over the "
                f"{MAX_TOOL_DEFINITION_BYTES:,} awf-mcp serves of one {word}"
            )
        elif self._kept_bytes + size > self.served_bytes:
            return self._stop(key, self.served_bytes, "serves")
        else:
            self._names.add(key)
            self.kept.append(item)
            self._kept_bytes += size
        return True

    def _stop(self, key: str, bound: int, verb: str) -> bool:
        kind = "resource templates" if self.kind == "templates" else self.kind
        self.left_out.append(
            f"its {kind} from '{_shown(key)}' on are left out: their definitions pass the "
            f"{bound:,} bytes awf-mcp {verb} of one server"
        )
        return False
