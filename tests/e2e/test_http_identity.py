"""Who calls ``serve --transport http``: an authorization server's access tokens, named static tokens.

The authorization server is ``tests/upstreams/remote_upstream.py issuer`` (the SDK's
authorization-server routes, issuing RS256 JWTs, with a JWKS and an introspection endpoint);
the client signs in through the 401 with the SDK's own ``OAuthClientProvider``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.test_http import start_http, stop
from tests.helpers.harness import server_command, server_env
from tests.helpers.remote import jwt_issuer, private_key_pem, signing_in_client

pytestmark = pytest.mark.e2e

GUARD = str(Path(__file__).resolve().parents[2] / "plugins" / "awf-plugin-guard")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def guard_env(**extra: str) -> dict[str, str]:
    """The server's environment with this checkout's guard plugin first on the path."""
    path = os.pathsep.join(filter(None, [GUARD, os.environ.get("PYTHONPATH", "")]))
    return server_env({"PYTHONPATH": path, **extra})


@dataclass
class Gateway:
    url: str
    issuer: str
    key: bytes
    audit: Path
    process: subprocess.Popen[bytes]

    def mint(self, key: bytes | None = None, algorithm: str = "RS256", **changes: Any) -> str:
        """A JWT as the issuer would make it for ``alice``, with ``changes`` to its claims."""
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": self.url,
            "sub": "alice",
            "scope": "tools",
            "iat": now,
            "exp": now + 600,
            "groups": ["shell"],
            **changes,
        }
        claims = {name: value for name, value in claims.items() if value is not None}
        return jwt.encode(claims, key or self.key, algorithm=algorithm, headers={"kid": "test-key"})

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.audit.read_text().splitlines()]


@contextlib.contextmanager
def open_gateway(tmp_path: Path, root: Path, kind: str = "rsa") -> Iterator[Gateway]:
    """An issuer with a new ``kind`` key and ``serve --transport http`` accepting its tokens."""
    key = private_key_pem(kind)
    (tmp_path / "key.pem").write_bytes(key)
    audit = tmp_path / "audit.jsonl"
    with jwt_issuer(tmp_path / "key.pem", "alice=shell,dev", "bob=dev") as issuer:
        port = free_port()
        audience = f"http://127.0.0.1:{port}/mcp"
        url, process = start_http(
            "--port",
            str(port),
            "--auth-issuer",
            issuer,
            "--auth-audience",
            audience,
            "--auth-scope",
            "tools",
            "--audit-log",
            str(audit),
            "--root",
            str(root),
            env=guard_env(AWF_MCP_PLUGIN_GUARD_TOOL_GROUPS="Bash=shell"),
        )
        assert url == audience
        yield Gateway(url, issuer, key, audit, process)
        stderr = stop(process)
        for line in stderr.splitlines():  # nothing of any token is ever logged
            assert "eyJ" not in line and "opaque-" not in line, line


@pytest.fixture
def gateway(tmp_path: Path, root: Path) -> Iterator[Gateway]:
    with open_gateway(tmp_path, root) as gateway:
        yield gateway


async def call_as(url: str, name: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with (
        signing_in_client(url, name) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"Read", "Bash"} <= names
        return [await session.call_tool(tool, arguments) for tool, arguments in calls]


def text(result: Any) -> str:
    return "".join(getattr(item, "text", "") for item in result.content)


@pytest.mark.anyio
async def test_a_client_signs_in_through_the_401_and_the_audit_and_the_guard_know_who_it_is(
    gateway: Gateway, root: Path
) -> None:
    (root / "note.txt").write_text("for the team\n")
    calls = [("Read", {"path": "note.txt"}), ("Bash", {"command": "echo from-the-shell"})]
    alice = await call_as(gateway.url, "alice", calls)
    assert not alice[0].is_error and "for the team" in text(alice[0])
    assert not alice[1].is_error and "from-the-shell" in text(alice[1])
    bob = await call_as(gateway.url, "bob", calls)
    assert not bob[0].is_error
    assert bob[1].is_error and "denied by plugin 'guard'" in text(bob[1]) and "shell" in text(bob[1])
    by_caller = [(r["tool"], r["caller"]["subject"], r["is_error"]) for r in gateway.records()]
    assert by_caller == [
        ("Read", "alice", False),
        ("Bash", "alice", False),
        ("Read", "bob", False),
        ("Bash", "bob", True),
    ]
    first = gateway.records()[0]["caller"]
    assert first["kind"] == "oauth" and first["issuer"] == gateway.issuer
    assert first["claims"] == {"groups": ["shell", "dev"]}


def test_the_protected_resource_metadata_names_the_issuer_and_the_401_points_to_it(gateway: Gateway) -> None:
    base = gateway.url.removesuffix("/mcp")
    metadata = httpx2.get(f"{base}/.well-known/oauth-protected-resource/mcp", timeout=10).json()
    assert metadata["resource"] == gateway.url
    assert metadata["authorization_servers"] == [gateway.issuer]
    assert metadata["scopes_supported"] == ["tools"]
    response = httpx2.post(gateway.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=10)
    assert response.status_code == 401
    assert (
        f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
        in response.headers["www-authenticate"]
    )


def _unsigned(gateway: Gateway) -> str:
    header = {"alg": "none", "typ": "JWT", "kid": "test-key"}
    payload = jwt.decode(gateway.mint(), options={"verify_signature": False})
    parts = [base64.urlsafe_b64encode(json.dumps(p).encode()).rstrip(b"=") for p in (header, payload)]
    return b".".join(parts).decode() + "."


def _shared_secret(gateway: Gateway) -> str:
    """HS256 keyed with the issuer's public key, the old confusion attack."""
    public = httpx2.get(f"{gateway.issuer}/jwks", timeout=10).text.encode()
    header = {"alg": "HS256", "typ": "JWT", "kid": "test-key"}
    payload = jwt.decode(gateway.mint(), options={"verify_signature": False})
    signing = b".".join(
        base64.urlsafe_b64encode(json.dumps(p).encode()).rstrip(b"=") for p in (header, payload)
    )
    signature = base64.urlsafe_b64encode(hmac.new(public, signing, hashlib.sha256).digest()).rstrip(b"=")
    return (signing + b"." + signature).decode()


