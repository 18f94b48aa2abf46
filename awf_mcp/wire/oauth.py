"""OAuth for ``auth = "oauth"`` upstreams, on the SDK's own client (``mcp.client.auth``): the stored tokens.

Contract
--------
Everything OAuth is the SDK's :class:`~mcp.client.auth.OAuthClientProvider`: protected-resource
metadata, then authorization-server metadata (its issuer checked), a client ID metadata document
where the server accepts one (``client_metadata_url``) or else dynamic client registration (or
the ``client_id`` registered beforehand), PKCE, the resource indicator, the scopes the server
asks for, the state check, the token exchange and the refresh. This module gives it:

* :class:`StoredTokens`, its ``TokenStorage``, over :mod:`awf_mcp.state.tokenstore` (the OS
  keyring, else a ``0600`` file in the user's state directory; never a config file). The
  absolute expiry, and the endpoints of the authorization server's metadata, are kept beside
  the tokens so that a later process knows an access token has expired and refreshes it, at the
  token endpoint the metadata named (not the server's own ``/token``), rather than sending it
  (:class:`_Provider`), a little before the end of its life (:class:`_Context`). When a refresh is
  refused because another awf-mcp process used the same (rotating) refresh token first, the
  tokens that process stored are taken (looked for during about two seconds): two processes
  refreshing at once keep the sign-in, and a refused refresh never erases what is stored.
* :func:`oauth_provider`, the SDK's provider over those tokens; the sign-in that sends a person
  to the authorization page with it (``awf-mcp servers login NAME``, or through the agent) is
  :mod:`awf_mcp.wire.oauthsignin`'s, and ends in :class:`SignInFailed` with one sentence when it
  does not sign in.
* :func:`serving_auth` (``serve``, ``servers list``, ``doctor``): the provider over the stored
  tokens, refreshed by the SDK when they expire. It never asks a person: where the SDK would
  send the user to the authorization page, the connection fails with
  ``server 'NAME' needs sign-in: run awf-mcp servers login NAME`` (:func:`describe_failure`
  turns that, and the SDK's OAuth errors, into the connection's reason). A server that asks
  for no token is served without one, so ``auth = "oauth"`` on an open server costs nothing.
* :func:`sign_out` forgets the entry and asks the authorization server to revoke the tokens
  when its metadata names a revocation endpoint (RFC 7009; the answer is reported, not needed).
* :func:`state` says, without a request, what is stored: signed in (expiry), or needs sign-in.

The authorization server's metadata is taken only when its token, registration and revocation
endpoints are on its issuer's host, or on a host the server's ``oauth_endpoint_hosts`` lists
(:func:`endpoint_elsewhere`); otherwise the sign-in, the refresh or the connection fails with
one sentence naming the host and the line to add, before anything is sent there (``servers
logout`` then forgets the tokens without revoking them).

No token, code or client secret is logged, printed or put in an error by this module; the
SDK's ``mcp.client.auth`` logger (tracebacks of OAuth failures) is silenced.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)

from awf_mcp import __version__
from awf_mcp.core.servers import ServerSpec
from awf_mcp.core.upstream import UpstreamFailure
from awf_mcp.ports import inert_text
from awf_mcp.state import tokenstore

EXPIRY_MARGIN_SECONDS = 60.0
REFRESH_WAIT_ROUNDS = 20
REFRESH_WAIT_SECONDS = 0.1
"""A refused refresh looks for the tokens another process stored this many times, this far apart."""
_PLACEHOLDER_REDIRECT = "http://127.0.0.1/callback"
"""The redirect URI of the serving provider's metadata: it never sends anyone to authorize."""


class SignInNeeded(Exception):
    """Serving reached the point where a person must sign in."""


class SignInFailed(Exception):
    """``servers login`` did not sign in; the message is one sentence for the user."""


def login_command(name: str) -> str:
    """The command that signs in to server NAME."""
    return f"awf-mcp servers login {name}"


def needs_sign_in(name: str) -> str:
    """The sentence for a server that needs sign-in."""
    return f"server '{name}' needs sign-in: run {login_command(name)}"


def _key(spec: ServerSpec) -> str:
    return tokenstore.entry_key(spec.name, spec.url)


KEPT_METADATA = (
    "issuer",
    "authorization_endpoint",
    "token_endpoint",
    "registration_endpoint",
    "revocation_endpoint",
    "response_types_supported",
)
"""What is kept of the authorization server's metadata beside the tokens: its endpoints."""
MAX_KEPT_METADATA_BYTES = 16 * 1024
"""Metadata whose kept part is larger is not kept (the next process discovers it again)."""


