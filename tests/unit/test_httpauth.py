"""The token checks of ``serve --transport http``: JWTs, introspection, static tokens, callers.

The authorization server is played by an ``httpx2.MockTransport`` answering its metadata,
JWKS and introspection; the tokens are real, signed by PyJWT with keys from ``cryptography``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from awf_mcp.core.config import HttpAuth, http_auth
from awf_mcp.errors import ConfigError, UserError
from awf_mcp.ports import Caller
from awf_mcp.state.httptoken import NamedTokens, read_token_file
from awf_mcp.wire import httptokens
from awf_mcp.wire.httpauth import Access, caller_of
from awf_mcp.wire.httptokens import IssuerTokens, TokenRefused

ISSUER = "https://id.example"
AUDIENCE = "https://mcp.example/mcp"

pytestmark = pytest.mark.anyio


class Issuer:
    """An authorization server's answers, counting the JWKS fetches."""

    def __init__(self, *keys: tuple[Any, str, str | None]) -> None:
        self.keys = list(keys)
        self.jwks_fetches = 0
        self.metadata: dict[str, Any] = {
            "issuer": ISSUER,
            "jwks_uri": f"{ISSUER}/jwks",
            "introspection_endpoint": f"{ISSUER}/introspect",
        }
        self.introspected: dict[str, Any] = {}
        self.missing: set[str] = set()

    def jwk(self, key: Any, kid: str, alg: str | None) -> dict[str, Any]:
        family = "RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256"
        public = json.loads(jwt.get_algorithm_by_name(family).to_jwk(key.public_key()))
        return {**public, "kid": kid, **({"alg": alg} if alg else {})}

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path in self.missing:
            return httpx2.Response(404)
        if path == "/.well-known/oauth-authorization-server":
            return httpx2.Response(200, json=self.metadata)
        if path == "/jwks":
            self.jwks_fetches += 1
            return httpx2.Response(200, json={"keys": [self.jwk(*key) for key in self.keys]})
        if path == "/introspect":
            form = dict(item.split("=", 1) for item in request.content.decode().split("&"))
            return httpx2.Response(200, json=self.introspected.get(form["token"], {"active": False}))
        return httpx2.Response(404)

    async def tokens(self, **settings: Any) -> IssuerTokens:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))
        return await IssuerTokens.start(HttpAuth(issuer=ISSUER, audience=AUDIENCE, **settings), client)


def sign(key: Any, algorithm: str = "RS256", kid: str | None = "k1", **changes: Any) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now + 300, "scope": "tools read"}
    claims.update(changes)
    headers = {"kid": kid} if kid else {}
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, key, algorithm, headers=headers)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def rsa_key() -> Any:
    return rsa.generate_private_key(65537, 2048)


async def test_a_good_token_gives_subject_scopes_and_the_chosen_claims(rsa_key: Any) -> None:
    issuer = Issuer((rsa_key, "k1", "RS256"))
    tokens = await issuer.tokens(claims=("groups", "email"))
    access = await tokens.verify(sign(rsa_key, groups=["shell"], email="a@x", secret="no", client_id="cli"))
    assert access.subject == "alice" and access.scopes == ["tools", "read"] and access.client_id == "cli"
    assert access.claims == {"iss": ISSUER, "groups": ["shell"], "email": "a@x"}


async def test_refusals_say_why(rsa_key: Any) -> None:
    issuer = Issuer((rsa_key, "k1", "RS256"))
    tokens = await issuer.tokens()
    other = rsa.generate_private_key(65537, 2048)
    cases = {
        "has expired": sign(rsa_key, exp=int(time.time()) - 120),
        "another audience": sign(rsa_key, aud="https://other.example/mcp"),
        "another issuer": sign(rsa_key, iss="https://evil.example"),
        "no exp claim": sign(rsa_key, exp=None),
        "no aud claim": sign(rsa_key, aud=None),
        "not valid yet": sign(rsa_key, nbf=int(time.time()) + 600),
        "signature does not verify": sign(other),
        "shared secret": sign(b"a shared secret of thirty-two bytes!", "HS256"),
        "not one of": _with_header(sign(rsa_key), {"alg": "XS999", "kid": "k1"}),
        "well-formed": "aaa.bbb.ccc",
        "unsigned": _with_header(sign(rsa_key), {"alg": "none", "kid": "k1"}, signature=""),
    }
    for reason, token in cases.items():
        with pytest.raises(TokenRefused, match=reason):
            await tokens.verify(token)


