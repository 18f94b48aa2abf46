"""What checking the caller's token adds to a call of ``serve --transport http``: none, static, JWT,
an opaque token checked by introspection.

Run alone: ``PYTHONPATH=. python bench/tokens.py [CALLS]``, or as ``bench/run.py --only tokens``.

Two servers on loopback, started the same way but for their tokens: one with ``--no-token``,
one with a static ``--token`` and ``--auth-issuer`` (the test authorization server of
``tests/upstreams/remote_upstream.py issuer``, whose JWKS is fetched once at start-up and then
cached; opaque tokens go to its introspection endpoint, over loopback HTTP, at every request).
One keep-alive HTTP client per token kind sends ``tools/call`` of ``Read`` (a one-line
file) over a Streamable HTTP session, batches of :data:`BATCH` in turn (so all three see the
same machine load). Printed: p50 and p99 of each kind, and the added latency of the static
token, the JWT and the opaque token (their percentile minus that of no token); the last is
mostly the authorization server's own answer, which a real one gives over a network. The check
alone is also timed in process (:class:`~awf_mcp.wire.httptokens.CallerVerifier`, the same
objects the server uses), since the difference of two noisy end-to-end medians is coarser than
the check itself.
"""

from __future__ import annotations

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.helpers.remote import jwt_issuer, private_key_pem  # noqa: E402

