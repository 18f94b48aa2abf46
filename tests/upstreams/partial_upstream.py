"""A stdio MCP server that offers prompts and resources but has no ``resources/templates/list``.

It answers that method ``-32601`` (the spec allows a server to lack it), as some real servers do:
its prompts and resources must still be served. Standard library only, JSON lines on stdio.
"""

from __future__ import annotations

import json
import sys


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
            reply(request_id, {"tools": [{"name": "ping", "inputSchema": {"type": "object"}}]})
        elif method == "prompts/list":
            reply(request_id, {"prompts": [{"name": "greet", "description": "Say hello."}]})
        elif method == "resources/list":
            reply(request_id, {"resources": [{"uri": "partial://notes", "name": "notes"}]})
        else:
            reply(request_id, error={"code": -32601, "message": "Method not found"})


if __name__ == "__main__":
    main()