def _kept_metadata(metadata: OAuthMetadata | None) -> dict[str, Any]:
    """The part of METADATA kept beside the tokens (empty: none, or over :data:`MAX_KEPT_METADATA_BYTES`)."""
    if metadata is None:
        return {}
    kept = metadata.model_dump(mode="json", exclude_none=True, include=set(KEPT_METADATA))
    return kept if len(json.dumps(kept)) <= MAX_KEPT_METADATA_BYTES else {}


class StoredTokens:
    """The SDK's ``TokenStorage`` over :mod:`awf_mcp.state.tokenstore` for one server.

    ``fresh``: read no tokens (a sign-in starts over). ``redirect_uri``: a registered client is
    read only if that URI is among its redirect URIs (a new loopback port registers anew).
    """

    def __init__(self, spec: ServerSpec, *, fresh: bool = False, redirect_uri: str = "") -> None:
        self.spec = spec
        self.fresh = fresh
        self.redirect_uri = redirect_uri
        self.authorization_server: OAuthMetadata | None = None
        """The authorization server's metadata the tokens came from, kept beside them."""

    def stored_authorization_server(self) -> OAuthMetadata | None:
        """The metadata kept beside the stored tokens (None: none, or not valid metadata)."""
        if self.fresh:
            return None
        stored = tokenstore.load(_key(self.spec)).get("authorization_server")
        try:
            return OAuthMetadata.model_validate(stored) if isinstance(stored, dict) else None
        except ValueError:
            return None

    async def get_tokens(self) -> OAuthToken | None:
        if self.fresh:
            return None
        stored = tokenstore.load(_key(self.spec)).get("tokens")
        if not isinstance(stored, dict):
            return None
        fields = {k: v for k, v in stored.items() if k != "expires_at"}
        expires_at = stored.get("expires_at")
        if isinstance(expires_at, int | float):
            fields["expires_in"] = int(expires_at - time.time())
        try:
            return OAuthToken.model_validate(fields)
        except ValueError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record: dict[str, Any] = tokens.model_dump(mode="json", exclude_none=True)
        record.pop("expires_in", None)
        if tokens.expires_in is not None:
            record["expires_at"] = time.time() + int(tokens.expires_in)
        with tokenstore.updating(_key(self.spec)) as entry:
            entry["tokens"] = record
            entry.pop("asked_for_none", None)
            kept = _kept_metadata(self.authorization_server)
            if kept:
                entry["authorization_server"] = kept
            if self.fresh:
                entry["signed_in_at"] = time.time()
        self.fresh = False

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.spec.client_id:
            return OAuthClientInformationFull(
                client_id=self.spec.client_id,
                redirect_uris=[self.redirect_uri or _PLACEHOLDER_REDIRECT],  # type: ignore[list-item]
                token_endpoint_auth_method="none",
            )
        stored = tokenstore.load(_key(self.spec)).get("client")
        if not isinstance(stored, dict):
            return None
        try:
            client = OAuthClientInformationFull.model_validate(stored)
        except ValueError:
            return None
        if self.redirect_uri and self.redirect_uri not in {str(uri) for uri in client.redirect_uris or ()}:
            return None
        return client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.spec.client_id:
            return
        with tokenstore.updating(_key(self.spec)) as entry:
            entry["client"] = client_info.model_dump(mode="json", exclude_none=True)

    def note_asked_for_none(self) -> None:
        """Record that the server let a handshake through without asking for a token (:func:`state`)."""
        with tokenstore.updating(_key(self.spec)) as entry:
            entry["asked_for_none"] = time.time()


def endpoint_elsewhere(spec: ServerSpec, metadata: OAuthMetadata) -> str:
    """Why METADATA may not be used for SPEC (empty: it may): a token, registration or revocation
    endpoint on a host other than the issuer's and not in SPEC's ``oauth_endpoint_hosts``."""
    issuer = (metadata.issuer.host or "").lower().rstrip(".")
    allowed = {issuer, *spec.oauth_endpoint_hosts}
    for what, endpoint in (
        ("token", metadata.token_endpoint),
        ("registration", metadata.registration_endpoint),
        ("revocation", metadata.revocation_endpoint),
    ):
        host = (endpoint.host or "").lower().rstrip(".") if endpoint is not None else issuer
        if host not in allowed:
            shown = inert_text(host[:200])
            return (
                f"the authorization server {inert_text(issuer[:200])} puts its {what} endpoint on another "
                f"host, {shown}, and awf-mcp sends no code or token there: if you trust {shown}, add it "
                f"to server '{spec.name}': oauth_endpoint_hosts = [\"{shown}\"]"
            )
    return ""


