"""An MCP server over stdio (standard library only) whose schemas and results attack awf-mcp.

``python hostile_upstream.py``, tools:

* ``evil_input``: its inputSchema's ``name`` has the pattern ``(a+)+$``, which Python's ``re``
  takes hours to fail on forty ``a`` and a ``!``; ``evil_keys`` the same pattern in
  ``patternProperties`` with ``additionalProperties: false``; ``lookahead`` a pattern with a
  lookahead (which RE2 refuses). Each answers ``ok``.
* ``slow_input``: the pattern ``[ab]*a[ab]{200}x``, which even RE2 needs seconds for on
  megabytes of ``a`` and ``b`` (its cache of states overflows).
* ``evil_output``: its outputSchema has the same pattern, and it returns structured content
  whose ``name`` is ``arguments.name``.
* ``fat``: returns one item of ``size`` bytes hidden where ``where`` says: ``resource`` (an
  embedded resource's text), ``meta`` (a text item's ``_meta``), ``annotations``, ``link``
  (a ``resource_link``'s ``description``), ``blob`` (an embedded resource's blob), or
  ``image`` (an image's data), after a short text item.
"""

from __future__ import annotations

import base64
import json
import sys
import threading

EVIL = "(a+)+$"
LOCK = threading.Lock()

TOOLS = [
    {
        "name": "evil_input",
        "description": "A backtracking pattern on an argument.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "pattern": EVIL}}},
    },
    {
        "name": "evil_keys",
        "description": "A backtracking pattern on argument names.",
        "inputSchema": {"type": "object", "patternProperties": {EVIL: {}}, "additionalProperties": False},
    },
    {
        "name": "lookahead",
        "description": "A pattern RE2 cannot run.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(?!x)"}}},
    },
    {
        "name": "slow_input",
        "description": "A pattern slow even for RE2.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "pattern": "[ab]*a[ab]{200}x"}},
        },
    },
    {
        "name": "evil_output",
        "description": "A backtracking pattern on the structured result.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        "outputSchema": {"type": "object", "properties": {"name": {"type": "string", "pattern": EVIL}}},
    },
    {
        "name": "fat",
        "description": "A big item that is not plain text.",
        "inputSchema": {
            "type": "object",
            "properties": {"where": {"type": "string"}, "size": {"type": "integer"}},
        },
    },
]


def send(message: dict) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def fat(where: str, size: int) -> list[dict]:
    """A short text item, then an item of about ``size`` bytes as JSON."""
    filler = "y" * size
    binary = base64.b64encode(b"y" * (size * 3 // 4)).decode()
    items: dict[str, dict] = {
        "resource": {"type": "resource", "resource": {"uri": "file:///fat.txt", "text": filler}},
        "meta": {"type": "text", "text": "small", "_meta": {"fat": filler}},
        "annotations": {"type": "text", "text": "small", "annotations": {"audience": ["user"] * (size // 7)}},
        "link": {"type": "resource_link", "uri": "file:///fat.txt", "name": "fat", "description": filler},
        "blob": {"type": "resource", "resource": {"uri": "file:///fat.bin", "blob": binary}},
        "image": {"type": "image", "mimeType": "image/png", "data": binary},
    }
    return [{"type": "text", "text": "first"}, items[where]]


def call(name: str, arguments: dict) -> dict:
    if name == "evil_output":
        return {
            "content": [{"type": "text", "text": json.dumps({"name": arguments.get("name", "")})}],
            "structuredContent": {"name": arguments.get("name", "")},
        }
    if name == "fat":
        return {"content": fat(str(arguments.get("where")), int(arguments.get("size", 10)))}
    return {"content": [{"type": "text", "text": "ok"}]}


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = call(params["name"], params.get("arguments") or {})
        elif method == "ping":
            result = {}
        else:
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
