"""The ``replicas`` section of ``bench/run.py``: one replica directly vs two behind HAProxy.

Two ``awf-mcp serve --transport http`` replicas sharing a state key, HAProxy in front of them
with ``docs/haproxy.cfg`` (``tests/helpers/gateway.py`` starts all three, as the end-to-end
tests do), and the echo plugin's ``echo_echo``, called on the stateless revision (2026-07-28):
every call a ``tools/call`` POST of its own, the client's info and capabilities in ``_meta``.
Measured in one run:

* calls/s with :data:`CLIENTS` concurrent clients (each on its own keep-alive connection,
  the next call sent when the last is answered), through one replica directly and through
  HAProxy to two, in alternating rounds; the median round of each and their ratio (the goal:
  two replicas >= 1.5 x one);
* where the time goes during those rounds: the CPU seconds of each process (each replica,
  HAProxy, the load generator), read from ``/proc``, and of every other process on the machine
  (``/proc/stat``), against the machine's cores;
* the latency HAProxy adds, p50 and p99: one client, one call at a time, through HAProxy
  minus directly, HAProxy sending every call to that same replica (a second HAProxy, both
  server lines on it), so that what is measured is the balancer alone; and, for comparison,
  the latency through HAProxy to the two replicas, which alternate.

The load generator speaks HTTP/1.1 itself on asyncio streams (no HTTP library), so that it
costs as little CPU as it can: on a 2-core machine it shares the cores with what it measures.
Without HAProxy (``apt-get install haproxy``) the section is skipped with a message.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.helpers.gateway import TOKEN, balancer, replica  # noqa: E402

CLIENTS = 32
PROTOCOL = "2026-07-28"


def _request(port: int, index: int) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": index,
            "method": "tools/call",
            "params": {
                "name": "echo_echo",
                "arguments": {"text": f"call {index}"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                },
            },
        }
    ).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: {PROTOCOL}\r\nMcp-Method: tools/call\r\nMcp-Name: echo_echo\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Connection:
    """One keep-alive HTTP/1.1 connection sending ``tools/call`` and reading each answer whole."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def call(self, index: int) -> None:
        if self.writer is None or self.reader is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writer.write(_request(self.port, index))
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        headers = dict(
            (name.strip().lower(), value.strip())
            for name, _, value in (line.partition(b":") for line in head.split(b"\r\n")[1:] if line)
        )
        if b"content-length" not in headers:
            raise RuntimeError(f"an answer without Content-Length (status {status})")
        body = await self.reader.readexactly(int(headers[b"content-length"]))
        if status != 200 or b'"isError":false' not in body:
            raise RuntimeError(f"echo_echo failed: {status} {body[:200]!r}")
        if headers.get(b"connection", b"").lower() == b"close":
            self.close()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


