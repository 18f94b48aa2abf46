"""The relay's floor in the SDK itself: what any relay built on the MCP Python SDK pays a call,
before a byte is read or written.

``python bench/sdk_floor.py [--calls N] [--json]`` measures, in this process, over the SDK's
in-memory streams (no pipes, no JSON text, no event loop waiting for I/O):

* **server dispatch**: the low-level ``Server`` answering ``tools/call`` of a tool that returns
  one text block (``bench/bare_server.py``'s), from the request object in to the response
  object out: the SDK's request task, middleware, validation and result serialization;
* **client call**: ``ClientSession.call_tool`` against a peer that answers at once: the SDK's
  request, its dispatcher and the validation of the result.

A relay runs both for every call (it serves its client and is the client of its upstream), so
their sum is the least any SDK-built relay adds on top of its transports, whatever else it does.
``bench/upstreams.py`` (``relay``) subtracts it from what awf-mcp adds, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bare_server

INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "sdk-floor", "version": "1"},
}
WARM_UP = 300


async def server_dispatch(calls: int) -> list[float]:
    """Seconds per ``tools/call`` through the low-level server, request object to response object."""
    server: Server[Any] = Server(
        "sdk-floor", on_list_tools=bare_server.list_tools, on_call_tool=bare_server.call_tool
    )
    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](16)
    seconds: list[float] = []
    async with anyio.create_task_group() as group:
        group.start_soon(server.run, server_reads, server_writes, server.create_initialization_options())
        await to_server.send(
            SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=1, method="initialize", params=INITIALIZE))
        )
        await from_server.receive()
        await to_server.send(
            SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
        )
        for index in range(WARM_UP + calls):
            request = types.JSONRPCRequest(
                jsonrpc="2.0", id=10 + index, method="tools/call", params={"name": "read", "arguments": {}}
            )
            started = time.perf_counter()
            await to_server.send(SessionMessage(request))
            await from_server.receive()
            seconds.append(time.perf_counter() - started)
        group.cancel_scope.cancel()
    return seconds[WARM_UP:]


async def _answer_at_once(reads: Any, writes: Any) -> None:
    results: dict[str, dict[str, Any]] = {
        "initialize": {
            "protocolVersion": INITIALIZE["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "peer", "version": "1"},
        },
        "tools/list": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]},
        "tools/call": {"content": [{"type": "text", "text": "Echo: m"}]},
    }
    async for received in reads:
        message = received.message
        if isinstance(message, types.JSONRPCRequest):
            answer = types.JSONRPCResponse(
                jsonrpc="2.0", id=message.id, result=results.get(message.method, {})
            )
            await writes.send(SessionMessage(answer))


async def client_call(calls: int) -> list[float]:
    """Seconds per ``ClientSession.call_tool`` against a peer that answers at once."""
    to_peer, peer_reads = anyio.create_memory_object_stream[SessionMessage](16)
    peer_writes, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    seconds: list[float] = []
    async with anyio.create_task_group() as group:
        group.start_soon(_answer_at_once, peer_reads, peer_writes)
        async with ClientSession(client_reads, to_peer) as client:
            await client.initialize()
            for _ in range(WARM_UP + calls):
                started = time.perf_counter()
                await client.call_tool("echo", {"message": "m"})
                seconds.append(time.perf_counter() - started)
        group.cancel_scope.cancel()
    return seconds[WARM_UP:]


def measure(calls: int) -> dict[str, float]:
    """p50 microseconds of each half and their sum."""
    server = statistics.median(anyio.run(server_dispatch, calls)) * 1e6
    client = statistics.median(anyio.run(client_call, calls)) * 1e6
    return {"server_dispatch_us": server, "client_call_us": client, "relay_floor_us": server + client}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls of each half (default 2000)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    figures = measure(args.calls)
    if args.json:
        print(json.dumps(figures))
        return
    print(f"SDK server dispatch of tools/call, p50: {figures['server_dispatch_us']:.0f} µs")
    print(f"SDK ClientSession.call_tool, p50:       {figures['client_call_us']:.0f} µs")
    print(f"the relay's floor in the SDK (sum):     {figures['relay_floor_us']:.0f} µs")


if __name__ == "__main__":
    main()
