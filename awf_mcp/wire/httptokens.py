"""The tokens an HTTP caller may present, checked: the static ones, and an authorization server's.

Contract
--------
:class:`CallerVerifier` is the SDK's :class:`~mcp.server.auth.provider.TokenVerifier` behind
:class:`~awf_mcp.wire.httpauth.Access` (the HTTP middleware, which reads the request). Given a
token, it answers the SDK's :class:`AccessToken` or raises :class:`TokenRefused` with one
sentence for the caller, never holding the token in it. It tries, in this order:

* a static token (:class:`~awf_mcp.state.httptoken.NamedTokens`: ``--token`` and the tokens of
  ``--token-file``); its access token names it in the claim :data:`STATIC_NAME_CLAIM`, is
  granted every required scope, and its ``client_id`` is :data:`STATIC_PREFIX` and the name;
* an access token of the configured authorization server (:class:`IssuerTokens`).

A token longer than :data:`MAX_TOKEN_BYTES` is refused unread.

:class:`IssuerTokens`:

* at start-up, the issuer's metadata is fetched (RFC 8414
  ``/.well-known/oauth-authorization-server``, else OpenID discovery, in the order the SDK's
  client tries them) and its ``issuer`` must be the configured one; its ``jwks_uri`` gives the
  keys, its ``introspection_endpoint`` (or the configured one) checks opaque tokens;
* a token shaped as a JWT is checked by PyJWT against the issuer's JWKS: the signature, with
  an algorithm of :data:`ALLOWED_ALGORITHMS` only (``none`` and the shared-secret ``HS*`` are
  refused before any key is looked at) and matching the key's declared ``alg``; ``iss`` the
  issuer, ``aud`` naming the audience, ``exp`` required and past (with
  :data:`LEEWAY_SECONDS`), ``nbf`` if present. Keys are fetched once and cached; a token
  naming an unknown ``kid`` refetches them at most every :data:`JWKS_REFRESH_SECONDS`.
  A JWT that passed is remembered by its SHA-256 digest until its ``exp`` (at most
  :data:`VERIFIED_SECONDS`, at most :data:`VERIFIED_BYTES` of tokens, the oldest forgotten
  first), so a client's next calls with it skip the signature check; a refused one is not;
* any other token is introspected (RFC 7662) when an introspection endpoint is known,
  authenticating with the configured client credentials; it must be ``active``, name the
  audience in ``aud`` and, where it says, the issuer and an unexpired ``exp``. Results are
  not cached: a revoked token stops working at once;
* scopes come from ``scope`` (space-separated) or ``scp`` (a list); the caller's claims are
  the configured ones present in the token, at most ``max_claim_bytes`` of JSON together (a
  claim past the bound is dropped and logged by name).

Every fetch is bounded: :data:`FETCH_SECONDS`, :data:`MAX_FETCH_BYTES`. No token, nor any part
of one, is ever logged.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import jwt
from mcp.server.auth.provider import AccessToken

from awf_mcp.core.config import HttpAuth
from awf_mcp.errors import UserError, describe_exception
from awf_mcp.state.httptoken import NamedTokens

log = logging.getLogger("awf_mcp.http")
refusals = logging.getLogger("awf_mcp.wire.http")
"""Where refused requests are logged: while serving, like lines at most once a minute (httpguard)."""

ALLOWED_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""The signing algorithms of an accepted JWT: public-key ones only."""
LEEWAY_SECONDS = 30
"""The clock difference allowed when checking ``exp`` and ``nbf``."""
JWKS_REFRESH_SECONDS = 60.0
"""The least time between two fetches of the JWKS for a ``kid`` not known."""
FETCH_SECONDS = 10.0
"""The time limit of each request to the authorization server."""
MAX_FETCH_BYTES = 256 * 1024
"""The largest metadata, JWKS or introspection answer read."""
MAX_TOKEN_BYTES = 16 * 1024
"""The longest token checked."""
VERIFIED_SECONDS = 300.0
"""The longest a verified JWT is remembered (never past its ``exp``)."""
VERIFIED_BYTES = 8 * 1024 * 1024
"""The most bytes of verified JWTs (and their kept claims) remembered at once."""

STATIC_PREFIX = "token:"
"""The ``client_id`` of a static token's :class:`AccessToken`: this, then the token's name."""
STATIC_NAME_CLAIM = "awf_token_name"
"""The claim naming a static token in its :class:`AccessToken` (how the caller is known as ``token``)."""


