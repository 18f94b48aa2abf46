"""An MCP server on loopback HTTP, written with the SDK's own low-level server, transports and auth.

``python remote_upstream.py sse`` serves the HTTP+SSE transport at ``/sse`` (messages at
``/messages/``); ``python remote_upstream.py oauth [TOKEN_SECONDS [DELAY]]`` serves Streamable HTTP at
``/mcp``, protected by the SDK's bearer-auth middleware, with the SDK's authorization-server
routes in front of an in-memory provider that approves every authorization request at once
(no person), registers clients dynamically, issues access tokens that live TOKEN_SECONDS
(default 3600) and rotating refresh tokens (each works once; ``oauth TOKEN_SECONDS DELAY``
makes a refresh wait DELAY seconds before it looks its token up, so that two refreshes
sent together race), and revokes. ``oauth-sse`` serves the same behind the SSE transport, at
``/sse``, built by the SDK's high-level server (``MCPServer.sse_app``, tool ``echo`` only).
``oauth-elsewhere`` is ``oauth`` whose authorization-server metadata names its token and
registration endpoints on ``localhost`` (the same listener under another host name) while its
issuer is ``127.0.0.1``. ``oauth-token-path TOKEN_SECONDS`` is ``oauth`` whose token endpoint is
``/oauth/token``, named only in its metadata (``/token`` answers 404).
Each listens on 127.0.0.1, port 0, and prints ``port <N>`` on stdout once listening; with
``REMOTE_UPSTREAM_TLS_CERT`` and ``REMOTE_UPSTREAM_TLS_KEY`` (PEM files) set, it speaks HTTPS.

Tools: ``echo`` answers ``echo: <message>``; ``whoami`` answers the client ID its token
was issued to (``anonymous`` without auth). Its instructions are :data:`INSTRUCTIONS`.

``python remote_upstream.py issuer KEY_PEM [NAME=GROUP,GROUP ...]`` serves only an authorization
server (no MCP): the same routes and approving provider, whose access tokens are JWTs signed
with the private key in file KEY_PEM (RS256 for an RSA key, ES256 for a P-256 one, key ID
``test-key``), with ``iss`` this server, ``aud`` the ``resource`` the client asked for, ``sub``
the client's registered ``client_name``, ``groups`` as NAME=GROUP,... gives for that name,
``scope`` and ``exp``; its metadata adds ``jwks_uri`` (``/jwks``, the public key) and
``introspection_endpoint`` (``/introspect``, RFC 7662, answering for the opaque tokens made with
``POST /opaque?sub=NAME&aud=URL&scope=S``, and ``active: false`` for anything else). It listens
and prints its port as the others do.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import socket
import sys
import time
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    ProviderTokenVerifier,
    RefreshToken,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

TOOLS = [
    types.Tool(
        name="echo",
        description="Echo.",
        input_schema={"type": "object", "properties": {"message": {"type": "string"}}},
    ),
    types.Tool(
        name="whoami", description="The client the token was issued to.", input_schema={"type": "object"}
    ),
]


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "whoami":
        token = get_access_token()
        answer = token.client_id if token is not None else "anonymous"
    else:
        answer = f"echo: {arguments.get('message', '')}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=answer)])


class ApprovingProvider:
    """The SDK's authorization-server provider protocol, in memory, approving at once."""

    def __init__(self, token_seconds: int, refresh_delay: float) -> None:
        self.token_seconds = token_seconds
        self.refresh_delay = refresh_delay
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        query = {"code": code, "state": params.state}
        from mcp.server.auth.provider import construct_redirect_uri

        return construct_redirect_uri(str(params.redirect_uri), **query)

    async def load_authorization_code(self, client: Any, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(16)}", f"rt-{secrets.token_urlsafe(16)}"
        expires = math.ceil(time.time()) + self.token_seconds  # never before the client's expires_in
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access, expires_in=self.token_seconds, refresh_token=refresh, scope=" ".join(scopes)
        )

    async def exchange_authorization_code(
        self, client: Any, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> RefreshToken | None:
        await anyio.sleep(self.refresh_delay)  # two refreshes at once both wait here, then one wins
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: Any, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated: each refresh token works once
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        for table in (self.access, self.refresh):
            for key, value in list(table.items()):
                if value.client_id == token.client_id:
                    del table[key]


class JwtProvider(ApprovingProvider):
    """The approving provider, issuing JWT access tokens (see the module docstring)."""

    def __init__(self, base: str, key_pem: bytes, groups: dict[str, list[str]]) -> None:
        super().__init__(3600, 0.0)
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        self.base = base
        self.key = load_pem_private_key(key_pem, password=None)
        self.algorithm = "RS256" if isinstance(self.key, rsa.RSAPrivateKey) else "ES256"
        self.groups = groups
        self.opaque: dict[str, dict[str, Any]] = {}

    def jwks(self) -> dict[str, Any]:
        import json

        import jwt

        algorithm = jwt.get_algorithm_by_name(self.algorithm)
        public = json.loads(algorithm.to_jwk(self.key.public_key()))  # type: ignore[union-attr]
        return {"keys": [{**public, "kid": "test-key", "use": "sig", "alg": self.algorithm}]}

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        import jwt

        client = self.clients.get(client_id)
        name = (client.client_name if client is not None else None) or client_id
        now = int(time.time())
        claims = {
            "iss": self.base,
            "aud": resource or "",
            "sub": name,
            "client_id": client_id,
            "scope": " ".join(scopes),
            "iat": now,
            "exp": now + self.token_seconds,
            "groups": self.groups.get(name, []),
        }
        access = jwt.encode(claims, self.key, algorithm=self.algorithm, headers={"kid": "test-key"})
        return OAuthToken(access_token=access, expires_in=self.token_seconds, scope=" ".join(scopes))


def issuer_app(base: str, provider: JwtProvider) -> Starlette:
    from mcp.server.auth.routes import build_metadata, create_auth_routes
    from starlette.responses import JSONResponse
    from starlette.routing import BaseRoute

    registration = ClientRegistrationOptions(enabled=True, valid_scopes=["tools"])
    from pydantic import AnyHttpUrl

    issuer = AnyHttpUrl(base)
    metadata = build_metadata(issuer, None, registration, RevocationOptions(enabled=True))
    document = {
        **metadata.model_dump(mode="json", exclude_none=True),
        "issuer": base,  # as spelt, without the slash pydantic adds
        "jwks_uri": f"{base}/jwks",
        "introspection_endpoint": f"{base}/introspect",
    }

    async def show_metadata(request: Request) -> Response:
        return JSONResponse(document)

    async def jwks(request: Request) -> Response:
        return JSONResponse(provider.jwks())

    async def make_opaque(request: Request) -> Response:
        token = f"opaque-{secrets.token_urlsafe(16)}"
        query = request.query_params
        provider.opaque[token] = {
            "active": True,
            "iss": base,
            "sub": query.get("sub", "someone"),
            "aud": query.get("aud", ""),
            "scope": query.get("scope", "tools"),
            "exp": int(time.time()) + 3600,
            "groups": query.getlist("group"),
        }
        return JSONResponse({"token": token})

    async def introspect(request: Request) -> Response:
        form = await request.form()
        return JSONResponse(provider.opaque.get(str(form.get("token")), {"active": False}))

    routes: list[BaseRoute] = [
        Route("/.well-known/oauth-authorization-server", endpoint=show_metadata, methods=["GET"]),
        Route("/jwks", endpoint=jwks, methods=["GET"]),
        Route("/opaque", endpoint=make_opaque, methods=["POST"]),
        Route("/introspect", endpoint=introspect, methods=["POST"]),
        *create_auth_routes(
            provider=provider,
            issuer_url=issuer,
            client_registration_options=registration,
            revocation_options=RevocationOptions(enabled=True),
        ),
    ]
    return Starlette(routes=routes)


def serve_issuer() -> None:
    """``issuer KEY_PEM [NAME=GROUP,GROUP ...]``: the authorization server alone."""
    sock = listen()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with open(sys.argv[2], "rb") as file:
        key_pem = file.read()
    groups = {}
    for item in sys.argv[3:]:
        name, _, listed = item.partition("=")
        groups[name] = [group for group in listed.split(",") if group]
    app = issuer_app(base, JwtProvider(base, key_pem, groups))
    print(f"port {sock.getsockname()[1]}", flush=True)
    anyio.run(uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).serve, [sock])