REFUSED = {
    "expired": (lambda g: g.mint(exp=int(time.time()) - 3600), "has expired"),
    "another audience": (lambda g: g.mint(aud="http://127.0.0.1:1/mcp"), "another audience"),
    "another issuer": (lambda g: g.mint(iss="http://evil.example"), "another issuer"),
    "forged": (lambda g: g.mint(key=private_key_pem("rsa")), "signature does not verify"),
    "alg none": (_unsigned, "alg none"),
    "HS256 with the public key": (_shared_secret, "shared secret"),
    "no exp": (lambda g: g.mint(exp=None), "no exp claim"),
    "not a token of this server": (lambda g: "some-opaque-thing", "not active"),
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_each_bad_token_is_refused_with_401_and_a_sentence(gateway: Gateway, kind: str) -> None:
    make, reason = REFUSED[kind]
    token = make(gateway)
    response = httpx2.post(
        gateway.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert response.status_code == 401
    body = response.json()
    assert body["error"] == "invalid_token" and reason in body["error_description"]
    assert token not in response.text
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_a_token_without_the_required_scope_gets_403(gateway: Gateway) -> None:
    response = httpx2.post(
        gateway.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Authorization": f"Bearer {gateway.mint(scope='other')}"},
        timeout=10,
    )
    assert response.status_code == 403 and response.json()["error"] == "insufficient_scope"


@pytest.mark.anyio
async def test_an_opaque_token_is_checked_by_introspection(gateway: Gateway) -> None:
    async with httpx2.AsyncClient(timeout=10) as client:
        made = await client.post(f"{gateway.issuer}/opaque", params={"sub": "carol", "aud": gateway.url})
        token = made.json()["token"]
        client.headers["Authorization"] = f"Bearer {token}"
        async with (
            streamable_http_client(gateway.url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("Bash", {"command": "echo no"})
    assert result.is_error and "carol" in text(result)
    assert gateway.records()[-1]["caller"]["subject"] == "carol"


def write_tokens(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o600)


@pytest.mark.anyio
async def test_named_tokens_are_read_again_on_sighup(tmp_path: Path, root: Path) -> None:
    tokens = tmp_path / "tokens"
    old, new = "old-token-" + "a" * 20, "new-token-" + "b" * 20
    write_tokens(tokens, f"# the team's scripts\n\nnightly {old}\n")
    audit = tmp_path / "audit.jsonl"
    url, process = start_http("--token-file", str(tokens), "--audit-log", str(audit), "--root", str(root))
    try:

        def status(token: str) -> int:
            request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
            return httpx2.post(url, json=request, headers=headers, timeout=10).status_code

        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {old}"}, timeout=30) as client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("Glob", {"pattern": "*"})
        assert json.loads(audit.read_text().splitlines()[-1])["caller"] == {
            "kind": "token",
            "token_name": "nightly",
        }
        assert status(old) != 401 and status(new) == 401

        write_tokens(tokens, f"deploy {new}\n")
        process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while status(new) == 401 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert status(new) != 401 and status(old) == 401

        write_tokens(tokens, f"deploy {new}\nbroken\n")  # a bad file keeps the tokens in use
        process.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert status(new) != 401 and process.poll() is None
    finally:
        stderr = stop(process)
    assert "keeping the tokens in use" in stderr and "line 2" in stderr
    assert old not in stderr and new not in stderr


def refused_start(*args: str) -> subprocess.CompletedProcess[str]:
    """``serve --transport http ARGS``, which must stop at start-up: what it did."""
    done = subprocess.run(
        server_command("serve", "--transport", "http", "--port", "0", *args),
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(),
    )
    assert done.returncode != 0, done.stderr
    return done


def test_a_bad_token_file_stops_the_start_with_its_line_and_no_token(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    secret = "s3cret-" + "x" * 20
    write_tokens(tokens, f"ok {secret}1\nnot well formed {secret}\n")
    done = refused_start("--token-file", str(tokens))
    assert "line 2" in done.stderr and secret not in done.stderr
    write_tokens(tokens, f"ok {secret}\n")
    tokens.chmod(0o644)
    assert "chmod 600" in refused_start("--token-file", str(tokens)).stderr


def test_a_gateway_beyond_loopback_serves_bash_only_when_told(root: Path) -> None:
    argv = ["--host", "0.0.0.0", "--token", "t" * 32, "--root", str(root)]
    done = refused_start(*argv)
    assert "--allow-shell" in done.stderr and "--exclude Bash" in done.stderr
    for extra in (["--exclude", "Bash"], ["--allow-shell"]):
        url, process = start_http(*argv, *extra)
        stop(process)
        assert url.startswith("http://0.0.0.0:")


def test_an_issuer_signing_with_es256_is_checked_alike(tmp_path: Path, root: Path) -> None:
    with open_gateway(tmp_path, root, "ec") as gateway:

        def status(token: str) -> int:
            request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
            return httpx2.post(gateway.url, json=request, headers=headers, timeout=10).status_code

        assert status(gateway.mint(algorithm="ES256")) not in (401, 403)
        assert status(gateway.mint(key=private_key_pem("ec"), algorithm="ES256")) == 401
        assert status(gateway.mint(key=private_key_pem("rsa"), algorithm="RS256")) == 401
