"""What OAuth sign-in costs: ``servers login`` end to end, and ``serve`` start with a signed-in server.

Run from the repository root with the project's virtualenv::

    PYTHONPATH=. .venv/bin/python bench/oauth.py [--runs N]

Against ``tests/upstreams/remote_upstream.py`` (the SDK's authorization-server routes on
loopback, approving at once), with a private state directory and the token file. Prints the
median and range of N runs (default 5) of:

* ``login``: ``awf-mcp servers login NAME --no-browser`` from spawn to exit 0, the browser
  played by fetching the printed URL and following the redirects (metadata discovery,
  dynamic registration, authorization, token exchange, the MCP handshake);
* ``serve, token valid`` / ``serve, token refreshed``: spawn -> ``initialize`` -> ``tools/list``
  answered with the server's tools, the access token still valid, or expired (refreshed first).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.helpers.harness import RawServer, server_command, server_env, write_approved
from tests.helpers.remote import remote_upstream


def login(config: str, cwd: Path) -> float:
    started = time.perf_counter()
    process = subprocess.Popen(
        server_command("servers", "login", "remote", "--no-browser", "--config", config),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=server_env({"AWF_MCP_NO_PLUGINS": "1"}),
    )
    assert process.stdout is not None
    url = next(line.strip() for line in process.stdout if line.startswith("http"))
    httpx2.get(url, follow_redirects=True, timeout=30)
    assert process.wait(60) == 0, process.stderr.read() if process.stderr else ""
    return time.perf_counter() - started


def serve(config: str, cwd: Path) -> float:
    started = time.perf_counter()
    with RawServer("--config", config, "--no-builtins", env={"AWF_MCP_NO_PLUGINS": "1"}, cwd=cwd) as server:
        server.initialize()
        names = [tool["name"] for tool in server.request("tools/list")["result"]["tools"]]
        elapsed = time.perf_counter() - started
    assert "remote_echo" in names
    return elapsed


def show(label: str, samples: list[float]) -> None:
    ms = [s * 1000 for s in samples]
    print(f"{label:26} median {statistics.median(ms):7.0f} ms   range {min(ms):.0f}-{max(ms):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as temporary:
        os.environ["XDG_STATE_HOME"] = temporary
        os.environ["AWF_MCP_TOKEN_STORE"] = "file"
        cwd = Path(temporary)
        with remote_upstream("oauth", "2") as base:
            text = f'[servers.remote]\nurl = "{base}/mcp"\nauth = "oauth"\n'
            config = str(write_approved(cwd / "awf-mcp.toml", text))
            show("login", [login(config, cwd) for _ in range(runs)])
            show("serve, token valid", [serve(config, cwd) for _ in range(runs)])
            refreshed = []
            for _ in range(runs):
                time.sleep(2.1)
                refreshed.append(serve(config, cwd))
            show("serve, token refreshed", refreshed)


if __name__ == "__main__":
    main()