INSTRUCTIONS = "Call echo to hear a message back; whoami names the client the sign-in was for."


def listen() -> socket.socket:
    # IPPROTO_TCP, so that asyncio sets TCP_NODELAY on each connection: without it a response's
    # body waits about 40 ms for the client's delayed ACK of its headers (awf_mcp.wire.http.listen).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def sse_app(server: Server[Any]) -> Starlette:
    transport = SseServerTransport("/messages/")

    async def handle_sse(request: Request) -> Response:
        async with transport.connect_sse(request.scope, request.receive, request._send) as (reads, writes):
            await server.run(reads, writes, server.create_initialization_options())
        return Response()

    return Starlette(
        routes=[
            Route("/sse", endpoint=handle_sse, methods=["GET"]),
            Mount("/messages/", app=transport.handle_post_message),
        ]
    )


def auth_settings(base: str, path: str) -> AuthSettings:
    return AuthSettings(
        issuer_url=base,
        resource_server_url=f"{base}{path}",
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["tools"]),
        revocation_options=RevocationOptions(enabled=True),
        required_scopes=["tools"],
        validate_token_resource=True,
    )


def oauth_sse_app(base: str, provider: ApprovingProvider) -> Starlette:
    """The SSE transport behind the same auth, as the SDK's high-level server builds it."""
    from mcp.server.mcpserver import MCPServer

    server: MCPServer[Any] = MCPServer(
        "remote", auth=auth_settings(base, "/sse"), auth_server_provider=provider
    )

    @server.tool()
    def echo(message: str) -> str:
        """Echo."""
        return f"echo: {message}"

    return server.sse_app()


