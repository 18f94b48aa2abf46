"""Sign-in through the agent: an OAuth server that needs sign-in, offered to an agent that can show a link.

:class:`AgentSignIn` is the part of :class:`~awf_mcp.core.upstream.provider.UpstreamProvider` that
serves an ``auth = "oauth"`` server which, at start-up, asked for a sign-in awf-mcp does not hold
(:class:`~awf_mcp.core.upstream.session.UpstreamNeedsSignIn`), when the agent declared URL
elicitation (``elicitation.url``: Claude Code and Codex do) and a :data:`SignIn` function was given:

* instead of the server's tools, one tool is served, ``<server>_sign_in`` (:func:`sign_in_tool`);
* a call of it starts a sign-in (:class:`SignInAttempt`, shared by the calls that come while it
  runs): the :data:`SignIn` function registers, builds the authorization URL and waits for the
  redirect on its own loopback callback; awf-mcp never opens a browser. The call asks the agent
  ``elicitation/create`` in URL mode with that URL, on either protocol family (the stateless
  revision's ``input_required`` leaves the sign-in running, and the retry asks the same question,
  same URL and ``elicitationId``, and finds the answer);
* on ``accept`` the call waits (at most :data:`CALL_WAIT_SECONDS`) for the redirect; once signed in,
  the server is started as at start-up, its tools (and prompts and resources) replace the sign-in
  tool, and every :meth:`watch_tools` callback is awaited (the registry re-merges and the agent gets
  ``notifications/tools/list_changed``) before the call answers, with the server's
  ``instructions`` in its text (they came after the session's own, which cannot change);
* once the redirect brought the tokens, each client that was asked (the latest
  :data:`TOLD_LIMIT` calls) is sent ``notifications/elicitation/complete`` with the question's
  ``elicitationId`` (:class:`~awf_mcp.core.clientchannel.ElicitationCompletion`: on 2025-11-25; the stateless
  revision has no such notification, its retry finds the outcome instead);
* a sign-in that finishes after its call gave up waiting (the user took longer) starts the server
  by itself :data:`TAKE_OVER_SECONDS` later (the time a stateless retry has to take it first);
* ``decline`` or ``cancel`` ends the sign-in; a failure (a denial, a state mismatch, no answer
  from the browser within the sign-in's timeout) ends it with one sentence in an ``isError``
  result; either way the next call starts a new one.

A sign-in the server refuses mid-session (the token revoked, or expired and its refresh refused:
:class:`~awf_mcp.core.upstream.session.UpstreamNeedsSignIn` from a call or a restart) is offered
again the same way (:meth:`AgentSignIn.offer_sign_in_again`): the server is stopped, its tools,
prompts and resources give way to ``<server>_sign_in`` (the watchers are awaited: the agent gets
``list_changed``), and the failed request's sentence, which names ``awf-mcp servers login NAME``,
ends ``, or call <server>_sign_in to sign in through the agent``. Signing in brings the tools back
as above.

An agent that did not declare ``elicitation.url`` never sees the sign-in tool: the server is
reported as needing sign-in (``awf-mcp servers login NAME``), as it is everywhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from awf_mcp.core.clientchannel import ElicitationCompletion
from awf_mcp.core.servers import ServerSpec
from awf_mcp.core.upstream.session import ClientOffer, SignIn, UpstreamFailure, UpstreamNeedsSignIn
from awf_mcp.ports import ClientCannotAnswer, ToolAnnotations, ToolDefinition, ToolResult, current_call

log = logging.getLogger("awf_mcp.upstream")

SIGN_IN_TOOL = "sign_in"
"""The sign-in tool's name under the server's prefix: ``<server>_sign_in``."""
URL_READY_SECONDS = 30.0
"""How long a call waits for the sign-in to have its authorization URL (metadata, registration)."""
CALL_WAIT_SECONDS = 60.0
"""How long a call the user accepted waits for the redirect before it answers that the sign-in goes on."""
TOLD_LIMIT = 8
"""How many calls of one sign-in are told when it completes (the latest to ask)."""
TAKE_OVER_SECONDS = 10.0
"""How long a finished sign-in waits for a call to start the server before it starts it itself."""


def sign_in_tool(spec: ServerSpec) -> ToolDefinition:
    """The one tool served for a server that needs sign-in."""
    host = urllib.parse.urlsplit(spec.url).hostname or spec.url
    return ToolDefinition(
        name=f"{spec.name}_{SIGN_IN_TOOL}",
        description=(
            f"Sign in to the MCP server '{spec.name}' ({host}), which needs an OAuth sign-in before its "
            "tools can be served. The user is shown a link to sign in with; once signed in, the "
            f"server's tools ({spec.name}_*) replace this one. Call it when the user wants that "
            "server's tools."
        ),
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        source=spec.source,
        annotations=ToolAnnotations(title=f"Sign in to {spec.name}", read_only=False, open_world=True),
    )


def url_elicitation_offered(offer: ClientOffer) -> bool:
    """True when the agent declared URL elicitation (``elicitation.url``)."""
    elicitation = offer.get("elicitation")
    return isinstance(elicitation, Mapping) and isinstance(elicitation.get("url"), Mapping)


class SignInAttempt:
    """One sign-in under way: its URL once known, then its outcome."""

    def __init__(self) -> None:
        self.url = ""
        self.elicitation_id = secrets.token_urlsafe(16)
        self.ready = anyio.Event()
        """The URL is known, or the sign-in failed before it was."""
        self.signed = anyio.Event()
        """The sign-in ended: tokens stored, or :attr:`failure` says why not."""
        self.taken = anyio.Event()
        """A call starts the server (the sign-in does not take over)."""
        self.failure = ""
        self.task: asyncio.Task[None] | None = None
        self._told: list[ElicitationCompletion] = []

    def asking(self, channel: object) -> None:
        """A call is about to ask the client: tell it, too, when the sign-in completes."""
        if isinstance(channel, ElicitationCompletion) and channel not in self._told:
            self._told = [*self._told, channel][-TOLD_LIMIT:]

    async def tell_complete(self) -> None:
        """``notifications/elicitation/complete`` to each client asked (see the module docstring)."""
        for channel in self._told:
            with contextlib.suppress(Exception):
                await channel.elicitation_complete(self.elicitation_id)

    def show(self, url: str) -> None:
        self.url = url
        self.ready.set()

    def question(self, name: str) -> dict[str, Any]:
        """The ``elicitation/create`` parameters: the same for every call of this attempt."""
        return {
            "mode": "url",
            "message": f"Sign in to the MCP server '{name}' so that awf-mcp can serve its tools.",
            "url": self.url,
            "elicitationId": self.elicitation_id,
        }

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()


class AgentSignIn:
    """The sign-in through the agent of one upstream provider; see the module docstring."""

    spec: ServerSpec
    offer: ClientOffer
    instructions: str | None
    _tools: list[ToolDefinition]
    _watchers: list[Callable[[], Awaitable[object]]]
    _offering_watchers: list[Callable[[str], Awaitable[object]]]
    deaths: int
    down_since: float

    def _init_sign_in(self, sign_in: SignIn | None) -> None:
        self._sign_in = sign_in
        self.awaiting_sign_in = ""
        """Why the server is not served yet (its sign-in tool is), or empty."""
        self._attempt: SignInAttempt | None = None
        self._starting = anyio.Lock()

    async def start(self) -> list[ToolDefinition]:  # the provider's
        raise NotImplementedError

    async def _shut(self) -> None:  # the provider's
        raise NotImplementedError

    def forget_offerings(self) -> None:  # the offerings'
        raise NotImplementedError

    def can_sign_in_through_agent(self) -> bool:
        """True when a sign-in can be offered through the agent (see the module docstring)."""
        return self._sign_in is not None and url_elicitation_offered(self.offer)

    def offer_sign_in(self, reason: str) -> list[ToolDefinition]:
        """Serve the sign-in tool instead of the server's tools; REASON is why."""
        self.awaiting_sign_in = reason
        self._tools = [sign_in_tool(self.spec)]
        log.warning(
            "server '%s' not served yet: %s; the agent is offered %s to sign in through it",
            self.spec.name,
            reason,
            self._tools[0].name,
        )
        return list(self._tools)

    def _begin(self) -> SignInAttempt:
        attempt = SignInAttempt()
        sign_in = self._sign_in
        assert sign_in is not None

        async def run() -> None:
            try:
                await sign_in(self.spec, attempt.show)
                await attempt.tell_complete()  # before the waiting calls answer
            except UpstreamFailure as exc:
                attempt.failure = str(exc)
            except Exception as exc:
                attempt.failure = f"{type(exc).__name__}: {str(exc)[:200]}"
            finally:
                attempt.signed.set()
                attempt.ready.set()
            if attempt.failure:
                log.warning("server '%s': the sign-in failed: %s", self.spec.name, attempt.failure)
                return
            with anyio.move_on_after(TAKE_OVER_SECONDS):
                await attempt.taken.wait()
            if not attempt.taken.is_set():
                await self._serve_signed_in(attempt)

        attempt.task = asyncio.get_running_loop().create_task(run(), name=f"awf-mcp sign-in {self.spec.name}")
        self._attempt = attempt
        return attempt

    async def _serve_signed_in(self, attempt: SignInAttempt) -> str:
        """Start the server after ATTEMPT signed in (once); the failure, or empty."""
        async with self._starting:
            if not self.awaiting_sign_in:
                return ""
            if attempt.failure:
                return attempt.failure
            try:
                await self.start()
            except UpstreamFailure as exc:
                attempt.failure = f"signed in, but the server could not be started: {exc}"
                self._tools = [sign_in_tool(self.spec)]
                self._attempt = None
                log.warning("server '%s': %s", self.spec.name, attempt.failure)
                return attempt.failure
            self.awaiting_sign_in = ""
            self._attempt = None
            log.warning("server '%s' signed in: serving its %d tools", self.spec.name, len(self._tools))
            await self._tell_watchers()
            return ""

    async def _tell_watchers(self) -> None:
        """Await every watcher of the tools, prompts and resources (they changed)."""
        for watcher in list(self._watchers):
            with contextlib.suppress(Exception):
                await watcher()
        for offering_watcher in list(self._offering_watchers):
            for kind in ("prompts", "resources"):
                with contextlib.suppress(Exception):
                    await offering_watcher(kind)

    async def offer_sign_in_again(self, failure: UpstreamFailure) -> str:
        """After FAILURE, when it is the server refusing the sign-in awf-mcp held and the agent can
        sign in through it, stop the server and serve the sign-in tool again (see the module
        docstring); the words FAILURE's sentence then ends with, else empty."""
        if not isinstance(failure, UpstreamNeedsSignIn) or not self.can_sign_in_through_agent():
            return ""
        async with self._starting:
            if not self.awaiting_sign_in:
                await self._shut()
                self.offer_sign_in(str(failure))
                self.deaths, self.down_since = 0, 0.0
                self.forget_offerings()
                await self._tell_watchers()
        return f", or call {self.spec.name}_{SIGN_IN_TOOL} to sign in through the agent"

    async def call_sign_in(self) -> ToolResult:
        """A call of the sign-in tool; see the module docstring."""
        name = self.spec.name
        again = f"ask again, or sign in in a terminal: awf-mcp servers login {name}"
        channel = current_call().channel
        if not channel.supports("elicitation_url"):
            return ToolResult.error(f"{self.awaiting_sign_in} (this client cannot show a sign-in link)")
        attempt = self._attempt
        if attempt is None or (attempt.signed.is_set() and attempt.failure):
            attempt = self._begin()
        with anyio.move_on_after(URL_READY_SECONDS):
            await attempt.ready.wait()
        if attempt.failure or not attempt.url:
            self._attempt = None
            attempt.cancel()
            why = attempt.failure or f"no authorization URL within {URL_READY_SECONDS:g} s"
            return ToolResult.error(f"not signed in to server '{name}': {why}; {again}")
        attempt.asking(channel)
        try:
            answer = await channel.ask("elicitation/create", attempt.question(name))
        except ClientCannotAnswer as exc:
            return ToolResult.error(f"not signed in to server '{name}': {exc}; {again}")
        action = answer.get("action")
        if action != "accept":
            if self._attempt is attempt:
                self._attempt = None
            attempt.cancel()
            said = "declined" if action == "decline" else "cancelled"
            return ToolResult.text(f"not signed in to server '{name}': the user {said} the sign-in; {again}")
        with anyio.move_on_after(CALL_WAIT_SECONDS):
            await attempt.signed.wait()
        if not attempt.signed.is_set():
            return ToolResult.text(
                f"the sign-in to server '{name}' is still open in the browser; once it is done, the "
                f"server's tools ({name}_*) replace {name}_{SIGN_IN_TOOL} (the tool list changes)"
            )
        attempt.taken.set()
        failure = await self._serve_signed_in(attempt)
        if failure:
            return ToolResult.error(f"not signed in to server '{name}': {failure}; {again}")
        said = (
            f"signed in to server '{name}': its {len(self._tools)} tools ({name}_*) are now served; "
            "the tool list has changed"
        )
        if self.instructions:  # given at its start, after this session's own instructions
            said += f"\n\nThe server's instructions for its tools:\n\n{self.instructions.strip()}"
        return ToolResult.text(said)

    def stop_sign_in(self) -> None:
        """End a sign-in under way (the provider closes)."""
        if self._attempt is not None:
            self._attempt.cancel()
