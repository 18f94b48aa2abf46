"""Two replicas of ``awf-mcp serve --transport http`` behind HAProxy, as ``docs/haproxy.cfg`` sets it up.

For the end-to-end tests (``tests/e2e/test_gateway_replicas.py``) and the ``replicas`` section
of ``bench/run.py``: real processes on loopback ports, HAProxy run on the very file users copy,
its addresses given through the environment variables that file reads.

``replica(name, directory, ...)`` starts one server on a free port with its own working
directory, root, audit log and log file, and yields it once its ``/readyz`` says ready;
``balancer(replicas, directory)`` starts HAProxy in front of two of them and yields it
(:class:`Balancer`: its ``/mcp`` URL and process) once it answers. HAProxy must be
installed (``tests/run.sh`` installs Debian's package); without it the caller fails with a
sentence saying so, it is never skipped.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.harness import end_process, server_command, server_env

REPO = Path(__file__).resolve().parents[2]
HAPROXY_CONFIG = REPO / "docs" / "haproxy.cfg"
TOKEN = "replicas-token-for-tests"
"""The bearer token every replica requires (the same on each, as in a deployment)."""


@dataclass
class Replica:
    """One running ``awf-mcp serve --transport http``."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    directory: Path
    audit: Path
    log: Path

    @property
    def address(self) -> str:
        """``host:port``, as HAProxy's ``server`` line takes it."""
        return self.url.removeprefix("http://").split("/", 1)[0]

    def audit_records(self) -> list[dict[str, Any]]:
        """The audit log's records so far."""
        if not self.audit.exists():
            return []
        return [json.loads(line) for line in self.audit.read_text(encoding="utf-8").splitlines() if line]

    def kill(self) -> None:
        """SIGKILL: the process ends with no goodbye, as a crashed replica does."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 10 s; returns once the process has ended."""
    end_process(process, grace=10)


def wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


@contextmanager
def replica(
    name: str,
    directory: Path,
    *,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
) -> Iterator[Replica]:
    """``awf-mcp serve --transport http`` on a free loopback port, working in ``directory/name``.

    Yielded once its ``/readyz`` says ready (start-up done), which any ``--log-level`` allows.
    """
    home = directory / name
    home.mkdir(parents=True, exist_ok=True)
    log = directory / f"{name}.log"
    audit = directory / f"{name}-audit.jsonl"
    port = free_port()
    argv = server_command(
        "serve",
        "--transport",
        "http",
        "--port",
        str(port),
        "--token",
        TOKEN,
        "--root",
        str(home),
        "--audit-log",
        str(audit),
        *args,
    )
    with log.open("wb") as errors:  # a pipe nobody reads would fill with the call log and block
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=server_env(env),
            cwd=home,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_for(
            lambda: get(f"http://127.0.0.1:{port}/readyz", 1.0) == 200 or process.poll() is not None,
            60,
            f"replica {name} to be ready",
        )
        assert process.poll() is None, f"replica {name} did not start: {log.read_text()}"
        yield Replica(name, url, process, home, audit, log)
    finally:
        stop(process)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def haproxy_binary() -> str:
    """HAProxy's path; an AssertionError saying how to get it when it is not installed."""
    found = shutil.which("haproxy") or next(
        (path for path in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if Path(path).exists()), None
    )
    if found is None:
        raise AssertionError(
            "HAProxy is not installed: tests/run.sh installs it (apt-get install haproxy, as root)"
        )
    return found


def get(url: str, timeout: float = 5.0) -> int:
    """The HTTP status of ``GET url`` (0 when nothing answers)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


@dataclass
class Balancer:
    """A running HAProxy: its ``/mcp`` URL and its process."""

    url: str
    process: subprocess.Popen[bytes]


@contextmanager
def balancer(replicas: Sequence[Replica], directory: Path) -> Iterator[Balancer]:
    """HAProxy with ``docs/haproxy.cfg`` in front of two replicas, once it answers."""
    first, second = replicas
    port = free_port()
    env = {
        "AWF_MCP_LB_BIND": f"127.0.0.1:{port}",
        "AWF_MCP_REPLICA_1": first.address,
        "AWF_MCP_REPLICA_2": second.address,
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
    }
    log = directory / "haproxy.log"
    with log.open("wb") as errors:
        process = subprocess.Popen(
            [haproxy_binary(), "-db", "-f", str(HAPROXY_CONFIG)],
            stdin=subprocess.DEVNULL,
            stdout=errors,
            stderr=errors,
            env=env,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: get(f"{base}/readyz") == 200 or process.poll() is not None, 30, "HAProxy to answer")
        assert process.poll() is None, f"HAProxy did not start: {log.read_text()}"
        yield Balancer(f"{base}/mcp", process)
    finally:
        stop(process)
