"""What an upstream server offers besides tools: prompts, resources, templates, completions, logs.

:class:`ServerOfferings` is the part of :class:`~awf_mcp.core.upstream.provider.UpstreamProvider`
that relays them (see "Prompts, resources and the rest" in :mod:`awf_mcp.core.upstream`):

* what the server advertises (:attr:`~awf_mcp.core.upstream.session.UpstreamSession.offers`)
  is listed after its tools, at start-up and after a restart, each kind bounded in bytes as
  tools are (:class:`~awf_mcp.core.upstream.listing.Listing`, a share of its own per kind) and
  gated by the pins (:func:`~awf_mcp.core.pins.admit_items`); prompts are named
  ``<server>_<prompt>``, resource URIs and templates stay as the server gave them;
* ``notifications/prompts/list_changed`` and ``resources/list_changed`` make it list that kind
  again (coalesced as for tools), and every :meth:`ServerOfferings.watch_offerings` callback
  is awaited with the kind when it changed;
* getting a prompt, reading a resource, completing an argument, (un)subscribing, and setting
  the log level are forwarded, each bounded by the server's ``timeout_seconds`` when it has
  one; a connection that died is restarted as for a call;
* ``notifications/resources/updated`` and ``notifications/message`` go to the callbacks in
  :attr:`ServerOfferings.on_updated` and :attr:`ServerOfferings.on_log`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio

from awf_mcp.core.clientchannel import LOG_LEVELS
from awf_mcp.core.pins import PROMPT, RESOURCE, TEMPLATE, admit_items
from awf_mcp.core.servers import ServerSpec
from awf_mcp.core.upstream.listing import Listing
from awf_mcp.core.upstream.routing import request_log
from awf_mcp.core.upstream.session import (
    OfferingKind,
    UpstreamFailure,
    UpstreamGone,
    UpstreamSession,
)
from awf_mcp.ports import CallContext, PromptDefinition, ResourceDefinition, ToolResult

log = logging.getLogger("awf_mcp.upstream")

RELIST_PAUSE_SECONDS = 0.05
"""After a ``list_changed``, how long to wait for more before listing: at most one listing per pause."""

PIN_KINDS = {"prompts": PROMPT, "resources": RESOURCE, "templates": TEMPLATE}
OFFERED_BY = {"prompts": "prompts", "resources": "resources", "templates": "resources"}
KIND_NAMES = {"prompts": "prompts", "resources": "resources", "templates": "resource templates"}
"""Which capability of the server each kind of listing needs."""

OfferingWatcher = Callable[[str], Awaitable[object]]


class ServerOfferings:
    """The prompts, resources and templates of one upstream server; see the module docstring."""

    spec: ServerSpec
    definition_bytes: int
    _prefix: str
    _log_to_calls: Callable[[str, str, Any], None]  # the request routing's
    _forward_followed: Callable[..., Awaitable[ToolResult]]  # the provider's

    def _init_offerings(self) -> None:
        self.offers: frozenset[str] = frozenset()
        """What the server advertised besides tools (among :data:`~awf_mcp.core.upstream.session.OFFERS`)."""
        self._prompts: list[PromptDefinition] = []
        self._resources: list[ResourceDefinition] = []
        self._templates: list[ResourceDefinition] = []
        self._offering_watchers: list[OfferingWatcher] = []
        self.offerings_left_out: dict[str, list[str]] = {}
        self.on_updated: list[Callable[[str], None]] = []
        """Called with the URI of each ``notifications/resources/updated`` of the server."""
        self.on_log: list[Callable[[str, str | None, Any], None]] = []
        """Called with the level, logger and data of each ``notifications/message`` of the server."""
        self._log_level_asked: tuple[int, str] | None = None
        """The session, and the level it was last asked for with ``logging/setLevel``."""

    async def _ensure(self) -> UpstreamSession:  # the provider's
        raise NotImplementedError

    def list_prompts(self) -> list[PromptDefinition]:
        """The prompts last listed, named ``<server>_<prompt>``."""
        return list(self._prompts)

    def list_resources(self) -> list[ResourceDefinition]:
        """The resources last listed (URIs as the server gave them)."""
        return list(self._resources)

    def list_resource_templates(self) -> list[ResourceDefinition]:
        """The resource templates last listed (as the server gave them)."""
        return list(self._templates)

    def forget_offerings(self) -> None:
        """Serve no prompts, resources or templates (the server is stopped until a sign-in)."""
        self._prompts, self._resources, self._templates = [], [], []

    def watch_offerings(self, on_change: OfferingWatcher) -> None:
        """Have ``on_change(kind)`` awaited after each change of prompts or resources (and templates)."""
        self._offering_watchers.append(on_change)

    async def gather_offerings(self, session: UpstreamSession, kinds: tuple[OfferingKind, ...]) -> bool:
        """List ``kinds`` (those the server offers), bounded and gated; True when any changed.

        The one judgement of a partly capable server, for ``serve`` and the CLI alike: a list method
        it lacks (``-32601``) is an empty list, and a kind that fails otherwise is left out alone,
        with a warning naming it; the other kinds are served."""
        self.offers = session.offers
        changed = False
        for kind in kinds:
            if OFFERED_BY[kind] not in self.offers:
                continue
            listing: Listing[Any] = Listing(self.definition_bytes, kind)
            try:
                async with contextlib.aclosing(session.item_pages(kind)) as pages:
                    async for page in pages:
                        if not all(listing.take(item) for item in page):
                            break
            except UpstreamFailure as exc:  # this kind alone: the others are served as listed
                log.warning("server '%s': its %s are not served: %s", self.spec.name, KIND_NAMES[kind], exc)
                continue
            logged = set(self.offerings_left_out.get(kind, ()))
            for sentence in listing.left_out:
                if sentence not in logged:
                    log.warning("server '%s': %s", self.spec.name, sentence)
            self.offerings_left_out[kind] = listing.left_out
            admitted = admit_items(self.spec, PIN_KINDS[kind], listing.kept)
            if kind == "prompts":
                prompts = [
                    replace(p, name=f"{self._prefix}{p.name}", source=self.spec.source) for p in admitted
                ]
                changed |= prompts != self._prompts
                self._prompts = prompts
            else:
                items = [replace(r, source=self.spec.source) for r in admitted]
                changed |= items != (self._resources if kind == "resources" else self._templates)
                if kind == "resources":
                    self._resources = items
                else:
                    self._templates = items
        return changed

    async def _follow_offering_changes(self, session: UpstreamSession, restarted: bool) -> None:
        """List prompts or resources again after their ``list_changed`` (coalesced per kind)."""
        pending: set[str] = set()
        wake = anyio.Event()

        def changed(kind: str) -> None:
            nonlocal wake
            pending.add(kind)
            wake.set()

        session.on_offerings_changed = changed
        session.on_resource_updated = self._updated
        session.on_log = self._logged
        if restarted:  # the server may have changed while it was down
            changed("prompts")
            changed("resources")
        while True:
            await wake.wait()
            await anyio.sleep(RELIST_PAUSE_SECONDS)  # a burst becomes one listing
            wake = anyio.Event()
            kinds: tuple[OfferingKind, ...] = ()
            if "prompts" in pending:
                kinds += ("prompts",)
            if "resources" in pending:
                kinds += ("resources", "templates")
            pending.clear()
            await self._relist_offerings(session, kinds)

    async def _relist_offerings(self, session: UpstreamSession, kinds: tuple[OfferingKind, ...]) -> None:
        name = self.spec.name
        try:
            with anyio.fail_after(self.spec.startup_timeout_seconds):
                changed = await self.gather_offerings(session, kinds)
        except (UpstreamFailure, TimeoutError) as exc:
            reason = str(exc) or f"no answer within {self.spec.startup_timeout_seconds:g} s"
            log.warning("server '%s' changed its %s, but listing them failed: %s", name, kinds[0], reason)
            return
        if not changed:
            return
        kind = "prompts" if kinds[0] == "prompts" else "resources"
        log.info("server '%s' changed its %s", name, kind)
        for watcher in list(self._offering_watchers):
            try:
                await watcher(kind)
            except Exception as exc:
                log.warning(
                    "server '%s': applying its new %s failed: %s: %s", name, kind, type(exc).__name__, exc
                )

    def _updated(self, uri: str) -> None:
        for listener in list(self.on_updated):
            listener(uri)

    def _logged(self, level: str, logger: str | None, data: Any) -> None:
        for listener in list(self.on_log):
            listener(level, logger, data)
        if level in LOG_LEVELS:
            self._log_to_calls(level, f"{self.spec.name}/{logger}" if logger else self.spec.name, data)

    async def _lower_log_level(self, session: UpstreamSession, context: CallContext) -> None:
        """Ask the server for log messages at the level the agent's request asked for (stateless
        revision), when it was last asked for a less verbose one (or none) on this connection."""
        channel = request_log(context.channel)
        wanted = channel.log_level() if channel is not None else None
        if wanted is None or "logging" not in self.offers:
            return
        asked = self._log_level_asked
        if (
            asked is not None
            and asked[0] == id(session)
            and LOG_LEVELS.index(asked[1]) <= LOG_LEVELS.index(wanted)
        ):
            return
        try:
            await self._forwarded("logging/setLevel", lambda s: s.set_logging_level(wanted))
        except UpstreamFailure as exc:
            log.info("server '%s': logging/setLevel %s failed: %s", self.spec.name, wanted, exc)
            return
        self._log_level_asked = (id(session), wanted)

    async def _forwarded(self, what: str, action: Callable[[UpstreamSession], Awaitable[Any]]) -> Any:
        """``action`` on a live session, bounded by ``timeout_seconds``; raises :class:`UpstreamFailure`."""
        session = await self._ensure()
        timeout = self.spec.timeout_seconds
        try:
            with anyio.fail_after(timeout) if timeout else contextlib.nullcontext():
                return await action(session)
        except TimeoutError:
            raise UpstreamFailure(
                f"server '{self.spec.name}' did not answer {what} within {timeout:g} s (timeout_seconds)"
            ) from None
        except UpstreamGone as exc:
            self._mark_down(str(exc))
            hint = await self.offer_sign_in_again(exc)
            raise UpstreamFailure(
                f"server '{self.spec.name}' stopped during {what}: {exc}"
                + (hint or "; the next request restarts it")
            ) from None

    def _mark_down(self, reason: str) -> None:  # the provider's
        raise NotImplementedError

    if TYPE_CHECKING:  # the sign-in's (a stub here would hide it: this class comes first)

        async def offer_sign_in_again(self, failure: UpstreamFailure) -> str: ...

    async def get_prompt(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Get prompt ``name`` (as served: ``<server>_<prompt>``) with ``arguments``, as a call is
        forwarded (the server's requests meanwhile go to the agent)."""
        own = name.removeprefix(self._prefix)
        strings = {key: value if isinstance(value, str) else str(value) for key, value in arguments.items()}
        what = f"prompts/get {own}"
        return await self._forward_followed(
            what, strings, (what, what), lambda session, progress: session.get_prompt(own, strings)
        )

    async def read_resource(self, uri: str) -> ToolResult:
        """Read ``uri`` from the server, as a call is forwarded (the server's requests meanwhile go to
        the agent)."""
        what = "resources/read"
        return await self._forward_followed(
            f"{what} {uri}", {}, (what, what), lambda session, progress: session.read_resource(uri)
        )

    async def complete(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """The completion of ``request`` (wire params; a ``ref/prompt`` names the prompt as served)."""
        ref = dict(request.get("ref") or {})
        if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
            ref["name"] = ref["name"].removeprefix(self._prefix)
        own = {**request, "ref": ref}
        if "completions" not in self.offers:
            return {"values": []}
        completion: Mapping[str, Any] = await self._forwarded(
            "completion/complete", lambda session: session.complete(own)
        )
        return completion

    async def subscribe(self, uri: str, on: bool) -> None:
        """Subscribe to (``on``) or unsubscribe from updates of ``uri``; raises :class:`UpstreamFailure`."""
        what = "resources/subscribe" if on else "resources/unsubscribe"
        await self._forwarded(what, lambda session: session.subscribe(uri, on))

    async def set_logging_level(self, level: str) -> None:
        """Ask the server for log messages at ``level`` and above; raises :class:`UpstreamFailure`."""
        session = await self._forwarded("logging/setLevel", lambda session: self._set_level(session, level))
        self._log_level_asked = (id(session), level) if level in LOG_LEVELS else None

    @staticmethod
    async def _set_level(session: UpstreamSession, level: str) -> UpstreamSession:
        await session.set_logging_level(level)
        return session
