"""A loopback MCP server on HTTP for tests: ``tests/upstreams/remote_upstream.py`` as a subprocess."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[1] / "upstreams" / "remote_upstream.py"


@contextlib.contextmanager
def remote_upstream(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run ``remote_upstream.py ARGS...``; yield its base URL (``http://127.0.0.1:<port>``).

    ``env`` adds to its environment (``REMOTE_UPSTREAM_TLS_*``: HTTPS, on the same port).
    """
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
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


def tls_files(directory: Path, *names: str) -> tuple[Path, Path, Path]:
    """A new certificate authority and a server certificate it signed for ``names``.

    Returns the paths of the authority's certificate, the server's certificate and its key
    (PEM, written into ``directory``).
    """
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    authority_key = ec.generate_private_key(ec.SECP256R1())
    server_key = ec.generate_private_key(ec.SECP256R1())
    authority_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "awf-mcp test authority")])
    authority = (
        x509.CertificateBuilder()
        .subject_name(authority_name)
        .issuer_name(authority_name)
        .public_key(authority_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(authority_key.public_key()), critical=False)
        .sign(authority_key, hashes.SHA256())
    )
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(authority_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(authority_key.public_key()), critical=False
        )
        .sign(authority_key, hashes.SHA256())
    )
    paths = (directory / "authority.pem", directory / "server.pem", directory / "server-key.pem")
    paths[0].write_bytes(authority.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths
