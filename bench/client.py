"""A minimal MCP client for benchmarks: raw JSON-RPC, one JSON object per line, over pipes.

It does no validation and holds no SDK: a request is one ``json.dumps`` and one
``write``, a response one ``readline`` and one ``json.loads``, so the numbers
measure the server, not the client. Requests may be pipelined (sent before the
previous ones are answered); :meth:`Connection.collect` gathers answers by id.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

PROTOCOL_VERSION = "2025-06-18"
"""The protocol version the client asks for; every server benchmarked speaks it."""

CLIENT_INFO = {"name": "awf-mcp-bench", "version": "1"}


class ServerError(RuntimeError):
    """The server answered with a JSON-RPC error, closed the pipe, or was too slow."""


class Connection:
    """One spawned server and the pipes to it."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: int | IO[bytes] | None = subprocess.DEVNULL,
    ) -> None:
        self.argv = list(argv)
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            bufsize=1 << 20,  # buffered: readline() on a raw pipe would read one byte per syscall
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._out = self.proc.stdout
        self._next_id = 0
        self._early: dict[Any, dict[str, Any]] = {}

    @property
    def pid(self) -> int:
        return self.proc.pid

    # -- wire -----------------------------------------------------------------

    def send(self, message: Mapping[str, Any]) -> None:
        """Write one message as one line."""
        self._in.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self._in.flush()

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        """Send a request without waiting; returns its id."""
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next_id

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def _read_message(self) -> dict[str, Any]:
        line = self._out.readline()
        if not line:
            raise ServerError(f"{self.argv[0]} closed stdout (exit code {self.proc.poll()})")
        result: dict[str, Any] = json.loads(line)
        return result

    def wait_for(self, request_id: int) -> dict[str, Any]:
        """The ``result`` of request ``request_id``; notifications and other answers are kept aside."""
        message = self._early.pop(request_id, None)
        while message is None:
            incoming = self._read_message()
            if "id" not in incoming or "method" in incoming:
                continue  # a notification or a server-to-client request: not ours to answer here
            if incoming["id"] == request_id:
                message = incoming
            else:
                self._early[incoming["id"]] = incoming
        if "error" in message:
            raise ServerError(f"{self.argv[0]}: {message['error']}")
        result: dict[str, Any] = message["result"]
        return result

    def collect(self, request_ids: Sequence[int]) -> list[dict[str, Any]]:
        """The results of several pipelined requests, in the order given."""
        return [self.wait_for(request_id) for request_id in request_ids]

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.wait_for(self.request(method, params))

    # -- MCP ------------------------------------------------------------------

    def handshake(self) -> list[dict[str, Any]]:
        """``initialize``, ``notifications/initialized``, ``tools/list``; returns the tools."""
        self.call(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        self.notify("notifications/initialized")
        tools: list[dict[str, Any]] = self.call("tools/list", {})["tools"]
        return tools

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self.call("tools/call", {"name": name, "arguments": dict(arguments)})

    def start_tool(self, name: str, arguments: Mapping[str, Any]) -> int:
        return self.request("tools/call", {"name": name, "arguments": dict(arguments)})

    # -- process ----------------------------------------------------------------

    def rss_bytes(self) -> int:
        """Resident set size of the server and every descendant process, in bytes."""
        return sum(_rss_of(pid) for pid in [self.pid, *_descendants(self.pid)])

    def close_stdin_and_wait(self, timeout: float = 10.0) -> float:
        """Close stdin (EOF) and return the seconds until the process exited."""
        started = time.perf_counter()
        self._in.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise ServerError(f"{self.argv[0]} did not exit within {timeout:g} s of stdin EOF") from None
        elapsed = time.perf_counter() - started
        self._out.close()
        return elapsed

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self._in, self._out):
            with contextlib.suppress(OSError):
                stream.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            try:
                self.close_stdin_and_wait(timeout=5.0)
            except (ServerError, OSError):
                self.kill()
        else:
            self.kill()


def text_of(result: Mapping[str, Any]) -> str:
    """The concatenated text content of a ``tools/call`` result."""
    return "".join(item.get("text", "") for item in result.get("content", []) if item.get("type") == "text")


def _rss_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found