def _with_header(token: str, header: dict[str, Any], signature: str | None = None) -> str:
    _, payload, signed = token.split(".")
    encoded = jwt.utils.base64url_encode(json.dumps(header).encode()).decode()
    return f"{encoded}.{payload}.{signed if signature is None else signature}"


async def test_the_algorithm_must_be_the_one_the_key_declares(rsa_key: Any) -> None:
    tokens = await Issuer((rsa_key, "k1", "RS256")).tokens()
    with pytest.raises(TokenRefused, match="declared"):
        await tokens.verify(sign(rsa_key, "PS256"))
    undeclared = await Issuer((rsa_key, "k1", None)).tokens()
    assert (await undeclared.verify(sign(rsa_key, "PS256"))).subject == "alice"


async def test_an_ec_key_verifies_es256_and_refuses_rs256_claimed_over_it(rsa_key: Any) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    tokens = await Issuer((key, "k1", None)).tokens()
    assert (await tokens.verify(sign(key, "ES256"))).subject == "alice"
    with pytest.raises(TokenRefused):
        await tokens.verify(sign(rsa_key, "RS256"))  # an RSA signature over the EC key's kid


async def test_kid_rules_and_a_bounded_refetch(rsa_key: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    issuer = Issuer((rsa_key, "k1", None))
    tokens = await issuer.tokens()
    assert (await tokens.verify(sign(rsa_key, kid=None))).subject == "alice"  # one key: no kid needed
    rotated = rsa.generate_private_key(65537, 2048)
    issuer.keys.append((rotated, "k2", None))
    with pytest.raises(TokenRefused, match="does not publish"):  # fetched at start-up, a minute is not up
        await tokens.verify(sign(rotated, kid="k2"))
    assert issuer.jwks_fetches == 1
    monkeypatch.setattr(httptokens, "JWKS_REFRESH_SECONDS", 0.0)
    assert (await tokens.verify(sign(rotated, kid="k2"))).subject == "alice"  # rotation: fetched again
    assert issuer.jwks_fetches == 2
    with pytest.raises(TokenRefused, match="names no key"):
        await tokens.verify(sign(rotated, kid=None))  # two keys now


async def test_claims_are_bounded_in_bytes(rsa_key: Any) -> None:
    tokens = await Issuer((rsa_key, "k1", None)).tokens(claims=("groups", "team"), max_claim_bytes=100)
    access = await tokens.verify(sign(rsa_key, groups=["g" * 50] * 10, team="core"))
    assert access.claims == {"iss": ISSUER, "team": "core"}


async def test_scopes_from_scp_and_a_token_too_long(rsa_key: Any) -> None:
    tokens = await Issuer((rsa_key, "k1", None)).tokens()
    access = await tokens.verify(sign(rsa_key, scope=None, scp=["tools", 3]))
    assert access.scopes == ["tools"]
    verifier = httptokens.CallerVerifier(NamedTokens(), tokens, ["tools"])
    with pytest.raises(TokenRefused, match="longer than"):
        await verifier.verify_token("x" * (httptokens.MAX_TOKEN_BYTES + 1))


async def test_opaque_tokens_are_introspected(rsa_key: Any) -> None:
    issuer = Issuer((rsa_key, "k1", None))
    now = int(time.time())
    good = {"active": True, "sub": "carol", "aud": [AUDIENCE, "x"], "iss": ISSUER, "exp": now + 60}
    issuer.introspected = {
        "good": {**good, "groups": ["ops"]},
        "elsewhere": {**good, "aud": "https://other.example"},
        "foreign": {**good, "iss": "https://evil.example"},
        "stale": {**good, "exp": now - 600},
    }
    tokens = await issuer.tokens()
    access = await tokens.verify("good")
    assert access.subject == "carol" and access.claims == {"iss": ISSUER, "groups": ["ops"]}
    for token, reason in (
        ("elsewhere", "another audience"),
        ("foreign", "another issuer"),
        ("stale", "expired"),
        ("unknown", "not active"),
    ):
        with pytest.raises(TokenRefused, match=reason):
            await tokens.verify(token)


async def test_discovery_falls_back_to_openid_and_checks_the_issuer(rsa_key: Any) -> None:
    issuer = Issuer((rsa_key, "k1", None))
    issuer.missing.add("/.well-known/oauth-authorization-server")
    with pytest.raises(UserError, match="found no authorization server metadata"):
        await issuer.tokens()
    issuer = Issuer((rsa_key, "k1", None))
    issuer.metadata["issuer"] = ISSUER + "/"
    with pytest.raises(UserError, match="exactly as the authorization server spells it"):
        await issuer.tokens()
    issuer = Issuer((rsa_key, "k1", None))
    del issuer.metadata["jwks_uri"], issuer.metadata["introspection_endpoint"]
    with pytest.raises(UserError, match="neither a jwks_uri nor an introspection_endpoint"):
        await issuer.tokens()


async def test_the_issuers_client_is_closed_by_aclose_and_by_a_failed_start(rsa_key: Any) -> None:
    issuer = Issuer((rsa_key, "k1", None))
    tokens = await issuer.tokens()
    assert not tokens.client.is_closed
    await Access(NamedTokens(), tokens).aclose()
    assert tokens.client.is_closed
    issuer.missing.add("/jwks")
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(issuer.handle))
    with pytest.raises(UserError, match="JWKS"):
        await IssuerTokens.start(HttpAuth(issuer=ISSUER, audience=AUDIENCE), client)
    assert client.is_closed


