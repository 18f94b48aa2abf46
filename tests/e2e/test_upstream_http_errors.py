"""Why an HTTP upstream could not be reached, as ``awf-mcp servers list`` and ``serve`` say it.

Real sockets on loopback: a port nothing listens on, a host name that does not resolve (the
reserved ``.invalid`` domain), a plain-HTTP server asked for TLS, and a server that answers
404 to the MCP endpoint.
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_upstream import NO_PLUGINS, servers_list, write_config
from tests.helpers.harness import RawServer

pytestmark = pytest.mark.e2e


class NotFound(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def not_found_port() -> Iterator[int]:
    """A plain-HTTP server on loopback answering 404 to everything."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http_table(name: str, url: str) -> str:
    return f'[servers.{name}]\nurl = "{url}"\nstartup_timeout_seconds = 10\n'


def test_servers_list_says_why_each_http_upstream_could_not_be_reached(
    tmp_path: Path, not_found_port: int
) -> None:
    refused = closed_port()
    config = write_config(
        tmp_path,
        http_table("refused", f"http://127.0.0.1:{refused}/mcp"),
        http_table("unresolved", "http://no-such-host.invalid/mcp"),
        http_table("tls", f"https://127.0.0.1:{not_found_port}/mcp"),
        http_table("missing", f"http://127.0.0.1:{not_found_port}/mcp"),
    )
    done = servers_list(config, tmp_path, NO_PLUGINS)
    reasons = {row["name"]: row["reason"] for row in json.loads(done.stdout)["servers"]}
    assert f"connection refused at 127.0.0.1:{refused}" in reasons["refused"]
    assert "name not resolved: no-such-host.invalid" in reasons["unresolved"]
    assert reasons["tls"].startswith("the handshake failed: TLS: ") and "(at 127.0.0.1)" in reasons["tls"]
    assert f"HTTP 404 Not Found at http://127.0.0.1:{not_found_port}/mcp" in reasons["missing"]
    assert not any("closed the connection" in reason for reason in reasons.values())


def test_serve_reports_the_cause_and_serves_the_rest(tmp_path: Path) -> None:
    refused = closed_port()
    config = write_config(tmp_path, http_table("refused", f"http://127.0.0.1:{refused}/mcp"))
    with RawServer("--config", config, env=NO_PLUGINS, cwd=tmp_path) as server:
        server.initialize()
        names = {tool["name"] for tool in server.request("tools/list")["result"]["tools"]}
        assert "Read" in names
        assert (
            f"server 'refused' not served: the handshake failed: connection refused at 127.0.0.1:{refused}"
            in server.stderr()
        )
