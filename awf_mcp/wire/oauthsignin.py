"""``awf-mcp servers login``: an OAuth sign-in in the browser (or through the agent), on the SDK's client.

Contract
--------
:func:`sign_in`: a loopback listener on ``127.0.0.1`` and an ephemeral port receives the
redirect (the only redirect URI registered; a request naming another host in its ``Host``
header, a page reaching loopback by DNS rebinding, is answered 421 and ends nothing); the
authorization URL goes to ``show`` and, unless told not to, to the browser (:mod:`webbrowser`).
It waits at most ``timeout`` seconds for the redirect; a denial, a timeout or a state mismatch
raises :class:`~awf_mcp.wire.oauth.SignInFailed` with one sentence, and nothing is stored but the
registered client. Signed in means the MCP handshake with the new token succeeded
(:func:`awf_mcp.wire.client.connect`, with the SDK's provider over fresh
:class:`~awf_mcp.wire.oauth.StoredTokens`); a server that lets the handshake through without
asking for a token is recorded as asking for none.

:func:`sign_in_without_browser` is the same sign-in for ``serve``'s sign-in through the agent
(:mod:`awf_mcp.core.upstream.signin`): the URL goes to the agent, never to a browser.

What is stored, the serving provider and the sentences of OAuth failures are
:mod:`awf_mcp.wire.oauth`'s. No token, code or client secret is logged, printed or put in an
error by this module.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
import urllib.parse
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.shared.auth import AuthorizationCodeResult

from awf_mcp.core.servers import ServerSpec
from awf_mcp.core.upstream import UpstreamFailure
from awf_mcp.ports import inert_text
from awf_mcp.wire.client import connect
from awf_mcp.wire.clienthttp import describe_http_failure
from awf_mcp.wire.oauth import SignInFailed, StoredTokens, describe_failure, oauth_provider

DEFAULT_SIGN_IN_SECONDS = 300.0
"""How long a sign-in waits for the browser's redirect by default."""
CALLBACK_PATH = "/callback"
"""The path of the loopback redirect URI."""


@dataclass
class _Redirect:
    """What the loopback listener received."""

    params: dict[str, str]
    done: threading.Event


class _Listener(http.server.HTTPServer):
    redirect: _Redirect


class _CallbackHandler(http.server.BaseHTTPRequestHandler):
    server: _Listener

    def do_GET(self) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        expected_host = f"127.0.0.1:{self.server.server_address[1]}"
        if self.headers.get("Host", "") != expected_host:  # another name for loopback: DNS rebinding
            self._refuse(421)
            return
        if parsed.path != CALLBACK_PATH or self.server.redirect.done.is_set():
            self._refuse(404)
            return
        query = urllib.parse.parse_qs(parsed.query[:8192], max_num_fields=20)
        self.server.redirect.params = {key: values[0] for key, values in query.items() if values}
        body = (
            b"<!doctype html><title>awf-mcp</title><p>awf-mcp received the answer: you can close this tab.\n"
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.redirect.done.set()

    def _refuse(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


@contextlib.contextmanager
def _loopback() -> Any:
    listener = _Listener(("127.0.0.1", 0), _CallbackHandler)
    listener.redirect = _Redirect({}, threading.Event())
    thread = threading.Thread(target=listener.serve_forever, name="awf-mcp-oauth-callback", daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        listener.redirect.done.set()  # a wait still running (a sign-in given up) ends now
        listener.shutdown()
        listener.server_close()


async def sign_in(
    spec: ServerSpec,
    *,
    show: Callable[[str], None],
    open_browser: bool = True,
    timeout: float = DEFAULT_SIGN_IN_SECONDS,
) -> bool:
    """Sign in to SPEC (see the module docstring); raises :class:`SignInFailed` with one sentence.

    False: the server let the handshake through without a token (it needs no sign-in; that is
    recorded, see :attr:`~awf_mcp.wire.oauth.SignInState.asked_for_none`)."""
    with _loopback() as listener:
        redirect_uri = f"http://127.0.0.1:{listener.server_address[1]}{CALLBACK_PATH}"
        redirect = listener.redirect

        async def send_to_browser(url: str) -> None:
            show(url)
            if open_browser:
                with contextlib.suppress(Exception):
                    await anyio.to_thread.run_sync(webbrowser.open, url)

        async def wait_for_redirect() -> AuthorizationCodeResult:
            received = await anyio.to_thread.run_sync(redirect.done.wait, timeout, abandon_on_cancel=True)
            if not received:
                raise SignInFailed(f"no answer from the browser within {timeout:g} s; nothing was stored")
            params = redirect.params
            if "error" in params:
                why = params["error"] + (
                    f" ({params['error_description']})" if "error_description" in params else ""
                )
                raise SignInFailed(f"the sign-in was refused: {inert_text(why[:300])}; nothing was stored")
            if not params.get("code"):
                raise SignInFailed("the redirect carried no authorization code; nothing was stored")
            return AuthorizationCodeResult(
                code=params["code"], state=params.get("state"), iss=params.get("iss")
            )

        storage = StoredTokens(spec, fresh=True, redirect_uri=redirect_uri)
        provider = oauth_provider(spec, storage, redirect_uri, send_to_browser, wait_for_redirect)
        try:
            with anyio.fail_after(timeout + 60):
                async with connect(spec, "", auth=provider) as connection:
                    await connection.handshake()
        except TimeoutError:
            raise SignInFailed(f"the sign-in did not finish within {timeout + 60:g} s") from None
        except Exception as exc:
            raise SignInFailed(_sign_in_failure(spec, exc)) from None
        if storage.fresh:  # the server let the handshake through without asking for a token
            storage.note_asked_for_none()
            return False
        return True


async def sign_in_without_browser(spec: ServerSpec, show: Callable[[str], None]) -> None:
    """:func:`sign_in` for ``serve`` (the :data:`~awf_mcp.core.upstream.SignIn` of the sign-in through
    the agent): the URL goes only to ``show``; raises :class:`UpstreamFailure` with one sentence."""
    try:
        await sign_in(spec, show=show, open_browser=False)
    except SignInFailed as exc:
        raise UpstreamFailure(str(exc)) from None


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _sign_in_failure(spec: ServerSpec, exc: Exception) -> str:
    """One sentence for what ended a sign-in (the OAuth failure, when one is among the causes)."""
    leaves = _leaves(exc)
    for leaf in leaves:
        sentence = describe_failure(spec, leaf, signing_in=True)
        if sentence:
            return sentence
    for leaf in leaves:
        if isinstance(leaf, UpstreamFailure):
            return str(leaf).removeprefix("the handshake failed: ")
    import httpx2

    for leaf in leaves:
        if isinstance(leaf, httpx2.HTTPError):
            return spec.redact(describe_http_failure(leaf, spec.url))
    return spec.redact(f"{type(leaves[0]).__name__}: {str(leaves[0])[:300]}")