async def _throughput(port: int, seconds: float, clients: int = CLIENTS) -> float:
    """Calls/s of ``clients`` closed-loop clients for ``seconds``."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def client(number: int) -> None:
        nonlocal done
        connection = Connection(port)
        index = number
        try:
            while time.perf_counter() < deadline:
                await connection.call(index)
                done += 1
                index += clients
        finally:
            connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    return done / (time.perf_counter() - started)


async def _latencies(port: int, calls: int) -> list[float]:
    connection = Connection(port)
    times = []
    try:
        for index in range(calls):
            before = time.perf_counter()
            await connection.call(index)
            times.append(time.perf_counter() - before)
    finally:
        connection.close()
    return times


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_busy_seconds() -> float:
    """CPU seconds all processes of the machine have used (``/proc/stat``: all but idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def bench_replicas(setup: Any, report: Any) -> None:
    if shutil.which("haproxy") is None and not Path("/usr/sbin/haproxy").exists():
        report.skip("replicas", "HAProxy is not installed (apt-get install haproxy)")
        return
    seconds = 3.0 if setup.quick else 6.0
    rounds = 2 if setup.quick else 5
    latency_calls = 300 if setup.quick else 1000
    env = {
        "AWF_MCP_PLUGINS": "echo",
        "AWF_MCP_STATE_KEY": secrets.token_hex(32),
    }
    args = ("--log-level", "WARNING", "--no-builtins")
    with tempfile.TemporaryDirectory(prefix="awf-bench-replicas-") as scratch, ExitStack() as stack:
        work = Path(scratch)
        replicas = [stack.enter_context(replica(name, work, env=env, args=args)) for name in ("one", "two")]
        front = stack.enter_context(balancer(replicas, work))
        (work / "alone").mkdir()
        # HAProxy with both server lines on replica one: the balancer's own latency, apart from
        # the alternation between two replicas (each then idle every other call).
        alone = stack.enter_context(balancer([replicas[0], replicas[0]], work / "alone"))
        alone_port = int(alone.url.rsplit(":", 1)[1].split("/", 1)[0])
        direct = int(replicas[0].address.rsplit(":", 1)[1])
        through = int(front.url.rsplit(":", 1)[1].split("/", 1)[0])
        processes = {
            "replica one": replicas[0].process.pid,
            "replica two": replicas[1].process.pid,
            "HAProxy": front.process.pid,
            "load generator": os.getpid(),
        }

        async def measure() -> dict[str, Any]:
            await _throughput(direct, 1.0)  # untimed: warm both replicas and HAProxy
            await _throughput(through, 1.0)
            rates: dict[str, list[float]] = {"one": [], "two": []}
            cpu: dict[str, dict[str, float]] = {"one": {}, "two": {}}
            for _ in range(rounds):
                for key, port in (("one", direct), ("two", through)):
                    before = {name: _cpu_seconds(pid) for name, pid in processes.items()}
                    machine = _machine_busy_seconds()
                    started = time.perf_counter()
                    rates[key].append(await _throughput(port, seconds))
                    wall = time.perf_counter() - started
                    ours = 0.0
                    for name, pid in processes.items():
                        share = (_cpu_seconds(pid) - before[name]) / wall
                        ours += share
                        cpu[key][name] = cpu[key].get(name, 0.0) + share / rounds
                    others = max(0.0, (_machine_busy_seconds() - machine) / wall - ours)
                    cpu[key]["other processes"] = cpu[key].get("other processes", 0.0) + others / rounds
            times: dict[str, list[float]] = {"direct": [], "alone": [], "through": []}
            ports = {"direct": direct, "alone": alone_port, "through": through}
            for port in ports.values():
                await _latencies(port, 50)  # untimed
            for _ in range(2):  # interleaved halves, so drift hits each alike
                for key, port in ports.items():
                    times[key] += await _latencies(port, latency_calls // 2)
            return {"rates": rates, "cpu": cpu, **times}

        measured = asyncio.run(measure())
    rates, cpu = measured["rates"], measured["cpu"]
    one, two = statistics.median(rates["one"]), statistics.median(rates["two"])
    cores = os.cpu_count() or 1
    report.row("replicas", f"echo_echo calls/s, {CLIENTS} clients, one replica directly", one, "calls/s")
    report.row("replicas", f"echo_echo calls/s, {CLIENTS} clients, HAProxy to two replicas", two, "calls/s")
    report.row("replicas", "two replicas behind HAProxy / one directly", two / one, "x", f"{cores} cores")
    for key, label, rate in (("one", "one replica directly", one), ("two", "HAProxy to two", two)):
        replica_cores = sum(share for name, share in cpu[key].items() if name.startswith("replica"))
        report.row(
            "replicas",
            f"calls per CPU second of the replicas, {label}",
            rate / replica_cores if replica_cores else None,
            "calls/s",
            f"{replica_cores:.2f} cores",
        )
    for key, label in (("one", "one replica directly"), ("two", "HAProxy to two")):
        used = sum(cpu[key].values())  # the whole machine: what was measured and everything else
        parts = ", ".join(f"{name} {share:.2f}" for name, share in cpu[key].items() if share >= 0.005)
        report.row("replicas", f"CPU busy, {label}", used, "cores", f"of {cores}: {parts}")
    d50, d99 = _percentile(measured["direct"], 0.5), _percentile(measured["direct"], 0.99)
    a50, a99 = _percentile(measured["alone"], 0.5), _percentile(measured["alone"], 0.99)
    t50, t99 = _percentile(measured["through"], 0.5), _percentile(measured["through"], 0.99)
    report.row("replicas", "one call at a time, directly, p50", d50 * 1e6, "µs")
    report.row("replicas", "one call at a time, directly, p99", d99 * 1e6, "µs")
    report.row("replicas", "added by HAProxy (to the same replica), p50", (a50 - d50) * 1e6, "µs")
    report.row("replicas", "added by HAProxy (to the same replica), p99", (a99 - d99) * 1e6, "µs")
    report.row("replicas", "one call at a time, HAProxy to two, p50", t50 * 1e6, "µs", "replicas alternate")
    report.row("replicas", "one call at a time, HAProxy to two, p99", t99 * 1e6, "µs", "replicas alternate")
    report.details["replicas"] = {
        "clients": CLIENTS,
        "seconds_per_round": seconds,
        "calls_per_s": rates,
        "cpu_cores": cpu,
        "latency_ms": {
            "direct": {"p50": d50 * 1000, "p99": d99 * 1000},
            "haproxy_to_the_same_replica": {"p50": a50 * 1000, "p99": a99 * 1000},
            "haproxy_to_two": {"p50": t50 * 1000, "p99": t99 * 1000},
        },
    }
    report.target("two replicas behind HAProxy vs one", two / one, 1.5, ">=")