def write_tokens(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_token_file_errors_name_the_line_and_never_the_token(tmp_path: Path) -> None:
    token = "t0ken-" + "z" * 20
    cases = {
        f"a {token}\nb\n": "line 2: expected NAME TOKEN",
        f"# c\n\nbad/name {token}\n": "line 3: a name is",
        "a short\n": "line 1: the token must be",
        f"a {token}\na {token}x\n": "line 2: the name a is given twice",
        f"a {token}\nb {token}\n": "line 2: the same token as line 1",
        f"a {token} extra\n": "line 1: expected NAME TOKEN",
    }
    for text, message in cases.items():
        with pytest.raises(UserError, match=message) as caught:
            read_token_file(write_tokens(tmp_path / "tokens", text))
        assert token not in str(caught.value)
    with pytest.raises(UserError, match="chmod 600"):
        read_token_file(write_tokens(tmp_path / "tokens", f"a {token}\n", 0o640))
    (tmp_path / "link").symlink_to(tmp_path / "tokens")  # its target is what is checked
    with pytest.raises(UserError, match="chmod 600"):
        read_token_file(tmp_path / "link")
    with pytest.raises(UserError, match="not a regular file"):
        read_token_file(tmp_path)
    with pytest.raises(UserError, match="cannot read token file"):
        read_token_file(tmp_path / "missing")


def test_named_tokens_reload_and_keep_the_old_set_on_a_bad_file(tmp_path: Path) -> None:
    path = write_tokens(tmp_path / "tokens", "ci " + "c" * 20 + "\n")
    tokens = NamedTokens("d" * 32, path)
    assert tokens.name_of("c" * 20) == "ci" and tokens.name_of("d" * 32) == "default"
    write_tokens(path, "deploy " + "e" * 20 + "\n")
    assert tokens.reload() == 2
    assert tokens.name_of("c" * 20) is None and tokens.name_of("e" * 20) == "deploy"
    write_tokens(path, "broken\n")
    with pytest.raises(UserError, match="line 1"):
        tokens.reload()
    assert tokens.name_of("e" * 20) == "deploy"
    write_tokens(path, "default " + "f" * 20 + "\n")
    with pytest.raises(UserError, match="rename it"):
        tokens.reload()


def test_caller_of_a_request() -> None:
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    class Request:
        def __init__(self, user: Any) -> None:
            self.scope = {"user": user}

    assert caller_of(None).kind == "local"
    assert caller_of(Request(None)).kind == "anonymous"
    static = httptokens.CallerVerifier(NamedTokens("s" * 32), None, ["tools"]).static_token("s" * 32)
    assert static is not None and static.scopes == ["tools"]
    assert caller_of(Request(AuthenticatedUser(static))) == Caller(kind="token", token_name="default")
    access = AccessToken(
        token="x", client_id="cli", scopes=[], subject="alice", claims={"iss": ISSUER, "groups": ["a"]}
    )
    caller = caller_of(Request(AuthenticatedUser(access)))
    assert caller.subject == "alice" and caller.issuer == ISSUER and caller.groups == frozenset({"a"})
    assert caller.fields() == {
        "kind": "oauth",
        "subject": "alice",
        "issuer": ISSUER,
        "client_id": "cli",
        "claims": {"groups": ["a"]},
    }


def test_http_auth_settings_merge_and_refuse() -> None:
    table = {"issuer": ISSUER, "audience": AUDIENCE, "scopes": ["tools"], "claims": ["groups", "email"]}
    merged = http_auth(table, scopes=("admin",))
    assert merged is not None and merged.scopes == ("admin",) and merged.claims == ("groups", "email")
    assert http_auth(None) is None
    with pytest.raises(ConfigError, match="both the issuer and the audience"):
        http_auth(None, issuer=ISSUER)
    with pytest.raises(ConfigError, match="http:// or https://"):
        http_auth({"issuer": "file:///etc", "audience": AUDIENCE})
    with pytest.raises(ConfigError, match="unknown key 'isuer'"):
        http_auth({"isuer": ISSUER, "issuer": ISSUER, "audience": AUDIENCE})


async def test_a_verified_jwt_is_remembered_until_its_exp_and_within_a_bound(
    rsa_key: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = await Issuer((rsa_key, "k1", None)).tokens()
    soon = sign(rsa_key, exp=int(time.time()) - httptokens.LEEWAY_SECONDS + 1)
    assert (await tokens.verify(soon)).subject == "alice"
    assert (await tokens.verify(soon)).subject == "alice"  # remembered
    time.sleep(1.1)
    with pytest.raises(TokenRefused, match="has expired"):
        await tokens.verify(soon)
    monkeypatch.setattr(httptokens, "VERIFIED_BYTES", 2000)
    for index in range(20):
        await tokens.verify(sign(rsa_key, jti=str(index)))
    assert 0 < len(tokens._verified) < 20 and tokens._verified_bytes <= 2000


def test_the_config_file_holds_http_auth(tmp_path: Path) -> None:
    from awf_mcp.core.config import parse_settings

    path = tmp_path / "awf-mcp.toml"
    fields = parse_settings({"http": {"auth": {"issuer": ISSUER, "audience": AUDIENCE}}}, path)
    merged = http_auth(fields["http_auth"], claims=("email",))
    assert merged == HttpAuth(issuer=ISSUER, audience=AUDIENCE, claims=("email",))
    for bad in ({"http": {"tls": {}}}, {"http": {"auth": {"issuer": ISSUER}}}, {"http": []}):
        with pytest.raises(ConfigError):
            parse_settings(bad, path)