def oauth_app(server: Server[Any], base: str, provider: ApprovingProvider) -> Starlette:
    auth = auth_settings(base, "/mcp")
    return server.streamable_http_app(
        auth=auth,
        auth_server_provider=provider,
        token_verifier=ProviderTokenVerifier(provider),
        host="127.0.0.1",
    )


class EndpointsElsewhere:
    """ASGI: the authorization-server metadata of APP with its token and registration endpoints moved
    to another host name, ``localhost``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/.well-known/oauth-authorization-server"):
            await self.app(scope, receive, send)
            return
        moved = ("//127.0.0.1:", "//localhost:")
        await rewrite_metadata(
            self.app, scope, receive, send, {"token_endpoint": moved, "registration_endpoint": moved}
        )


class TokenEndpointMoved:
    """ASGI: APP's token endpoint served at ``/oauth/token`` instead of ``/token``, as its metadata says."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/token":
            await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["type"] == "http" and scope["path"] == "/oauth/token":
            scope = {**scope, "path": "/token", "raw_path": b"/token"}
        elif scope["type"] == "http" and scope["path"].startswith("/.well-known/oauth-authorization-server"):
            moved = {"token_endpoint": ("/token", "/oauth/token")}
            await rewrite_metadata(self.app, scope, receive, send, moved)
            return
        await self.app(scope, receive, send)


async def rewrite_metadata(
    app: Any, scope: Any, receive: Any, send: Any, changes: dict[str, tuple[str, str]]
) -> None:
    """APP's answer to SCOPE (a metadata document) with each key of CHANGES's value text replaced."""
    held: list[Any] = []

    async def hold(message: Any) -> None:
        held.append(message)

    await app(scope, receive, hold)
    start, body = held[0], b"".join(m.get("body", b"") for m in held[1:])
    metadata = json.loads(body)
    for key, (old, new) in changes.items():
        metadata[key] = metadata[key].replace(old, new)
    body = json.dumps(metadata).encode()
    headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
    await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    if sys.argv[1] == "issuer":
        serve_issuer()
        return
    mode = sys.argv[1]
    sock = listen()
    port = sock.getsockname()[1]
    server: Server[Any] = Server(
        "remote", instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool
    )
    app: Any
    if mode == "sse":
        app = sse_app(server)
    else:
        token_seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 3600
        refresh_delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
        provider = ApprovingProvider(token_seconds, refresh_delay)
        base = f"http://127.0.0.1:{port}"
        app = oauth_sse_app(base, provider) if mode == "oauth-sse" else oauth_app(server, base, provider)
        if mode == "oauth-elsewhere":
            app = EndpointsElsewhere(app)
        elif mode == "oauth-token-path":
            app = TokenEndpointMoved(app)
    tls = {
        "ssl_certfile": os.environ.get("REMOTE_UPSTREAM_TLS_CERT"),
        "ssl_keyfile": os.environ.get("REMOTE_UPSTREAM_TLS_KEY"),
    }
    config = uvicorn.Config(app, log_level="warning", lifespan="on", **tls)
    print(f"port {port}", flush=True)
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
