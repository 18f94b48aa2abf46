"""Prompts and resources of every provider, merged: what ``prompts/*``, ``resources/*`` and
``completion/complete`` serve.

Contract
--------
A provider offers prompts, resources or resource templates when it has the methods of
:class:`~awf_mcp.core.offerings.OfferingProvider` (upstream servers; plugins through
:mod:`awf_mcp.authoring`).
:class:`Catalog` merges them, in the order of the records (built-ins, plugins, servers in
configuration order):

* **Prompts** are named like tools (``<server>_<prompt>``, ``<plugin>_<prompt>``: a plugin's
  prompt without its prefix, or with a name that breaks the pattern, is left out with a
  warning) and merged by the registry's own rules (:func:`~awf_mcp.core.registry.merge_named`):
  the name pattern, ``[rename]``, ``--only`` and ``--exclude``; a name claimed twice keeps the
  first (the other is left out with a warning). They are sorted by name.
* **Resources** keep their URIs as the provider gave them (links inside results keep
  resolving). A URI listed by two providers is served from the first; the other's entry is
  left out with a warning. **Templates** are kept in record order, then each provider's order.
* A read of a URI goes to the provider that **listed** it; else to the provider of the
  **first template that matches** it (:func:`~awf_mcp.uritemplate.template_match`: RFC 6570 level
  1 to 3 expressions, matched left to right in one pass, no backtracking, URI of at most
  :data:`MAX_URI_BYTES`);
  else it is refused with a sentence. awf-mcp itself reads nothing: a ``file://`` URI or one
  with ``..`` that no provider listed or matched is refused, and one that a provider claims is
  that provider's to answer.
* ``prompts/get`` and ``resources/read`` run through the call path of tools
  (:meth:`~awf_mcp.core.calls.ToolInvoker.over`): the policy hook (told ``kind="prompt"`` or
  ``kind="resource"``; ``tool`` is the prompt's name or the URI), the audit log, the call
  timeout, cancellation, and the output budget: a prompt's and a resource's text is cut to the
  budget with one note, keeping each message's role and each content's URI
  (:mod:`awf_mcp.core.offerings`).
* A completion reaches the provider that owns the ``ref``: the prompt's, or the template's
  (the same template string, else the provider a read of that URI would reach).
* Subscriptions: a client subscribes to a URI some provider serves and that advertises
  subscriptions; the provider is subscribed once, for its first subscriber, and unsubscribed
  after its last. A client holds at most :data:`MAX_CLIENT_SUBSCRIPTIONS`; one more is refused
  with a sentence. At most :data:`MAX_SUBSCRIPTIONS` are held, all clients together: past that,
  the client that subscribed least recently loses its subscriptions to make room (an HTTP
  client gone without unsubscribing cannot hold them for ever; a client cannot evict itself).
  A listen stream's subscriptions end with the stream, so they are never evicted (the stream
  would go on unaware): past the bound its new ones are refused when no other client can make
  room.
* A provider that changes its prompts or resources makes the catalog merge again;
  every :meth:`Catalog.watch` listener is awaited with the kind (``prompts`` or
  ``resources``), as the registry tells of tools. A live reload gives
  :meth:`Catalog.reconfigure` the new records and settings: the same merge, and the same
  listeners for each kind that changed.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Awaitable, Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from awf_mcp.core.calls import ProgressSink, ToolInvoker
from awf_mcp.core.config import Settings
from awf_mcp.core.offerings import OfferingProvider, PromptRunner, ResourceRunner
from awf_mcp.core.plugins import PluginRecord, ProviderTools
from awf_mcp.core.registry import RegisteredTool, Registry, merge_named, name_problem
from awf_mcp.core.servers import SOURCE_PREFIX as SERVER_SOURCE_PREFIX
from awf_mcp.errors import UnknownToolError
from awf_mcp.ports import (
    LOCAL_CALLER,
    NO_CLIENT,
    Caller,
    ClientChannel,
    PromptDefinition,
    ResourceDefinition,
    ToolDefinition,
    ToolResult,
)
from awf_mcp.uritemplate import TemplatePart, parse_template, template_match

log = logging.getLogger("awf_mcp.catalog")

MAX_URI_BYTES = 8 * 1024
"""The longest URI awf-mcp routes (a read, a subscription, a completion's ``ref``)."""
MAX_SUBSCRIPTIONS = 1024
"""How many (client, URI) subscriptions are held at once, all clients together."""
MAX_CLIENT_SUBSCRIPTIONS = 256
"""How many subscriptions one client (stdio, or one HTTP session) holds at once."""
PAGE_ITEMS = 500
"""How many prompts, resources or templates one list page holds (the cursor is the offset)."""

Listener = Callable[[str], Awaitable[object]]


class UnknownResourceError(UnknownToolError):
    """No provider offers the URI; the message says so."""


# --------------------------------------------------------------------------- the catalog


@dataclass(slots=True)
class _Template:
    definition: ResourceDefinition
    provider: OfferingProvider
    parts: list[TemplatePart] | None


@dataclass(slots=True)
class _Served:
    """One merge: what is served, and who serves it."""

    prompts: dict[str, RegisteredTool] = field(default_factory=dict)
    prompt_definitions: list[PromptDefinition] = field(default_factory=list)
    resources: dict[str, tuple[ResourceDefinition, OfferingProvider]] = field(default_factory=dict)
    templates: list[_Template] = field(default_factory=list)


class Catalog:
    """The merged prompts, resources and templates; see the module docstring."""

    def __init__(self, records: Sequence[PluginRecord], settings: Settings, invoker: ToolInvoker) -> None:
        self._records = list(records)
        self._settings = settings
        self._invoker = invoker
        self._listeners: list[Listener] = []
        self.update_listeners: list[Callable[[str], None]] = []
        """Called with the URI of each update of a subscribed resource (the wire tells the clients)."""
        self.log_listeners: list[Callable[[str, str, Any], None]] = []
        """Called with the level, logger (``<server>`` or ``<server>/<logger>``) and data of each log
        message of a provider."""
        self._subscribed: dict[str, set[Hashable]] = {}
        self._last_subscribed: dict[Hashable, None] = {}
        """The clients holding subscriptions, the one that subscribed least recently first."""
        self._ending_themselves: set[Hashable] = set()
        """The subscribers whose subscriptions end with them (listen streams): never evicted."""
        self._runners: dict[int, PromptRunner] = {}
        self._served = self._merge(None)
        self.prompt_invoker = invoker.over(Registry(self._served.prompts.values()), kind="prompt")
        self.offers: frozenset[str] = frozenset(_offers(list(self._providers())))
        self._hooked: set[int] = set()
        self._hook_providers()

    def _hook_providers(self) -> None:
        """Follow the changes, updates and log messages of every provider not yet followed."""
        for record, provider in self._entries():
            if id(provider) in self._hooked:
                continue
            self._hooked.add(id(provider))
            watch = getattr(provider, "watch_offerings", None)
            if callable(watch):
                watch(self.refresh)
            for name, listeners in (("on_updated", self._updated), ("on_log", self._logger_for(record.name))):
                hooks = getattr(provider, name, None)
                if isinstance(hooks, list):
                    hooks.append(listeners)

    async def reconfigure(self, records: Sequence[PluginRecord], settings: Settings) -> None:
        """A live reload (:mod:`awf_mcp.core.reload`): merge ``records`` under ``settings``, through the
        invoker as it is now; tell the listeners of each kind whose served set changed."""
        self._records, self._settings = list(records), settings
        live = {id(provider) for provider in self._providers()}
        self._hooked &= live
        self._runners = {key: runner for key, runner in self._runners.items() if key in live}
        self._hook_providers()
        self.offers = frozenset(_offers(list(self._providers())))
        before, after = self._served, self._merge(self._served)
        self._served = after
        self.prompt_invoker = self._invoker.over(Registry(after.prompts.values()), kind="prompt")
        for kind in ("prompts", "resources"):
            if not _same(kind, before, after):
                await self._tell(kind)

    # ------------------------------------------------------------------ merging

    def _entries(self) -> Iterator[tuple[PluginRecord, OfferingProvider]]:
        seen: set[int] = set()
        for record in self._records:
            if not record.ok:
                continue
            for entry in record.providers:
                provider = entry.provider
                if isinstance(provider, OfferingProvider) and id(provider) not in seen:
                    seen.add(id(provider))
                    yield record, provider

    def _providers(self) -> Iterator[OfferingProvider]:
        for _, provider in self._entries():
            yield provider

    def _merge(self, before: _Served | None) -> _Served:
        served = _Served()
        shadows = []
        for record, provider in self._entries():
            runner = self._runners.setdefault(id(provider), PromptRunner(provider))  # kept: collisions
            # at a refresh keep the prompt already served, known by its runner
            shadow = PluginRecord(name=record.name, source=record.source, distribution=record.distribution)
            named = []
            for as_tool in runner.list_tools():
                problem = name_problem(as_tool.name)
                if problem is None and not as_tool.name.startswith(f"{record.name}_"):
                    problem = f"prompt '{as_tool.name}' must be named '{record.name}_<name>'"
                if problem is not None and not record.source.startswith(SERVER_SOURCE_PREFIX):
                    log.warning("%s: its prompt is left out: %s", record.describe(), problem)
                    continue
                named.append(as_tool)  # a server's is checked with its [rename] advice (registry)
            shadow.providers.append(ProviderTools(provider=runner, tools=named))
            shadows.append(shadow)
            for resource in provider.list_resources():
                first = served.resources.get(resource.uri)
                if first is not None:
                    log.warning(
                        "resource '%s' is offered by both %s and %s; the first serves it",
                        resource.uri[:200],
                        first[0].source,
                        resource.source,
                    )
                    continue
                served.resources[resource.uri] = (resource, provider)
            known = {t.definition.uri for t in served.templates}
            for template in provider.list_resource_templates():
                if template.uri in known:
                    continue
                parts = parse_template(template.uri)
                if parts is None:
                    log.warning(
                        "resource template '%s' of %s is never matched: it is malformed or too long",
                        template.uri[:200],
                        template.source,
                    )
                served.templates.append(_Template(template, provider, parts))
        previous = before.prompts if before is not None else {}
        served.prompts = merge_named(shadows, self._settings, previous)
        by_provider = {}
        for shadow in shadows:
            entry = shadow.providers[0]
            assert isinstance(entry.provider, PromptRunner)
            for prompt in entry.provider.provider.list_prompts():
                by_provider[(id(entry.provider), prompt.name)] = prompt
        for name, registered in sorted(served.prompts.items()):
            original = by_provider.get((id(registered.provider), registered.original_name))
            if original is not None:
                served.prompt_definitions.append(
                    PromptDefinition(
                        name=name,
                        description=original.description,
                        arguments=original.arguments,
                        source=original.source,
                        title=original.title,
                    )
                )
        return served

    def watch(self, listener: Listener) -> None:
        """Have ``listener(kind)`` awaited after each change of the served prompts or resources."""
        self._listeners.append(listener)

    async def refresh(self, kind: str) -> None:
        """Merge again after a provider's ``kind`` changed; tell the listeners when the served set did."""
        before = self._served
        after = self._merge(before)
        self._served = after
        self.prompt_invoker.registry = Registry(after.prompts.values())
        if not _same(kind, before, after):
            await self._tell(kind)

    async def _tell(self, kind: str) -> None:
        for listener in list(self._listeners):
            try:
                await listener(kind)
            except Exception as exc:
                log.warning("a %s-changed listener failed: %s: %s", kind, type(exc).__name__, exc)

    # ------------------------------------------------------------------ listing

    def prompts(self) -> list[PromptDefinition]:
        """The served prompts, sorted by name."""
        return list(self._served.prompt_definitions)

    def resources(self) -> list[ResourceDefinition]:
        """The served resources, in record order."""
        return [resource for resource, _ in self._served.resources.values()]

    def templates(self) -> list[ResourceDefinition]:
        """The served resource templates, in record order."""
        return [template.definition for template in self._served.templates]

    # ------------------------------------------------------------------ using

    def owner(self, uri: str) -> OfferingProvider:
        """The provider a read of ``uri`` goes to; :class:`UnknownResourceError` when none."""
        if len(uri.encode("utf-8", "surrogatepass")) > MAX_URI_BYTES:
            raise UnknownResourceError(f"the URI is longer than the {MAX_URI_BYTES:,} bytes awf-mcp routes")
        listed = self._served.resources.get(uri)
        if listed is not None:
            return listed[1]
        for template in self._served.templates:
            if template.parts is not None and template_match(template.parts, uri) is not None:
                return template.provider
        shown = uri if len(uri) <= 200 else uri[:200] + "…"
        raise UnknownResourceError(
            f"no server or plugin offers resource '{shown}': read one that resources/list lists, or that "
            "matches one of resources/templates/list"
        )

    async def get_prompt(
        self,
        name: str,
        arguments: Any,
        *,
        progress: ProgressSink | None = None,
        client_name: str | None = None,
        channel: ClientChannel = NO_CLIENT,
        session: Hashable | None = None,
        caller: Caller = LOCAL_CALLER,
    ) -> ToolResult:
        """Prompt ``name`` through the call path; raises :class:`UnknownToolError` for an unknown name."""
        try:
            return await self.prompt_invoker.call(
                name,
                arguments,
                progress=progress,
                client_name=client_name,
                channel=channel,
                session=session,
                caller=caller,
            )
        except UnknownToolError as exc:
            raise UnknownToolError(str(exc.message).replace("unknown tool", "unknown prompt", 1)) from None

    async def read_resource(
        self,
        uri: str,
        *,
        progress: ProgressSink | None = None,
        client_name: str | None = None,
        channel: ClientChannel = NO_CLIENT,
        session: Hashable | None = None,
        caller: Caller = LOCAL_CALLER,
    ) -> ToolResult:
        """Read ``uri`` through the call path; raises :class:`UnknownResourceError` when no one offers it."""
        provider = self.owner(uri)
        source = next((r.source for r, p in self._served.resources.values() if p is provider), "")
        if not source:
            source = next((t.definition.source for t in self._served.templates if t.provider is provider), "")
        definition = ToolDefinition(name=uri, description="", input_schema={"type": "object"}, source=source)
        registry = Registry([RegisteredTool(definition, ResourceRunner(provider), uri)])
        invoker = self._invoker.over(registry, kind="resource")
        return await invoker.call(
            uri,
            {"uri": uri},
            progress=progress,
            client_name=client_name,
            channel=channel,
            session=session,
            caller=caller,
        )

    async def complete(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """The ``completion`` of a ``completion/complete`` request (wire params) by the ref's owner."""
        ref = request.get("ref") or {}
        provider: Any = None
        if ref.get("type") == "ref/prompt":
            registered = self._served.prompts.get(str(ref.get("name")))
            if registered is None:
                raise UnknownToolError(f"unknown prompt '{str(ref.get('name'))[:200]}'")
            runner = registered.provider
            assert isinstance(runner, PromptRunner)
            provider = runner.provider
            request = {**request, "ref": {**ref, "name": registered.original_name}}
        else:
            uri = str(ref.get("uri", ""))
            provider = next((t.provider for t in self._served.templates if t.definition.uri == uri), None)
            if provider is None:
                provider = self.owner(uri)
        complete = getattr(provider, "complete", None)
        if not callable(complete):
            return {"values": []}
        completion: Mapping[str, Any] = await complete(request)
        return completion

    async def subscribe(self, uri: str, who: Hashable, on: bool, *, ends_itself: bool = False) -> None:
        """Subscribe ``who`` to updates of ``uri`` (``on``) or end it; raises :class:`UnknownResourceError`
        (with the sentence to send) when refused. A subscriber that ``ends_itself`` (a listen stream,
        whose subscriptions end with it) is never made to room for others: past the bound in all,
        its new subscription is refused instead when no other client can make room."""
        subscribers = self._subscribed.get(uri, set())
        if not on:
            if who in subscribers:
                subscribers.discard(who)
                if not subscribers:
                    del self._subscribed[uri]
                    await self._upstream_subscription(uri, on=False)
            return
        if who in subscribers:
            return
        provider = self.owner(uri)
        if "subscribe" not in (getattr(provider, "offers", None) or ()):
            raise UnknownResourceError(f"the server of '{uri[:200]}' does not offer subscriptions")
        held = collections.Counter(client for clients in self._subscribed.values() for client in clients)
        if held[who] >= MAX_CLIENT_SUBSCRIPTIONS:
            raise UnknownResourceError(
                f"{MAX_CLIENT_SUBSCRIPTIONS} subscriptions of this client are held, the most awf-mcp holds "
                "for one client; unsubscribe from some first"
            )
        if held.total() >= MAX_SUBSCRIPTIONS:
            others = [
                client
                for client in self._last_subscribed
                if client != who and held[client] and client not in self._ending_themselves
            ]
            if not others:
                raise UnknownResourceError(
                    f"{MAX_SUBSCRIPTIONS} subscriptions are held, the most awf-mcp holds; "
                    "unsubscribe from some first"
                )
            log.info(
                "%d subscriptions are held: those of the client that subscribed least recently end",
                held.total(),
            )
            await self.forget(others[0])
        if not subscribers:
            await self._upstream_subscription(uri, on=True)
        self._subscribed.setdefault(uri, set()).add(who)
        if ends_itself:
            self._ending_themselves.add(who)
        self._last_subscribed.pop(who, None)
        self._last_subscribed[who] = None  # the most recent last

    async def forget(self, who: Hashable) -> None:
        """End every subscription of ``who`` (a client gone)."""
        for uri in [uri for uri, subscribers in self._subscribed.items() if who in subscribers]:
            await self.subscribe(uri, who, on=False)
        self._last_subscribed.pop(who, None)
        self._ending_themselves.discard(who)

    def subscribers(self, uri: str) -> set[Hashable]:
        """Who is subscribed to ``uri``."""
        return set(self._subscribed.get(uri, ()))

    async def _upstream_subscription(self, uri: str, *, on: bool) -> None:
        try:
            provider = self.owner(uri)
        except UnknownResourceError:
            return
        subscribe = getattr(provider, "subscribe", None)
        if callable(subscribe):
            try:
                await subscribe(uri, on)
            except Exception as exc:
                if on:
                    raise UnknownResourceError(str(exc)) from None
                log.info("unsubscribing from '%s' failed: %s", uri[:200], exc)

    async def set_logging_level(self, level: str) -> None:
        """Ask every provider that offers logging for messages at ``level`` and above."""
        for provider in self._providers():
            setter = getattr(provider, "set_logging_level", None)
            if callable(setter) and "logging" in (getattr(provider, "offers", None) or ()):
                try:
                    await setter(level)
                except Exception as exc:
                    log.info("logging/setLevel not forwarded: %s", exc)

    def _updated(self, uri: str) -> None:
        if uri in self._subscribed:
            for listener in list(self.update_listeners):
                listener(uri)

    def _logger_for(self, name: str) -> Callable[[str, str | None, Any], None]:
        def logged(level: str, logger: str | None, data: Any) -> None:
            marked = f"{name}/{logger}" if logger else name
            for listener in list(self.log_listeners):
                listener(level, marked, data)

        return logged


def _same(kind: str, before: _Served, after: _Served) -> bool:
    """Whether two merges serve the same ``kind`` (``prompts``, or ``resources`` with the templates)."""
    if kind == "prompts":
        return after.prompt_definitions == before.prompt_definitions
    return [r for r, _ in after.resources.values()] == [r for r, _ in before.resources.values()] and [
        t.definition for t in after.templates
    ] == [t.definition for t in before.templates]


def offerings_of(record: PluginRecord) -> dict[str, list[str]]:
    """What a plugin's providers list besides tools, as its own listing says (``plugins list``):
    ``prompts`` (names), ``resources`` and ``templates`` (URIs), each sorted. A provider whose
    listing fails adds nothing (a warning)."""
    found: dict[str, set[str]] = {"prompts": set(), "resources": set(), "templates": set()}
    for entry in record.providers:
        provider = entry.provider
        if not isinstance(provider, OfferingProvider):
            continue
        try:
            found["prompts"].update(prompt.name for prompt in provider.list_prompts())
            found["resources"].update(resource.uri for resource in provider.list_resources())
            found["templates"].update(template.uri for template in provider.list_resource_templates())
        except Exception as exc:
            log.warning(
                "%s: listing its prompts and resources failed: %s: %s",
                record.describe(),
                type(exc).__name__,
                exc,
            )
    return {kind: sorted(items) for kind, items in found.items()}


def _offers(providers: Sequence[OfferingProvider]) -> set[str]:
    """What the providers offer together: ``prompts``, ``resources``, ``subscribe``, ``completions``,
    ``logging``, and ``prompts_changed`` / ``resources_changed`` when a set may change."""
    offers: set[str] = set()
    for provider in providers:
        declared = getattr(provider, "offers", None)
        if declared is not None:
            offers |= set(declared)
            continue
        if provider.list_prompts():
            offers.add("prompts")
        if provider.list_resources() or provider.list_resource_templates():
            offers.add("resources")
    return offers


def page(items: Sequence[Any], cursor: str | None) -> tuple[list[Any], str | None]:
    """One page of ``items`` from ``cursor`` (an offset; ``None``: the start), and the next cursor;
    raises :class:`ValueError` for a cursor awf-mcp did not give."""
    start = 0
    if cursor:
        if not cursor.isdigit() or len(cursor) > 9:
            raise ValueError("invalid cursor: send back one awf-mcp gave, or none")
        start = int(cursor)
    end = start + PAGE_ITEMS
    return list(items[start:end]), (str(end) if end < len(items) else None)
