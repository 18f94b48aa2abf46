"""Two replicas of ``awf-mcp serve --transport http`` behind HAProxy (``docs/haproxy.cfg``).

Real parts, started here: two servers on loopback ports sharing one state key (or not, to
show what the key is for), HAProxy in front of them with the configuration users copy, and
the SDK's own Streamable HTTP client on both protocol families:

* the stateless revision (2026-07-28): calls go round robin, so both audit logs get lines;
  an ``input_required`` round trip (the guard's ``ask``) is finished by the other replica,
  which works with the shared key and fails without it;
* a key rotated in the documented steps fails no call, even with the replicas half-way
  through a step; skipping a step does;
* a handshake-era session (2025-11-25) stays on the replica that answered ``initialize``;
* one replica killed: the stateless calls go on through the other, and the session that
  lived in it ends with a clear error, after which the client starts a new one.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitRequestParams, ElicitResult

from tests.helpers.gateway import TOKEN, Replica, balancer, get, replica
from tests.helpers.harness import call_answering, server_command, server_env, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

ASK_TOUCH = {"AWF_MCP_PLUGINS": "guard", "AWF_MCP_PLUGIN_GUARD_ASK_BASH": r"\btouch\b"}
"""The guard asks the user before any ``touch``; nothing else is asked about."""

ROUND_TRIPS = 4


@contextmanager
def gateway(
    tmp_path: Path, *, shared_key: bool = True, key_files: tuple[str, str] | None = None
) -> Iterator[tuple[str, list[Replica]]]:
    """Two replicas and HAProxy in front: its URL and the replicas.

    The replicas share a key in ``AWF_MCP_STATE_KEY``, or each has its own (``shared_key``
    false), or each reads the key file whose text ``key_files`` gives.
    """
    key = secrets.token_hex(32)
    with ExitStack() as stack:
        replicas = []
        for index, name in enumerate(("one", "two")):
            env = dict(ASK_TOUCH)
            args: list[str] = []
            if key_files is not None:
                path = tmp_path / f"{name}.key"
                path.write_text(key_files[index])
                path.chmod(0o600)
                args = ["--state-key-file", str(path)]
            elif shared_key:
                env["AWF_MCP_STATE_KEY"] = key
            replicas.append(stack.enter_context(replica(name, tmp_path, env=env, args=args)))
        url = stack.enter_context(balancer(replicas, tmp_path)).url
        yield url, replicas


@asynccontextmanager
async def client(url: str, *, stateless: bool, **callbacks: Any) -> AsyncIterator[ClientSession]:
    """The SDK's client through the balancer, opened on the stateless revision or by handshake."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, **callbacks) as session,
    ):
        if stateless:
            await session.discover()
        else:
            await session.initialize()
        yield session


async def say_yes(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"allow": True})


def tools_called(replica: Replica, tool: str = "Bash") -> list[str]:
    return [record["arguments"]["command"] for record in replica.audit_records() if record["tool"] == tool]


def test_both_replicas_are_ready_and_the_probes_need_no_token(tmp_path: Path) -> None:
    with gateway(tmp_path) as (url, replicas):
        for server in replicas:
            base = server.url.removesuffix("/mcp")
            assert (get(f"{base}/healthz"), get(f"{base}/readyz"), get(server.url)) == (200, 200, 401)
        assert get(url.replace("/mcp", "/readyz")) == 200  # through the balancer too


def test_stateless_calls_spread_over_both_replicas(tmp_path: Path) -> None:
    async def scenario(url: str) -> None:
        async with client(url, stateless=True) as session:
            for n in range(8):
                result = await session.call_tool("Bash", {"command": f"echo call {n}"})
                assert not result.is_error and f"call {n}" in text_of(result)

    with gateway(tmp_path) as (url, replicas):
        anyio.run(scenario, url)
        one, two = (tools_called(server) for server in replicas)
    assert one and two, (one, two)
    assert sorted(one + two) == sorted(f"echo call {n}" for n in range(8))


async def ask_round_trips(url: str, *, alternate: bool = False) -> list[tuple[bool, str]]:
    """``touch`` calls the guard asks about, each retried with the answer: (is_error, text) of each.

    A call and its retry are consecutive requests, so round robin always sends the retry to
    the replica that did not ask. ``alternate`` puts a ``tools/list`` before every other call,
    so that the asking replica alternates too.
    """
    outcomes = []
    async with client(url, stateless=True, elicitation_callback=say_yes) as session:
        for n in range(ROUND_TRIPS):
            if alternate and n % 2:
                await session.list_tools()
            try:
                result = await call_answering(session, "Bash", {"command": f"touch made{n}.txt"})
                outcomes.append((bool(result.is_error), text_of(result)))
            except MCPError as exc:
                outcomes.append((True, str(exc)))
    return outcomes