class _Context(OAuthContext):
    """The SDK's context, taking a token for expired a little before its end (a quarter of its life,
    at most :data:`EXPIRY_MARGIN_SECONDS`): a token refused as expired is answered 401, which the
    SDK takes for a missing sign-in rather than refreshing.

    Authorization-server metadata is checked as it is taken (:func:`endpoint_elsewhere`): metadata
    that puts an endpoint on another host raises :class:`SignInFailed` before any request there."""

    spec: ServerSpec | None = None

    @property
    def oauth_metadata(self) -> OAuthMetadata | None:
        checked: OAuthMetadata | None = self.__dict__.get("_checked_metadata")
        return checked

    @oauth_metadata.setter
    def oauth_metadata(self, metadata: OAuthMetadata | None) -> None:
        if metadata is not None and self.spec is not None:
            refusal = endpoint_elsewhere(self.spec, metadata)
            if refusal:
                raise SignInFailed(refusal)
        self.__dict__["_checked_metadata"] = metadata
        if metadata is not None and isinstance(self.storage, StoredTokens):
            self.storage.authorization_server = metadata

    def update_token_expiry(self, token: OAuthToken) -> None:
        super().update_token_expiry(token)
        if self.token_expiry_time is not None and token.expires_in:
            self.token_expiry_time -= min(EXPIRY_MARGIN_SECONDS, max(int(token.expires_in), 0) / 4)


class _Provider(OAuthClientProvider):
    """The SDK's provider, told the stored tokens' expiry when it loads them (the SDK's own load
    keeps tokens without one, so an expired token would be sent, answered 401 and taken for a
    missing sign-in instead of being refreshed)."""

    def __init__(self, spec: ServerSpec, **arguments: Any) -> None:
        super().__init__(**arguments)
        held = self.context  # the SDK's, as its __init__ made it: every field carried over
        self.context = _Context(**{f.name: getattr(held, f.name) for f in dataclasses.fields(held) if f.init})
        self.context.spec = spec

    async def _initialize(self) -> None:
        await super()._initialize()
        storage = self.context.storage
        if self.context.oauth_metadata is None and isinstance(storage, StoredTokens):
            # The token endpoint to refresh at (checked again): the SDK would otherwise refresh
            # at the server's own /token until a 401 made it discover the metadata.
            self.context.oauth_metadata = storage.stored_authorization_server()
        tokens = self.context.current_tokens
        if tokens is not None and tokens.expires_in is not None:
            self.context.update_token_expiry(tokens)

    async def _handle_refresh_response(self, response: Any) -> bool:
        """The SDK's handling, and when the refresh was refused: another awf-mcp process may have
        used the same refresh token first (the authorization server rotates it on each use), so
        the tokens that process stored are taken instead of giving up the sign-in."""
        used = self.context.current_tokens.refresh_token if self.context.current_tokens else None
        if await super()._handle_refresh_response(response):
            return True
        for _ in range(REFRESH_WAIT_ROUNDS):
            stored = await self.context.storage.get_tokens()
            if stored is not None and stored.refresh_token and stored.refresh_token != used:
                self.context.current_tokens = stored
                if stored.expires_in is not None:
                    self.context.update_token_expiry(stored)
                return True
            await anyio.sleep(REFRESH_WAIT_SECONDS)
        return False


def _metadata(redirect_uri: str) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name="awf-mcp",
        software_id="awf-mcp",
        software_version=__version__,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )


def _quiet_sdk_logger() -> None:
    """The SDK logs its OAuth failures with tracebacks (to stderr, having no handler of its own):
    awf-mcp says each one in a sentence instead, so they go nowhere."""
    sdk = logging.getLogger("mcp.client.auth")
    if not any(isinstance(handler, logging.NullHandler) for handler in sdk.handlers):
        sdk.addHandler(logging.NullHandler())
        sdk.propagate = False


def oauth_provider(
    spec: ServerSpec,
    storage: StoredTokens,
    redirect_uri: str,
    redirect_handler: Callable[[str], Any],
    callback_handler: Callable[[], Any],
) -> _Provider:
    """The SDK's provider for SPEC over STORAGE, sending a person to sign in with REDIRECT_HANDLER and
    awaiting the redirect with CALLBACK_HANDLER (:func:`serving_auth` never does; a sign-in does);
    raises :class:`UpstreamFailure` when SPEC's ``client_metadata_url`` is not one."""
    _quiet_sdk_logger()
    try:
        return _Provider(
            spec,
            server_url=spec.url,
            client_metadata=_metadata(redirect_uri),
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=spec.client_metadata_url or None,
        )
    except ValueError as exc:  # a client_metadata_url that is not an https URL with a path
        raise UpstreamFailure(spec.redact(f"server '{spec.name}': {exc}")) from None


def has_tokens(spec: ServerSpec) -> bool:
    """Whether tokens are stored for SPEC."""
    return isinstance(tokenstore.load(_key(spec)).get("tokens"), dict)


