"""What the shared server costs and saves, against serving in-process, measured in one run.

Run from the repository root::

    .venv-test/bin/python bench/shared.py [--runs N] [--awf PATH] [--sessions N]

``--awf`` is the ``awf-mcp`` to measure (default: the console script beside this interpreter;
``AWF_MCP_BINARY`` for the frozen binary). Every server gets a private ``XDG_RUNTIME_DIR``
(so its own shared server) and ``XDG_DATA_HOME``, and ``AWF_MCP_NO_PLUGINS=1`` unless
``--plugins``: the figures are awf-mcp's own, not the plugins' of the environment. It prints:

* **warm start-up**: spawning what a client runs (``awf-mcp daemon shim``: the pip install's
  ``awf-mcp serve``, or the single executable's start-up shim and the binary) until the
  ``tools/list`` answer, the shared server already running; p50 and p90 against 50 ms;
* **cold start-up**: the same when no shared server runs (the shim starts one), against
  serving in-process (``AWF_MCP_SHARED=0``) in interleaved rounds; the ratio, against 1.10;
* **a call**: ``Read`` of a small file in a shim's session and in an in-process session,
  interleaved; the p50 difference, against 0.3 ms (a session reads the agent's pipe itself);
* **N sessions with 2 stdio upstreams** (``tests/upstreams/fake_upstream.py``): the upstream
  processes running, and the memory of the shared server, its sessions and their children
  (PSS, which counts a page shared by forked processes once) against one in-process session
  with its upstreams; the ratio against 1.3; and an upstream call through the shared upstream's
  hub against the same call in an in-process session (reported, no target).

Each figure ends with PASS or MISS; the exit code is 1 when one misses.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / "tests" / "upstreams" / "fake_upstream.py"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


class Server:
    """One ``awf-mcp serve`` driven by raw JSON-RPC lines, as a client starts it."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd
        )
        self.next_id = 10

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line(message))
        self.process.stdin.flush()

    def answer(self, wanted: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            raw = self.process.stdout.readline()
            if not raw:
                raise RuntimeError("the server closed its output")
            message = json.loads(raw)
            if message.get("id") == wanted:
                return dict(message)

    def start(self) -> float:
        """Milliseconds from spawn to the ``tools/list`` answer."""
        self.send(INITIALIZE)
        self.answer(1)
        self.send(INITIALIZED)
        self.send(LIST)
        self.answer(2)
        return (time.perf_counter() - self.started) * 1000

    def call(self, name: str, arguments: dict[str, Any]) -> float:
        self.next_id += 1
        started = time.perf_counter()
        self.send(
            {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )
        answer = self.answer(self.next_id)
        if answer.get("result", {}).get("isError") or "error" in answer:
            raise RuntimeError(f"{name} failed: {str(answer)[:300]}")
        return (time.perf_counter() - started) * 1000

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for text in rollup:
                if text.startswith("Pss:"):
                    return int(text.split()[1])
    except OSError:
        pass
    return 0


def tree(pid: int) -> list[int]:
    """``pid`` and every live process below it."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
                if fields[0] != b"Z":
                    parents[int(entry)] = int(fields[1])
            except (OSError, IndexError):
                continue
    found, frontier = [pid], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, its in parents.items() if its == parent]
        found += children
        frontier += children
    return found


def upstream_count(pids: list[int]) -> int:
    """The processes among ``pids`` that run fake_upstream.py itself (not their keepers)."""
    count = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                argv = cmdline.read().split(b"\0")
        except OSError:
            continue
        if any(arg.endswith(b"fake_upstream.py") for arg in argv[:3]):
            count += 1
    return count


def daemon(awf: list[str], env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run([*awf, "daemon", *args], env=env, capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout) if args[:2] == ("status", "--json") and done.returncode == 0 else {}


def client_command(awf: list[str], env: dict[str, str]) -> list[str]:
    """What a client configured by this awf-mcp runs for a session (``awf-mcp daemon shim``): the
    single executable's start-up shim and the binary, or the pip install's ``awf-mcp serve``."""
    done = subprocess.run([*awf, "daemon", "shim"], env=env, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(awf)} daemon shim failed: {done.stderr.strip()}")
    return shlex.split(done.stdout)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="timed starts and calls per series (default 30)")
    parser.add_argument("--sessions", type=int, default=8, help="sessions for the sharing figure (default 8)")
    parser.add_argument("--awf", default="", help="the awf-mcp to measure (default: this environment's)")
    parser.add_argument("--plugins", action="store_true", help="load the environment's plugins too")
    args = parser.parse_args()
    binary = os.environ.get("AWF_MCP_BINARY")
    if args.awf:
        awf = [args.awf]
    elif binary:
        awf = [binary]
    else:
        script = Path(sys.executable).with_name("awf-mcp")
        awf = [str(script)] if script.exists() else [sys.executable, "-m", "awf_mcp"]
    scratch = Path(tempfile.mkdtemp(prefix="awf-bs-", dir="/tmp"))
    work = scratch / "work"
    work.mkdir()
    (work / "small.txt").write_text("hello\n")
    runtime = scratch / "run"
    runtime.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWF_MCP_") and k != "PYTHONPATH"}
    env.update(
        XDG_RUNTIME_DIR=str(runtime),
        XDG_DATA_HOME=str(scratch / "data"),
        XDG_STATE_HOME=str(scratch / "state"),
    )
    if not args.plugins:
        env["AWF_MCP_NO_PLUGINS"] = "1"
    in_process = {**env, "AWF_MCP_SHARED": "0"}
    serve = [*client_command(awf, env), "--root", str(work)]
    misses = 0
    print(f"awf-mcp: {' '.join(awf)}; {args.runs} runs; load {os.getloadavg()[0]:.2f}")
    print(f"a client runs: {shlex.join(serve)}")
    try:
        # cold: no shared server running, against in-process, interleaved
        cold: dict[str, list[float]] = {"shim, no server running": [], "in-process": []}
        for _ in range(max(3, args.runs // 5)):
            for label in random.sample(list(cold), len(cold)):
                if label == "in-process":
                    server = Server(serve, in_process, work)
                else:
                    daemon(awf, env, "stop")
                    server = Server(serve, env, work)
                cold[label].append(server.start())
                server.close()
        cold_ratio = statistics.median(cold["shim, no server running"]) / statistics.median(
            cold["in-process"]
        )
        # warm: the shared server running
        warm_server = Server(serve, env, work)
        warm_server.start()  # keeps it running
        warm = []
        for _ in range(args.runs):
            server = Server(serve, env, work)
            warm.append(server.start())
            server.close()
        warm_p50 = statistics.median(warm)
        warm_p90 = sorted(warm)[int(0.9 * (len(warm) - 1))]
        print(
            f"warm start-up (spawn to tools/list, shared server running): p50 {warm_p50:.1f} ms, "
            f"p90 {warm_p90:.1f} ms; target <= 50 ms: {verdict(warm_p50 <= 50)}"
        )
        misses += warm_p50 > 50
        for label, values in cold.items():
            print(f"cold start-up, {label}: p50 {statistics.median(values):.1f} ms")
        print(f"cold start-up ratio shim/in-process: {cold_ratio:.2f}; target <= 1.10: ", end="")
        print(verdict(cold_ratio <= 1.10))
        misses += cold_ratio > 1.10
        # a call: Read through a shim's session and in-process, interleaved
        direct = Server(serve, in_process, work)
        direct.start()
        calls: dict[str, list[float]] = {"shim session": [], "in-process": []}
        servers = {"shim session": warm_server, "in-process": direct}
        read = {"path": str(work / "small.txt")}
        for server in servers.values():
            for _ in range(5):
                server.call("Read", read)
        for _ in range(args.runs * 5):
            for label in random.sample(list(calls), len(calls)):
                calls[label].append(servers[label].call("Read", read))
        added = statistics.median(calls["shim session"]) - statistics.median(calls["in-process"])
        for label, values in calls.items():
            print(f"Read, {label}: p50 {statistics.median(values):.3f} ms")
        print(f"added by the shim: {added:+.3f} ms p50; target <= 0.3 ms: {verdict(added <= 0.3)}")
        misses += added > 0.3
        direct.close()
        warm_server.close()
        # sharing: N sessions with 2 upstreams each, against one in-process session
        config = scratch / "upstreams.toml"
        config.write_text(
            "".join(
                f'[servers.{name}]\ncommand = "{sys.executable}"\nargs = ["{UPSTREAM}", "good"]\n'
                for name in ("a", "b")
            )
        )
        with_upstreams = [*serve, "--config", str(config)]
        one = Server(with_upstreams, in_process, work)
        one.start()
        time.sleep(1.0)
        one_pids = tree(one.process.pid)
        one_pss = sum(pss_kib(pid) for pid in one_pids)
        one_upstreams = upstream_count(one_pids)
        sessions = [Server(with_upstreams, env, work) for _ in range(args.sessions)]
        for server in sessions:
            server.start()
        time.sleep(1.0)
        # an upstream call: in-process (the session runs the upstream) against through a shared hub
        upstream_calls: dict[str, list[float]] = {"shared upstream": [], "in-process upstream": []}
        pause = {"seconds": 0}
        for _ in range(3):
            one.call("a_wait", pause)
            sessions[0].call("a_wait", pause)
        for _ in range(args.runs * 3):
            for label in random.sample(list(upstream_calls), 2):
                server = sessions[0] if label == "shared upstream" else one
                upstream_calls[label].append(server.call("a_wait", pause))
        hub_added = statistics.median(upstream_calls["shared upstream"]) - statistics.median(
            upstream_calls["in-process upstream"]
        )
        for label, values in upstream_calls.items():
            print(f"upstream call, {label}: p50 {statistics.median(values):.3f} ms")
        print(f"added by the hub of a shared upstream: {hub_added:+.3f} ms p50 (no target; reported)")
        one.close()
        status = daemon(awf, env, "status", "--json")
        pids = tree(int(status.get("pid", 0))) if status.get("pid") else []
        shared_pss = sum(pss_kib(pid) for pid in pids)
        upstreams = upstream_count(pids)
        ratio = shared_pss / one_pss if one_pss else float("inf")
        print(
            f"{args.sessions} sessions with 2 upstreams: {upstreams} upstream processes "
            f"(target 2: {verdict(upstreams == 2)}); one in-process session with its upstreams "
            f"{one_pss / 1024:.0f} MiB PSS ({one_upstreams} upstream processes)"
        )
        print(
            f"memory of the shared server and its {args.sessions} sessions: {shared_pss / 1024:.0f} MiB PSS, "
            f"{ratio:.2f} x one session; target <= 1.3: {verdict(ratio <= 1.3)}"
        )
        misses += upstreams != 2
        misses += ratio > 1.3
        for server in sessions:
            server.close()
    finally:
        daemon(awf, env, "stop")
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
