"""A loopback MCP server on HTTP for tests: ``tests/upstreams/remote_upstream.py`` as a subprocess."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[1] / "upstreams" / "remote_upstream.py"


@contextlib.contextmanager
def remote_upstream(*args: str) -> Iterator[str]:
    """Run ``remote_upstream.py ARGS...``; yield its base URL (``http://127.0.0.1:<port>``)."""
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line.startswith("port "), f"the test upstream did not start: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def private_key_pem(kind: str = "rsa") -> bytes:
    """A new private key in PEM: RSA 2048 (``rsa``) or EC P-256 (``ec``)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    key: Any = (
        rsa.generate_private_key(65537, 2048) if kind == "rsa" else ec.generate_private_key(ec.SECP256R1())
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@contextlib.contextmanager
def jwt_issuer(key_file: Path, *groups: str) -> Iterator[str]:
    """``remote_upstream.py issuer KEY_FILE GROUPS...``: an authorization server issuing JWTs; its URL."""
    with remote_upstream("issuer", str(key_file), *groups) as base:
        yield base


class MemoryTokens:
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


def signing_in_client(url: str, name: str, scope: str = "tools") -> Any:
    """An HTTP client for the MCP server at ``url`` that signs in through its 401, as client ``name``.

    The SDK's :class:`OAuthClientProvider`: protected resource metadata, the authorization
    server's metadata, dynamic registration, authorization code with PKCE. The browser is
    played by fetching the authorization URL and reading the code off its redirect.
    """
    import urllib.parse

    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    redirect = "http://127.0.0.1:9/callback"  # never reached: the code is read off the Location header
    answers: list[AuthorizationCodeResult] = []

    async def follow(authorization_url: str) -> None:
        async with httpx2.AsyncClient(timeout=30) as browser:
            response = await browser.get(authorization_url)
        location = urllib.parse.urlsplit(response.headers["location"])
        query = dict(urllib.parse.parse_qsl(location.query))
        answers.append(AuthorizationCodeResult(code=query["code"], state=query.get("state")))

    async def callback() -> AuthorizationCodeResult:
        return answers.pop()

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name=name,
            redirect_uris=[redirect],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=scope,
            token_endpoint_auth_method="none",
        ),
        storage=MemoryTokens(),
        redirect_handler=follow,
        callback_handler=callback,
    )
    return httpx2.AsyncClient(auth=provider, timeout=30)
