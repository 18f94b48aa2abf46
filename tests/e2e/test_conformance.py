"""The official MCP conformance suite against ``awf-mcp serve --transport http``.

The server runs as a user starts it, with the token it keeps; the suite connects to the
URL the server shows, which carries that token.

Every server scenario of ``@modelcontextprotocol/conformance`` (pinned in
tests/conformance/package.json; installed by tests/run.sh) runs; the ones that
do not apply to a tools-only server are listed, each with its reason, in
tests/conformance/expected-failures.yml. The suite's own baseline check fails
on an unexpected failure *and* on a listed scenario that now passes.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.harness import server_command, server_env

HERE = Path(__file__).resolve().parents[1] / "conformance"
SUITE = HERE / "node_modules" / ".bin" / "conformance"

pytestmark = [pytest.mark.e2e, pytest.mark.conformance]


def test_the_conformance_suite_passes_every_applicable_server_scenario(tmp_path: Path) -> None:
    if os.environ.get("AWF_MCP_SKIP_NODE") == "1":
        pytest.skip("AWF_MCP_SKIP_NODE=1: no Node.js on this machine")
    assert SUITE.exists(), "the conformance suite is not installed: npm ci --prefix tests/conformance"
    env = server_env({"AWF_MCP_PLUGINS": "test"})
    env.pop("AWF_MCP_TOKEN", None)  # the default: a token awf-mcp keeps, carried by the URL it shows
    server = subprocess.Popen(
        server_command("serve", "--transport", "http", "--port", "0", "--root", str(tmp_path)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert server.stderr is not None
        url = None
        deadline = time.monotonic() + 30
        while url is None and time.monotonic() < deadline:
            line = server.stderr.readline().decode()
            if not line and server.poll() is not None:
                break
            match = re.search(r"listening on (http://\S+)", line)
            url = match.group(1) if match else None
        assert url, "the server did not start"
        assert "?token=" in url
        result = subprocess.run(
            [
                str(SUITE),
                "server",
                "--url",
                url,
                "--expected-failures",
                str(HERE / "expected-failures.yml"),
                "-o",
                str(tmp_path / "results"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=HERE,
        )
        summary = result.stdout[result.stdout.find("=== SUMMARY ===") :]
        assert result.returncode == 0, summary + result.stderr[-2000:]
        assert "Baseline check passed" in result.stdout
        passed = re.findall(r"✓ ([\w-]+):", summary)
        assert {
            "server-initialize",
            "ping",
            "tools-list",
            "tools-call-simple-text",
            "tools-call-image",
            "tools-call-error",
            "tools-call-with-progress",
            "dns-rebinding-protection",
        } <= set(passed)
    finally:
        server.kill()
        server.wait()