def test_an_input_required_retry_is_finished_by_the_other_replica(tmp_path: Path) -> None:
    """Round robin sends each retry to the replica that did not ask: with the shared key it finishes."""
    with gateway(tmp_path) as (url, replicas):
        outcomes = anyio.run(ask_round_trips, url)
        made = {
            server.name: sorted(p.name for p in server.directory.glob("made*.txt")) for server in replicas
        }
        confirmed = [r for server in replicas for r in server.audit_records() if r.get("confirmation")]
    assert all(not is_error for is_error, _ in outcomes), outcomes
    assert sorted(made["one"] + made["two"]) == [f"made{n}.txt" for n in range(ROUND_TRIPS)]
    assert made["one"] and made["two"], made  # finished on both replicas
    assert len(confirmed) == ROUND_TRIPS and all(r["confirmation"]["answer"] == "yes" for r in confirmed)


def test_without_the_shared_key_the_other_replica_refuses_the_retry(tmp_path: Path) -> None:
    """The same round trips, each replica with a key of its own: every retry is refused."""
    with gateway(tmp_path, shared_key=False) as (url, replicas):
        outcomes = anyio.run(ask_round_trips, url)
        made = [p for server in replicas for p in server.directory.glob("made*.txt")]
    assert len(outcomes) == ROUND_TRIPS
    assert all(is_error and "Invalid or expired requestState" in text for is_error, text in outcomes), (
        outcomes
    )
    assert made == []


OLD_KEY, NEW_KEY = secrets.token_hex(32), secrets.token_hex(32)


@pytest.mark.parametrize(
    ("files", "finish"),
    [
        # The middle of step 2: one replica still seals with the old key, the other with the new
        # one; each opens both, so every retry finishes wherever it lands.
        ((f"{OLD_KEY}\n{NEW_KEY}\n", f"# rotated\n{NEW_KEY}\n{OLD_KEY}\n"), True),
        # Step 1 skipped: what the new key sealed, the replica holding only the old one refuses.
        ((f"{OLD_KEY}\n", f"{NEW_KEY}\n{OLD_KEY}\n"), False),
    ],
    ids=["rotating", "step-skipped"],
)
def test_a_key_rotated_in_steps_fails_no_call(tmp_path: Path, files: tuple[str, str], finish: bool) -> None:
    with gateway(tmp_path, key_files=files) as (url, replicas):
        outcomes = anyio.run(lambda: ask_round_trips(url, alternate=True))
        made = [p for server in replicas for p in server.directory.glob("made*.txt")]
    refused = [text for is_error, text in outcomes if is_error]
    if finish:
        assert refused == [] and len(made) == ROUND_TRIPS, outcomes
    else:  # the calls replica two asked (its new key sealed them) are refused by replica one
        assert refused and all("Invalid or expired requestState" in text for text in refused), outcomes
        assert len(refused) < ROUND_TRIPS and len(made) == ROUND_TRIPS - len(refused)


def test_a_handshake_session_stays_on_one_replica(tmp_path: Path) -> None:
    async def scenario(url: str) -> None:
        async with client(url, stateless=False) as session:
            for n in range(6):
                result = await session.call_tool("Bash", {"command": f"echo session {n}"})
                assert not result.is_error, text_of(result)

    with gateway(tmp_path) as (url, replicas):
        anyio.run(scenario, url)
        calls = [tools_called(server) for server in replicas]
    assert sorted(len(c) for c in calls) == [0, 6], calls


def test_a_killed_replica_leaves_stateless_calls_running_and_its_sessions_start_again(tmp_path: Path) -> None:
    async def scenario(url: str, replicas: list[Replica]) -> None:
        async with client(url, stateless=True) as stateless, client(url, stateless=False) as session:
            first = await session.call_tool("Bash", {"command": "echo before"})
            assert not first.is_error
            (home,) = [server for server in replicas if "echo before" in tools_called(server)]
            (other,) = [server for server in replicas if server is not home]
            home.kill()  # the replica holding the session
            for n in range(6):
                result = await stateless.call_tool("Bash", {"command": f"echo after {n}"})
                assert not result.is_error and f"after {n}" in text_of(result), text_of(result)
            assert sorted(tools_called(other)) == sorted(f"echo after {n}" for n in range(6))
            with pytest.raises(MCPError, match="Session not found"):
                await session.call_tool("Bash", {"command": "echo lost"})
        async with client(url, stateless=False) as again:  # a new session, on the replica left
            result = await again.call_tool("Bash", {"command": "echo again"})
            assert not result.is_error and "again" in text_of(result)
        assert "echo again" in tools_called(other)

    with gateway(tmp_path) as (url, replicas):
        anyio.run(scenario, url, replicas)


@pytest.mark.parametrize("problem", ["open to others", "not hex"])
def test_a_bad_key_stops_the_start_with_one_line_that_never_shows_it(tmp_path: Path, problem: str) -> None:
    key = secrets.token_hex(32) if problem == "open to others" else "k" * 64
    path = tmp_path / "state.key"
    path.write_text(key + "\n")
    path.chmod(0o644 if problem == "open to others" else 0o600)
    done = subprocess.run(
        server_command(
            "serve", "--transport", "http", "--port", "0", "--token", TOKEN, "--state-key-file", str(path)
        ),
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(),
        check=False,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("awf-mcp: error: "), lines
    assert key not in done.stderr and key[:16] not in done.stderr
    assert ("chmod 600" if problem == "open to others" else "openssl rand -hex 32") in lines[0]
