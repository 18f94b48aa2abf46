"""Who is calling over HTTP: the guard in front of ``serve --transport http``, and each request's caller.

Contract
--------
:class:`Access` decides who may use ``serve --transport http`` and who each caller is
(a :class:`~awf_mcp.ports.Caller`, :func:`caller_of`). It accepts, in this order:

* a static token (:class:`~awf_mcp.state.httptoken.NamedTokens`: ``--token`` and the
  tokens of ``--token-file``), as ``Authorization: Bearer TOKEN`` or the URL's
  ``?token=TOKEN`` (:func:`query_token`); the caller is ``token`` with the token's name;
* an access token of the configured authorization server
  (:class:`~awf_mcp.wire.httptokens.IssuerTokens`), as ``Authorization: Bearer TOKEN`` only;
  the caller is ``oauth`` with its subject, issuer, client and the configured claims.

How a token is checked is :mod:`awf_mcp.wire.httptokens`'s; this module reads the request. The
resource-server parts are the SDK's: :class:`BearerAuthBackend` (extended by
:class:`CallerBackend` to read ``?token=`` and to say why a token is refused), Starlette's
``AuthenticationMiddleware``, :class:`AuthContextMiddleware` (``get_access_token()``) and
:class:`RequireAuthMiddleware` (``401`` without a token, ``403 insufficient_scope`` without a
required scope), and the protected resource metadata (RFC 9728) of
``create_protected_resource_routes``, served without a token at
``/.well-known/oauth-protected-resource/mcp``. Every ``401`` carries ``WWW-Authenticate:
Bearer`` with ``resource_metadata`` (when an issuer is configured), so the SDK's
``OAuthClientProvider`` and the MCP clients built like it sign in by themselves. A refused
token gets ``401 invalid_token`` with one sentence saying why
(:class:`~awf_mcp.wire.httptokens.TokenRefused`), logged at INFO with the client's address
(through :mod:`~awf_mcp.wire.httpguard`'s filter: at most one such line a minute, the next
saying how many were held back, so a flood of bad tokens cannot flood the log); no token, nor
any part of one, is ever logged. A server without an authorization server answers the paths an
OAuth client probes (:data:`OAUTH_PATHS`) ``404``, saying it takes a bearer token.
"""

from __future__ import annotations

import logging
import urllib.parse
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials, AuthenticationError
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, Response

from awf_mcp.core.config import HttpAuth
from awf_mcp.errors import UserError
from awf_mcp.ports import ANONYMOUS_CALLER, LOCAL_CALLER, Caller
from awf_mcp.state.httptoken import NamedTokens
from awf_mcp.wire.asgi import ASGIApp, Receive, Scope, Send
from awf_mcp.wire.httptokens import STATIC_NAME_CLAIM, CallerVerifier, IssuerTokens, TokenRefused

log = logging.getLogger("awf_mcp.http")
refusals = logging.getLogger("awf_mcp.wire.http")
"""Where refused requests are logged: while serving, like lines at most once a minute (httpguard)."""


def query_token(query: bytes) -> bytes:
    """The first ``token`` parameter of a raw query string, percent-decoded (``b""`` when none)."""
    for part in query.split(b"&"):
        name, _, value = part.partition(b"=")
        if name == b"token":
            return urllib.parse.unquote_to_bytes(value.replace(b"+", b" "))
    return b""


class CallerBackend(BearerAuthBackend):
    """The SDK's bearer backend, also reading a static ``?token=``, and saying why a token is refused."""

    token_verifier: CallerVerifier

    def __init__(self, verifier: CallerVerifier) -> None:
        super().__init__(verifier)

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, AuthenticatedUser] | None:
        header = conn.headers.get("authorization")
        if header is None:
            supplied = query_token(conn.scope.get("query_string") or b"")
            if not supplied:
                return None
            access = self.token_verifier.static_token(supplied)
            if access is None:
                raise AuthenticationError("the ?token= of the URL is not one of this server's tokens")
        else:
            scheme, _, token = header.partition(" ")
            token = token.strip()
            if scheme.lower() != "bearer" or not token:
                raise AuthenticationError("the Authorization header must be 'Bearer <token>'")
            try:
                access = await self.token_verifier.verify_token(token)
            except TokenRefused as exc:
                raise AuthenticationError(str(exc)) from None
            if access is None:
                raise AuthenticationError("the token is not accepted")
        return AuthCredentials(access.scopes), AuthenticatedUser(access)


def caller_of(request: Any) -> Caller:
    """Who made the request being served: its authenticated user's :class:`Caller`.

    ``request`` is the SDK's per-request HTTP request (``None`` on stdio: the local caller);
    a request through an unguarded server (``--no-token``) is anonymous.
    """
    if request is None:
        return LOCAL_CALLER
    scope = getattr(request, "scope", None) or {}
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return ANONYMOUS_CALLER
    access = user.access_token
    claims = dict(access.claims or {})
    name = claims.pop(STATIC_NAME_CLAIM, None)
    if name is not None:
        return Caller(kind="token", token_name=str(name))
    issuer = claims.pop("iss", None)
    return Caller(
        kind="oauth",
        subject=access.subject,
        issuer=str(issuer) if issuer is not None else None,
        client_id=access.client_id or None,
        claims=tuple(claims.items()),
    )