class TokenRefused(Exception):
    """A token that is not accepted; the message is one sentence for the caller, without the token."""


@dataclass(frozen=True, slots=True)
class AuthorizationServer:
    """What awf-mcp uses of the issuer's metadata."""

    issuer: str
    jwks_uri: str | None
    introspection_endpoint: str | None


async def _fetch_json(
    client: httpx2.AsyncClient, method: str, url: str, what: str, **request: Any
) -> tuple[int, Any]:
    """The status and JSON body of one bounded request; :class:`OSError` saying why not."""
    try:
        with anyio.fail_after(FETCH_SECONDS):
            async with client.stream(method, url, **request) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_FETCH_BYTES:
                        raise OSError(f"{what} at {url} is larger than {MAX_FETCH_BYTES:,} bytes")
                status = response.status_code
    except TimeoutError:
        raise OSError(f"{what} at {url} did not answer within {FETCH_SECONDS:g} s") from None
    except httpx2.HTTPError as exc:
        raise OSError(f"cannot fetch {what} at {url}: {describe_exception(exc)}") from None
    if status != 200:
        return status, None
    try:
        return status, json.loads(body)
    except ValueError:
        raise OSError(f"{what} at {url} is not JSON") from None


def _metadata_urls(issuer: str) -> list[str]:
    from mcp.client.auth.utils import build_oauth_authorization_server_metadata_discovery_urls

    return build_oauth_authorization_server_metadata_discovery_urls(issuer, issuer)


async def discover(client: httpx2.AsyncClient, issuer: str) -> AuthorizationServer:
    """The issuer's metadata (RFC 8414, else OpenID discovery); :class:`UserError` saying why not."""
    tried = []
    for url in _metadata_urls(issuer):
        try:
            status, metadata = await _fetch_json(client, "GET", url, "the authorization server's metadata")
        except OSError as exc:
            raise UserError(str(exc)) from None
        if status != 200:
            tried.append(f"{url} (HTTP {status})")
            continue
        if not isinstance(metadata, dict):
            raise UserError(f"the authorization server's metadata at {url} is not a JSON object")
        if metadata.get("issuer") != issuer:
            raise UserError(
                f"the metadata at {url} names the issuer {str(metadata.get('issuer'))[:200]!r}, "
                f"not {issuer!r}: pass the issuer URL exactly as the authorization server spells it"
            )
        jwks, introspection = metadata.get("jwks_uri"), metadata.get("introspection_endpoint")
        return AuthorizationServer(
            issuer,
            jwks if isinstance(jwks, str) else None,
            introspection if isinstance(introspection, str) else None,
        )
    raise UserError(f"found no authorization server metadata for {issuer}: tried {', '.join(tried)}")


def _scopes(claims: Mapping[str, Any]) -> list[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, str):
        return scp.split()
    if isinstance(scp, list):
        return [item for item in scp if isinstance(item, str)]
    return []


def _names_audience(aud: Any, audience: str) -> bool:
    wanted = audience.removesuffix("/")
    values = aud if isinstance(aud, list) else [aud]
    return any(isinstance(value, str) and value.removesuffix("/") == wanted for value in values)


