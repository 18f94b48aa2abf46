"""A stdio MCP server with 300 tools (``op_0`` ... ``op_299``), each answering ``op_N ran: ARGS``.

What a busy upstream looks like to a client that loads every tool. ``op_1`` is the only one whose
description speaks of the weather. Standard library only, JSON lines on stdio.
"""

from __future__ import annotations

import json
import sys

TOPICS = ["invoices", "the weather forecast", "calendars", "tickets", "deployments", "backups"]


def tools() -> list[dict[str, object]]:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    return [
        {
            "name": f"op_{i}",
            "description": f"Look up {TOPICS[i % 6] if i < 6 else 'records'} (#{i}).",
            "inputSchema": schema,
        }
        for i in range(300)
    ]


def reply(request_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
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
            version = message["params"].get("protocolVersion", "2025-06-18")
            reply(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "many", "version": "1"},
                },
            )
        elif method == "tools/list":
            reply(request_id, {"tools": tools()})
        elif method == "tools/call":
            params = message["params"]
            text = f"{params['name']} ran: {json.dumps(params.get('arguments') or {}, sort_keys=True)}"
            reply(request_id, {"content": [{"type": "text", "text": text}]})
        else:
            sys.stdout.write(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "error": {"code": -32601, "message": "Method not found"},
                    }
                )
                + "\n"
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