def _header_text(text: str) -> str:
    return "".join(char if " " <= char <= "~" and char not in '"\\' else "'" for char in text)


OAUTH_PATHS = (
    "/.well-known/oauth-",
    "/.well-known/openid-configuration",
    "/register",
    "/authorize",
    "/token",
)
"""Where an OAuth client looks for an authorization server (discovery, registration, sign-in)."""

NOT_AN_OAUTH_SERVER = JSONResponse(
    {
        "error": "not_found",
        "error_description": "this awf-mcp server does not sign clients in with OAuth: send its bearer "
        "token (Authorization: Bearer TOKEN, or ?token=TOKEN in the URL)",
    },
    status_code=404,
)
"""The answer on :data:`OAUTH_PATHS` of a server with no authorization server: a client (mcp-remote)
that took the ``401`` for OAuth learns there is none, instead of failing to register."""

NO_TOKEN = (
    "no access token: send the server's bearer token as 'Authorization: Bearer TOKEN' or as "
    "?token=TOKEN in the URL (awf-mcp serve printed it when it started, or it is in --token-file)"
)


def _credentials(scope: Scope) -> bool:
    """Whether the request carries a token at all (a header, or ``?token=``)."""
    headers = dict(scope.get("headers") or [])
    return b"authorization" in headers or bool(query_token(scope.get("query_string") or b""))


class Access:
    """Who may use the HTTP server: the guard in front of it, the metadata, the reload.

    See the module docstring.
    """

    def __init__(
        self, static: NamedTokens, issuer: IssuerTokens | None = None, settings: HttpAuth | None = None
    ) -> None:
        self.static = static
        self.issuer = issuer
        self.settings = settings
        self.scopes = list(settings.scopes) if settings is not None else []
        self.verifier = CallerVerifier(static, issuer, self.scopes)
        self.metadata_url: str | None = None
        self._public: dict[str, Any] = {}
        if settings is not None:
            self.metadata_url = str(build_resource_metadata_url(AnyHttpUrl(settings.audience)))
            for route in create_protected_resource_routes(  # URLs as spelt: the model keeps a bare path bare
                resource_url=settings.audience,  # type: ignore[arg-type]
                authorization_servers=[settings.issuer],  # type: ignore[list-item]
                scopes_supported=self.scopes or None,
                resource_name="awf-mcp",
            ):
                self._public[route.path] = route

    @classmethod
    async def start(cls, static: NamedTokens, settings: HttpAuth | None) -> Access:
        """The access of ``static`` tokens and, when ``settings`` says, the issuer's (discovered now)."""
        issuer = await IssuerTokens.start(settings) if settings is not None else None
        return cls(static, issuer, settings)

    async def aclose(self) -> None:
        """Close what :meth:`start` opened: the issuer's connections."""
        if self.issuer is not None:
            await self.issuer.aclose()

    def reload(self) -> None:
        """Read the token file again (SIGHUP); a file that fails keeps the tokens in use, logged."""
        if self.static.file is None:
            log.info("SIGHUP: no --token-file to read again")
            return
        try:
            count = self.static.reload()
        except UserError as exc:
            log.warning("SIGHUP: keeping the tokens in use: %s", exc)
            return
        log.info("SIGHUP: read %s again: %d token%s", self.static.file, count, "" if count == 1 else "s")

    def _refusal(self, conn: HTTPConnection, exc: Exception) -> Response:
        reason = str(exc)
        client = conn.client.host if conn.client is not None else "?"
        refusals.info("refused a request from %s: %s", client, reason)
        challenge = f'Bearer error="invalid_token", error_description="{_header_text(reason)}"'
        if self.metadata_url is not None:
            challenge += f', resource_metadata="{self.metadata_url}"'
        else:
            challenge += ', realm="awf-mcp"'
        return JSONResponse(
            {"error": "invalid_token", "error_description": reason},
            status_code=401,
            headers={"WWW-Authenticate": challenge},
        )

    def guard(self, app: ASGIApp) -> ASGIApp:
        """``app`` behind the token check; the protected resource metadata beside it, open to all."""
        required = RequireAuthMiddleware(
            AuthContextMiddleware(app),
            self.scopes,
            AnyHttpUrl(self.metadata_url) if self.metadata_url else None,
        )
        checked = AuthenticationMiddleware(
            required,
            backend=CallerBackend(self.verifier),
            on_error=self._refusal,
        )
        public = self._public
        oauth = self.metadata_url is not None

        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            path = scope.get("path", "")
            route = public.get(path)
            if route is not None:
                await route.handle(scope, receive, send)
                return
            if not oauth and path.startswith(OAUTH_PATHS):
                await NOT_AN_OAUTH_SERVER(scope, receive, send)
                return
            if not oauth and not _credentials(scope):
                await self._refusal(HTTPConnection(scope), AuthenticationError(NO_TOKEN))(
                    scope, receive, send
                )
                return
            await checked(scope, receive, send)

        return guarded