def serving_auth(spec: ServerSpec) -> Any:
    """The SDK's provider over SPEC's stored tokens, never asking a person (see the module docstring).

    Raises :class:`UpstreamFailure` when the token store is refused (another user can read it).
    """
    from awf_mcp.errors import UserError

    try:
        tokenstore.load(_key(spec))
    except UserError as exc:
        raise UpstreamFailure(exc.message) from None

    async def ask_a_person(*_: Any) -> Any:
        raise SignInNeeded(needs_sign_in(spec.name))

    return oauth_provider(spec, StoredTokens(spec), _PLACEHOLDER_REDIRECT, ask_a_person, ask_a_person)


def describe_failure(spec: ServerSpec, exc: BaseException, *, signing_in: bool = False) -> str:
    """The connection's reason for an exception the OAuth provider raised (empty: not an OAuth one).

    SIGNING_IN: for ``servers login`` (what went wrong), else for serving (and the command to run)."""
    if isinstance(exc, SignInNeeded | SignInFailed):
        return str(exc)
    if isinstance(exc, OAuthFlowError) and "State parameter mismatch" in str(exc):
        return "the redirect's state did not match the sign-in's (a stale or forged redirect); nothing stored"
    if isinstance(exc, OAuthFlowError | OAuthTokenError | OAuthRegistrationError):
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        answered = f"the authorization server answered: {inert_text(first)}"
        return f"{answered}; nothing stored" if signing_in else f"{needs_sign_in(spec.name)} ({answered})"
    return ""


@dataclass(frozen=True)
class SignInState:
    """What is stored for a server: ``signed in`` (``expires_at``: epoch seconds or ``None``) or not."""

    signed_in: bool
    expires_at: float | None = None
    refreshable: bool = False
    problem: str = ""
    asked_for_none: bool = False
    """``servers login`` found that the server asks for no sign-in."""


def state(spec: ServerSpec) -> SignInState:
    """What is stored for SPEC, without a request."""
    from awf_mcp.errors import UserError

    try:
        entry = tokenstore.load(_key(spec))
    except UserError as exc:
        return SignInState(False, problem=exc.message)
    tokens = entry.get("tokens")
    if not isinstance(tokens, dict):
        return SignInState(False, asked_for_none="asked_for_none" in entry)
    expires_at = tokens.get("expires_at")
    return SignInState(
        True,
        float(expires_at) if isinstance(expires_at, int | float) else None,
        bool(tokens.get("refresh_token")),
    )


async def sign_out(spec: ServerSpec) -> str:
    """Forget SPEC's tokens and client, revoking the tokens where the server supports it; what was done."""
    import httpx2
    from mcp.client.auth.utils import (
        build_oauth_authorization_server_metadata_discovery_urls,
        build_protected_resource_metadata_discovery_urls,
        create_oauth_metadata_request,
        handle_auth_metadata_response,
        handle_protected_resource_response,
    )

    storage = StoredTokens(spec)
    tokens, client = await storage.get_tokens(), await storage.get_client_info()
    if not tokenstore.forget(_key(spec)):
        return f"server '{spec.name}' was not signed in"
    if tokens is None or client is None:
        return f"forgot the sign-in of server '{spec.name}'"
    revoked = "the server names no revocation endpoint, so they stay valid until they expire"
    try:
        async with httpx2.AsyncClient(timeout=10) as http:
            issuer = None
            for url in build_protected_resource_metadata_discovery_urls(None, spec.url):
                prm = await handle_protected_resource_response(
                    await http.send(create_oauth_metadata_request(url))
                )
                if prm is not None:
                    issuer = str(prm.authorization_servers[0])
                    break
            endpoint = None
            for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, spec.url):
                ok, metadata = await handle_auth_metadata_response(
                    await http.send(create_oauth_metadata_request(url))
                )
                if not ok:
                    break
                if metadata is not None:
                    refusal = endpoint_elsewhere(spec, metadata)
                    if refusal:
                        return f"forgot the tokens of server '{spec.name}'; they were not revoked: {refusal}"
                    endpoint = metadata.revocation_endpoint
                    break
            if endpoint is not None:
                # The client authenticates as it does at the token endpoint (the SDK's own rule).
                context = OAuthContext(spec.url, _metadata(_PLACEHOLDER_REDIRECT), storage, None, None)
                context.client_info = client
                for token, hint in (
                    (tokens.refresh_token, "refresh_token"),
                    (tokens.access_token, "access_token"),
                ):
                    if token:
                        data = {"token": token, "token_type_hint": hint, "client_id": client.client_id}
                        data, headers = context.prepare_token_auth(data, {})
                        answer = await http.post(str(endpoint), data=data, headers=headers)
                        answer.raise_for_status()
                revoked = "the server revoked them"
    except Exception as exc:
        revoked = f"revoking them failed ({type(exc).__name__}), so they stay valid until they expire"
    return f"forgot the tokens of server '{spec.name}'; {revoked}"