BATCH = 50
STATIC = "bench-static-token-" + "s" * 24
ACCEPT = "application/json, text/event-stream"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def start(argv: list[str], env: dict[str, str], log: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """Start a server logging to ``log`` (a pipe nobody reads would fill); its URL once listening."""
    process = subprocess.Popen([*argv, "--log-file", str(log)], stdin=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        found = re.search(r"listening on (http://\S+)", log.read_text() if log.exists() else "")
        if found:
            return found.group(1), process
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"the HTTP server did not start: {log.read_text() if log.exists() else ''}")


class Session:
    """One Streamable HTTP session of raw JSON-RPC, with a keep-alive connection."""

    def __init__(self, url: str, token: str | None) -> None:
        import httpx2

        headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.url = url
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]  # no 40 ms of Nagle and delayed ACK
        self.client = httpx2.Client(
            headers=headers, timeout=30, transport=httpx2.HTTPTransport(socket_options=nodelay)
        )
        self.ids = 0
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        response = self.client.post(url, json=self._message("initialize", init))
        response.raise_for_status()
        self.client.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        self.client.headers["Mcp-Protocol-Version"] = "2025-06-18"
        self.client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _message(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        return {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}

    def call(self, path: str) -> float:
        message = self._message("tools/call", {"name": "Read", "arguments": {"path": path}})
        before = time.perf_counter()
        response = self.client.post(self.url, json=message)
        elapsed = time.perf_counter() - before
        if response.status_code != 200 or '"isError":true' in response.text:
            raise RuntimeError(f"the call failed: HTTP {response.status_code} {response.text[:200]}")
        return elapsed


def introspected_token(issuer: str, audience: str) -> str:
    """An opaque token the test authorization server answers for at its introspection endpoint."""
    import urllib.parse
    import urllib.request

    query = urllib.parse.urlencode({"sub": "bench", "aud": audience, "scope": "tools"})
    request = urllib.request.Request(f"{issuer}/opaque?{query}", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        token: str = json.loads(response.read())["token"]
    return token


def in_process(issuer: str, audience: str, key: bytes, rounds: int) -> dict[str, float]:
    """Microseconds per check, median of ``rounds``, through the objects the server uses: a static
    token, a JWT seen before (remembered), and a JWT seen for the first time (signature checked)."""
    import anyio
    import jwt

    from awf_mcp.core.config import HttpAuth
    from awf_mcp.state.httptoken import NamedTokens
    from awf_mcp.wire.httptokens import CallerVerifier, IssuerTokens

    now = int(time.time())
    fresh = [
        jwt.encode(
            {
                "iss": issuer,
                "aud": audience,
                "sub": "bench",
                "scope": "tools",
                "exp": now + 3600,
                "jti": str(i),
            },
            key,
            "RS256",
            headers={"kid": "test-key"},
        )
        for i in range(rounds + 1)
    ]

    async def measure() -> dict[str, float]:
        tokens = await IssuerTokens.start(HttpAuth(issuer=issuer, audience=audience, scopes=("tools",)))
        verifier = CallerVerifier(NamedTokens(STATIC), tokens, ["tools"])
        figures = {}
        for kind, series in (
            ("static", [STATIC] * rounds),
            ("JWT remembered", [fresh[-1]] * rounds),
            ("JWT first use", fresh[:rounds]),
        ):
            samples = []
            for token in series:
                before = time.perf_counter()
                await verifier.verify_token(token)
                samples.append(time.perf_counter() - before)
            figures[kind] = statistics.median(samples) * 1e6
        return figures

    return anyio.run(measure)


def measure(calls: int, python: str = sys.executable, env: dict[str, str] | None = None) -> dict[str, float]:
    """The figures: p50/p99 per kind (ms), the added p50/p99 (ms), the in-process check (µs)."""
    import jwt

    env = dict(env or os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env["AWF_MCP_NO_PLUGINS"] = "1"
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        (work / "note.txt").write_text("one line\n")
        (work / "key.pem").write_bytes(private_key_pem("rsa"))
        env["XDG_STATE_HOME"] = str(work / "state")
        base = [python, "-m", "awf_mcp", "serve", "--transport", "http", "--root", str(work)]
        with jwt_issuer(work / "key.pem") as issuer:
            open_url, open_server = start([*base, "--port", "0", "--no-token"], env, work / "open.log")
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            audience = f"http://127.0.0.1:{port}/mcp"
            auth = [
                "--port",
                str(port),
                "--token",
                STATIC,
                "--auth-issuer",
                issuer,
                "--auth-audience",
                audience,
            ]
            guarded_url, guarded_server = start(
                [*base, *auth, "--auth-scope", "tools"], env, work / "guarded.log"
            )
            try:
                now = int(time.time())
                claims = {"iss": issuer, "aud": audience, "sub": "bench", "scope": "tools", "exp": now + 3600}
                token = jwt.encode(
                    claims, (work / "key.pem").read_bytes(), "RS256", headers={"kid": "test-key"}
                )
                opaque = introspected_token(issuer, audience)
                sessions = {
                    "no token": Session(open_url, None),
                    "static token": Session(guarded_url, STATIC),
                    "JWT": Session(guarded_url, token),
                    "opaque token": Session(guarded_url, opaque),
                }
                samples: dict[str, list[float]] = {kind: [] for kind in sessions}
                for session in sessions.values():  # warm: imports, the first validation
                    for _ in range(BATCH):
                        session.call("note.txt")
                for _ in range(max(1, calls // BATCH)):
                    for kind, session in sessions.items():
                        samples[kind].extend(session.call("note.txt") for _ in range(BATCH))
                checks = in_process(issuer, audience, (work / "key.pem").read_bytes(), 2000)
            finally:
                for server in (open_server, guarded_server):
                    server.terminate()
                    server.wait(10)
    figures: dict[str, float] = {}
    for kind, values in samples.items():
        figures[f"{kind} p50 ms"] = percentile(values, 0.5) * 1000
        figures[f"{kind} p99 ms"] = percentile(values, 0.99) * 1000
    for kind in ("static token", "JWT", "opaque token"):
        for point in ("p50", "p99"):
            figures[f"{kind} adds {point} ms"] = (
                figures[f"{kind} {point} ms"] - figures[f"no token {point} ms"]
            )
    for kind, value in checks.items():
        figures[f"{kind} check us"] = value
    return figures


def bench_tokens(setup: Any, report: Any) -> None:
    """``bench/run.py``'s ``tokens`` section, every figure in microseconds."""
    calls = 500 if setup.quick else 3000
    figures = measure(calls, setup.python, setup.base_env())
    for name, value in figures.items():
        scale = 1.0 if name.endswith(" us") else 1000.0
        report.row("tokens", name.removesuffix(" us").removesuffix(" ms"), value * scale, "us")
    report.target("JWT adds <= 200 us p50", figures["JWT adds p50 ms"] * 1000, 200, "<=", "us")


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    figures = measure(calls)
    print(json.dumps({name: round(value, 3) for name, value in figures.items()}, indent=2))
    print(f"{'':14}{'p50 ms':>10}{'p99 ms':>10}")
    for kind in ("no token", "static token", "JWT", "opaque token"):
        print(f"{kind:14}{figures[f'{kind} p50 ms']:10.3f}{figures[f'{kind} p99 ms']:10.3f}")
    for kind in ("static token", "JWT", "opaque token"):
        p50, p99 = figures[f"{kind} adds p50 ms"], figures[f"{kind} adds p99 ms"]
        print(f"{kind} adds: p50 {p50:+.3f} ms, p99 {p99:+.3f} ms")
    alone = ", ".join(
        f"{kind} {figures[f'{kind} check us']:.1f} us"
        for kind in ("static", "JWT remembered", "JWT first use")
    )
    print(f"the check alone, in process: {alone}")


if __name__ == "__main__":
    main()
