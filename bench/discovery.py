"""The bytes of ``tools/list`` a client gets with 300 tools beside the built-ins, by client kind.

Run from the repository root: ``.venv-test/bin/python bench/discovery.py [--tools N]``. It builds
N tool definitions shaped like an upstream server's (a sentence of description, a schema of three
properties), adds the built-ins, and prints, for a client that loads every tool (Gemini CLI) and for
one that defers them (Claude Code), how many tools its ``tools/list`` holds and its size as the
wire sends it (JSON, UTF-8): what awf-mcp's discovery (awf_mcp.core.discovery) saves a client that
puts every tool into every model request.
"""

from __future__ import annotations

import argparse
import json

from awf_mcp.builtins.definitions import DEFINITIONS
from awf_mcp.core.discovery import Discovery, offered
from awf_mcp.ports import ToolDefinition
from awf_mcp.wire.mapping import tool_to_mcp

SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for."},
        "limit": {"type": "integer", "description": "At most this many results."},
        "cursor": {"type": "string", "description": "Where the previous page ended."},
    },
    "required": ["query"],
}


def listing_bytes(definitions: list[ToolDefinition]) -> int:
    tools = [tool_to_mcp(d).model_dump(by_alias=True, exclude_none=True, mode="json") for d in definitions]
    return len(json.dumps({"tools": tools}, separators=(",", ":")).encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=300)
    count = parser.parse_args().tools
    upstream = [
        ToolDefinition(
            f"srv_tool_{i}",
            f"Search the records of kind {i} and return the matching ones.",
            SCHEMA,
            "server:srv",
        )
        for i in range(count)
    ]
    everything = [*DEFINITIONS, *upstream]
    print(f"{len(everything)} tools: {count} upstream + {len(DEFINITIONS)} built-in")
    for client in ("gemini-cli-mcp-client", "claude-code"):
        shown, searching = offered(everything, client, Discovery())
        how = "built-ins + search" if searching else "every tool"
        print(f"{client:24s} {len(shown):4d} tools  {listing_bytes(shown):9,d} bytes  ({how})")
    print(f"{'without discovery':24s} {len(everything):4d} tools  {listing_bytes(everything):9,d} bytes")


if __name__ == "__main__":
    main()