class IssuerTokens:
    """The access tokens of one authorization server; see the module docstring."""

    def __init__(self, settings: HttpAuth, server: AuthorizationServer, client: httpx2.AsyncClient) -> None:
        self.settings = settings
        self.server = server
        self.client = client
        self.introspection_endpoint = settings.introspection_endpoint or server.introspection_endpoint
        self._keys: dict[str | None, tuple[jwt.PyJWK, str | None]] = {}
        self._fetched_at = -JWKS_REFRESH_SECONDS
        self._fetching = anyio.Lock()
        self._verified: collections.OrderedDict[bytes, tuple[AccessToken, float, int]] = (
            collections.OrderedDict()
        )
        self._verified_bytes = 0

    @classmethod
    async def start(cls, settings: HttpAuth, client: httpx2.AsyncClient | None = None) -> IssuerTokens:
        """Discover the issuer and fetch its keys; :class:`UserError` when it cannot be used.

        The tokens own ``client`` (a new one by default): :meth:`aclose` closes it, and so
        does a start that fails.
        """
        client = client or httpx2.AsyncClient(follow_redirects=False)
        try:
            server = await discover(client, settings.issuer)
            tokens = cls(settings, server, client)
            if server.jwks_uri is None and tokens.introspection_endpoint is None:
                raise UserError(
                    f"the authorization server {settings.issuer} publishes neither a jwks_uri nor an "
                    "introspection_endpoint: there is no way to check its tokens"
                )
            if server.jwks_uri is not None:
                try:
                    await tokens._fetch_keys()
                except OSError as exc:
                    raise UserError(str(exc)) from None
        except BaseException:
            await client.aclose()
            raise
        return tokens

    async def aclose(self) -> None:
        """Close the connections to the authorization server; the tokens check nothing after it."""
        await self.client.aclose()

    async def _fetch_keys(self) -> None:
        assert self.server.jwks_uri is not None
        self._fetched_at = time.monotonic()
        status, data = await _fetch_json(self.client, "GET", self.server.jwks_uri, "the JWKS")
        if status != 200 or not isinstance(data, dict) or not isinstance(data.get("keys"), list):
            raise OSError(
                f"the JWKS at {self.server.jwks_uri} is not a JSON object with keys (HTTP {status})"
            )
        keys: dict[str | None, tuple[jwt.PyJWK, str | None]] = {}
        for entry in data["keys"]:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue  # a key type PyJWT does not know: no token can use it
            alg = entry.get("alg")
            keys[entry.get("kid") if isinstance(entry.get("kid"), str) else None] = (
                key,
                alg if isinstance(alg, str) else None,
            )
        self._keys = keys

    async def _key(self, kid: Any) -> tuple[jwt.PyJWK, str | None]:
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        found = self._keys.get(kid) if isinstance(kid, str | None) else None
        if found is not None:
            return found
        async with self._fetching:
            found = self._keys.get(kid) if isinstance(kid, str | None) else None
            if found is None and time.monotonic() - self._fetched_at >= JWKS_REFRESH_SECONDS:
                try:
                    await self._fetch_keys()
                except OSError as exc:
                    log.warning("refetching the JWKS failed: %s", exc)
                found = self._keys.get(kid) if isinstance(kid, str | None) else None
        if found is None:
            if kid is None:
                raise TokenRefused("the token names no key (kid), and the issuer has several")
            raise TokenRefused("the token is signed with a key the issuer does not publish")
        return found

    async def verify(self, token: str) -> AccessToken:
        """The :class:`AccessToken` of ``token``; :class:`TokenRefused` saying why not."""
        if token.count(".") == 2 and self.server.jwks_uri is not None:
            digest = hashlib.sha256(token.encode()).digest()
            remembered = self._verified.get(digest)
            if remembered is not None:
                if time.time() < remembered[1]:
                    return remembered[0]
                self._forget(digest)
            access = self._access(token, await self._verify_jwt(token))
            self._remember(digest, access)
            return access
        if self.introspection_endpoint is not None:
            return self._access(token, await self._introspect(token))
        if token.count(".") == 2:
            raise TokenRefused("the token is a JWT, but the issuer publishes no keys (jwks_uri) to check it")
        raise TokenRefused("the token is not a JWT, and no introspection endpoint is configured to check it")

    def _remember(self, digest: bytes, access: AccessToken) -> None:
        if access.expires_at is None:
            return
        until = min(access.expires_at + LEEWAY_SECONDS, time.time() + VERIFIED_SECONDS)
        size = len(access.token) + len(json.dumps(access.claims or {}, ensure_ascii=False))
        self._verified[digest] = (access, until, size)
        self._verified_bytes += size
        while self._verified_bytes > VERIFIED_BYTES:
            self._forget(next(iter(self._verified)))

    def _forget(self, digest: bytes) -> None:
        entry = self._verified.pop(digest, None)
        if entry is not None:
            self._verified_bytes -= entry[2]

    async def _verify_jwt(self, token: str) -> Mapping[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRefused("the token is not a well-formed JWT") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg.lower() == "none":
            raise TokenRefused("the token is unsigned (alg none), and only signed tokens are accepted")
        if alg.upper().startswith("HS"):
            raise TokenRefused(
                "the token is signed with a shared secret (HS*); only the issuer's public keys are trusted"
            )
        if alg not in ALLOWED_ALGORITHMS:
            raise TokenRefused(
                f"the token's signing algorithm {alg[:16]!r} is not one of {', '.join(ALLOWED_ALGORITHMS)}"
            )
        key, declared = await self._key(header.get("kid"))
        if declared is not None and declared != alg:
            raise TokenRefused("the token's algorithm is not the one its key is declared for")
        try:
            return jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRefused("the token is not valid yet (nbf or iat in the future)") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused(
                f"the token was issued for another audience, not {self.settings.audience}"
            ) from None
        except jwt.InvalidIssuerError:
            raise TokenRefused(
                f"the token was issued by another issuer, not {self.settings.issuer}"
            ) from None
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRefused(f"the token has no {exc.claim} claim") from None
        except jwt.InvalidSignatureError:
            raise TokenRefused("the token's signature does not verify against the issuer's keys") from None
        except (jwt.PyJWTError, TypeError, ValueError):  # TypeError: an algorithm of another key type
            raise TokenRefused("the token could not be verified against the issuer's keys") from None

    async def _introspect(self, token: str) -> Mapping[str, Any]:
        assert self.introspection_endpoint is not None
        import os

        client_id = self.settings.client_id or os.environ.get("AWF_MCP_AUTH_CLIENT_ID")
        secret = self.settings.client_secret or os.environ.get("AWF_MCP_AUTH_CLIENT_SECRET")
        try:
            status, data = await _fetch_json(
                self.client,
                "POST",
                self.introspection_endpoint,
                "token introspection",
                data={"token": token, "token_type_hint": "access_token"},
                auth=(client_id, secret or "") if client_id else None,
            )
        except OSError as exc:
            log.warning("%s", exc)
            raise TokenRefused("the authorization server could not be asked about the token") from None
        if status != 200 or not isinstance(data, dict):
            log.warning("token introspection at %s answered HTTP %s", self.introspection_endpoint, status)
            raise TokenRefused("the authorization server could not be asked about the token") from None
        if data.get("active") is not True:
            raise TokenRefused("the authorization server says the token is not active (expired or revoked)")
        if "iss" in data and data["iss"] != self.settings.issuer:
            raise TokenRefused(f"the token was issued by another issuer, not {self.settings.issuer}")
        if not _names_audience(data.get("aud"), self.settings.audience):
            raise TokenRefused(f"the token was issued for another audience, not {self.settings.audience}")
        exp = data.get("exp")
        if isinstance(exp, int | float) and exp + LEEWAY_SECONDS < time.time():
            raise TokenRefused("the token has expired")
        return data

    def _access(self, token: str, claims: Mapping[str, Any]) -> AccessToken:
        subject = claims.get("sub")
        client_id = next(
            (v for v in (claims.get(k) for k in ("client_id", "azp", "cid")) if isinstance(v, str)), None
        )
        kept: dict[str, Any] = {"iss": self.settings.issuer}
        room = self.settings.max_claim_bytes
        for name in self.settings.claims:
            if name not in claims:
                continue
            size = len(json.dumps(claims[name], ensure_ascii=False).encode())
            if size > room:
                refusals.info("claim %s of a token dropped: over %d bytes of claims", name[:64], room)
                continue
            room -= size
            kept[name] = claims[name]
        exp = claims.get("exp")
        return AccessToken(
            token=token,
            client_id=client_id or (subject if isinstance(subject, str) else "") or "",
            scopes=_scopes(claims),
            expires_at=int(exp) if isinstance(exp, int | float) else None,
            resource=self.settings.audience,
            subject=subject if isinstance(subject, str) else None,
            claims=kept,
        )


class CallerVerifier:
    """The SDK's :class:`~mcp.server.auth.provider.TokenVerifier`: static tokens, then the issuer's."""

    def __init__(self, static: NamedTokens, issuer: IssuerTokens | None, scopes: Sequence[str]) -> None:
        self.static = static
        self.issuer = issuer
        self.scopes = list(scopes)

    def static_token(self, token: str | bytes) -> AccessToken | None:
        """The :class:`AccessToken` of a static token (granted every required scope), else ``None``."""
        name = self.static.name_of(token)
        if name is None:
            return None
        text = token if isinstance(token, str) else token.decode("latin-1")
        return AccessToken(
            token=text,
            client_id=f"{STATIC_PREFIX}{name}",
            scopes=self.scopes,
            claims={STATIC_NAME_CLAIM: name},
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's :class:`AccessToken`; :class:`TokenRefused` saying why it is not accepted."""
        if len(token) > MAX_TOKEN_BYTES:
            raise TokenRefused(f"the token is longer than {MAX_TOKEN_BYTES:,} bytes")
        access = self.static_token(token)
        if access is not None:
            return access
        if self.issuer is None:
            raise TokenRefused("the token is not one of this server's tokens")
        return await self.issuer.verify(token)
