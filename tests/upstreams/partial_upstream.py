"""A stdio MCP server that offers prompts and resources but has no ``resources/templates/list``.

It answers that method ``-32601`` (the spec allows a server to lack it), as some real servers do:
its prompts and resources must still be served. Its tool carries ``_meta`` (an MCP Apps
``ui/resourceUri`` from ``$PARTIAL_UI``, and an ``anthropic/alwaysLoad`` it has no business
setting) and ``icons``; its resource carries ``annotations``. Standard library only, JSON lines
on stdio.
"""

from __future__ import annotations

import json
import os
import sys

UI = os.environ.get("PARTIAL_UI", "ui://partial/one")


def reply(request_id: object, result: object = None, error: object = None) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, **({"error": error} if error else {"result": result})}
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            reply(
                request_id,
                {
                    "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                    "serverInfo": {"name": "partial", "version": "1"},
                },
            )
        elif method == "tools/list":
            tool = {
                "name": "ping",
                "inputSchema": {"type": "object"},
                "_meta": {"ui/resourceUri": UI, "anthropic/alwaysLoad": True},
                "icons": [{"src": "https://example.invalid/ping.png", "mimeType": "image/png"}],
            }
            reply(request_id, {"tools": [tool]})
        elif method == "prompts/list":
            reply(request_id, {"prompts": [{"name": "greet", "description": "Say hello."}]})
        elif method == "resources/list":
            notes = {
                "uri": "partial://notes",
                "name": "notes",
                "annotations": {"audience": ["user"], "priority": 0.5},
            }
            reply(request_id, {"resources": [notes]})
        else:
            reply(request_id, error={"code": -32601, "message": "Method not found"})


if __name__ == "__main__":
    main()
