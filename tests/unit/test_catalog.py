"""The catalog: prompts named and governed like tools, resources routed by URI and template."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from awf_mcp.core.callrecord import CallRecord
from awf_mcp.core.calls import ToolInvoker
from awf_mcp.core.catalog import Catalog, UnknownResourceError, page
from awf_mcp.core.config import Settings
from awf_mcp.core.plugins import PluginRecord, ProviderTools
from awf_mcp.core.registry import Registry
from awf_mcp.errors import UnknownToolError
from awf_mcp.ports import (
    PROMPT_ROLES,
    AskUser,
    PromptArgument,
    PromptDefinition,
    ResourceDefinition,
    ToolContent,
    ToolResult,
)
from awf_mcp.uritemplate import MAX_TEMPLATE_EXPRESSIONS, parse_template, template_match

pytestmark = pytest.mark.anyio

ANNOTATED = {"annotations": {"audience": ["user"], "priority": 0.5}}


class Offering:
    """A provider of one prompt, resources and templates; it answers with what it was asked."""

    def __init__(self, name: str, uris: tuple[str, ...] = (), templates: tuple[str, ...] = ()) -> None:
        self.name = name
        self.source = f"plugin:{name}"
        self.uris = uris
        self.template_uris = templates
        self.reads: list[str] = []
        self.text = "x"

    def list_tools(self) -> list[Any]:
        return []

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        return ToolResult.error("no tools")

    def close(self) -> None:
        return None

    def list_prompts(self) -> list[PromptDefinition]:
        argument = PromptArgument(name="who", required=True)
        return [PromptDefinition(name=f"{self.name}_greet", arguments=(argument,), source=self.source)]

    def list_resources(self) -> list[ResourceDefinition]:
        return [ResourceDefinition(uri=uri, name=uri, source=self.source) for uri in self.uris]

    def list_resource_templates(self) -> list[ResourceDefinition]:
        return [
            ResourceDefinition(uri=t, name=t, source=self.source, template=True) for t in self.template_uris
        ]

    async def get_prompt(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        return ToolResult(
            content=[
                ToolContent.of_text(f"{name} to {arguments['who']}: {self.text}"),
                ToolContent.of_text("ok"),
            ],
            structured_content={"description": "", PROMPT_ROLES: ["user", "assistant"]},
        )

    async def read_resource(self, uri: str) -> ToolResult:
        self.reads.append(uri)
        text = f"{self.name}: {self.text}"
        return ToolResult(content=[ToolContent(type="resource", uri=uri, text=text, extra=ANNOTATED)])


def catalog_of(*providers: Offering, **invoker: Any) -> Catalog:
    records = []
    for provider in providers:
        record = PluginRecord(name=provider.name, source=provider.source)
        record.providers.append(ProviderTools(provider=provider, tools=[]))
        records.append(record)
    return Catalog(records, Settings(), ToolInvoker(Registry([]), timeout_seconds=5, **invoker))


async def test_a_uri_two_providers_list_is_read_from_the_first_and_templates_in_order() -> None:
    first = Offering("one", uris=("a://x",), templates=("t://{id}",))
    second = Offering("two", uris=("a://x", "b://y"), templates=("t://{id}", "{+all}"))
    catalog = catalog_of(first, second)
    assert [r.uri for r in catalog.resources()] == ["a://x", "b://y"]
    assert [t.uri for t in catalog.templates()] == ["t://{id}", "{+all}"]
    await catalog.read_resource("a://x")
    await catalog.read_resource("t://7")
    await catalog.read_resource("b://y")
    await catalog.read_resource("file:///etc/passwd")  # the everything template: the second's business
    assert first.reads == ["a://x", "t://7"] and second.reads == ["b://y", "file:///etc/passwd"]


async def test_a_uri_no_provider_offers_is_refused_and_nothing_is_read() -> None:
    provider = Offering("one", uris=("a://x",), templates=("t://{id}",))
    catalog = catalog_of(provider)
    for uri in ("file:///etc/passwd", "a://x/../../etc/passwd", "t://a/b", "t://"[:2]):
        with pytest.raises(UnknownResourceError, match="no server or plugin offers resource"):
            await catalog.read_resource(uri)
    assert provider.reads == []


async def test_a_policy_tells_a_prompt_and_a_read_from_a_call_and_every_one_is_audited() -> None:
    asked: list[tuple[str, str]] = []
    records: list[CallRecord] = []

    def policy(
        tool: str, source: str, arguments: Mapping[str, Any], kind: str = "tool"
    ) -> str | AskUser | None:
        asked.append((kind, tool))
        return "no reads" if kind == "resource" else None

    policy.takes_kind = True  # type: ignore[attr-defined]
    catalog = catalog_of(Offering("one", uris=("a://x",)), policy=policy, observer=records.append)
    prompt = await catalog.get_prompt("one_greet", {"who": "Ada"})
    assert prompt.content[0].text == "one_greet to Ada: x" and not prompt.is_error
    denied = await catalog.read_resource("a://x")
    assert denied.is_error and "no reads" in denied.content[0].text
    assert asked == [("prompt", "one_greet"), ("resource", "a://x")]
    assert [(r.tool, r.source, r.is_error) for r in records] == [
        ("one_greet", "plugin:one", False),
        ("a://x", "plugin:one", True),
    ]
    with pytest.raises(UnknownToolError, match="unknown prompt"):
        await catalog.get_prompt("one_nothing", {})
    missing = await catalog.get_prompt("one_greet", {})
    assert missing.is_error and "who" in missing.content[0].text


async def test_text_over_the_budget_is_cut_with_one_note_keeping_uri_fields_and_roles() -> None:
    provider = Offering("one", uris=("a://x",))
    provider.text = "line\n" * 100_000
    catalog = catalog_of(provider, output_budget=2_000)
    read = await catalog.read_resource("a://x")
    assert len(read.content) == 1 and read.content[0].uri == "a://x" and read.content[0].type == "resource"
    assert "output cut to" in read.content[0].text and len(read.content[0].text) <= 2_000
    assert read.content[0].extra == ANNOTATED  # the item keeps its wire fields, cut or not
    prompt = await catalog.get_prompt("one_greet", {"who": "Ada"})
    assert prompt.structured_content[PROMPT_ROLES][0] == "user"
    assert len(prompt.structured_content[PROMPT_ROLES]) == len(prompt.content)
    assert any("output cut to" in item.text for item in prompt.content)


def test_templates_match_left_to_right_without_backtracking() -> None:
    parts = parse_template("demo://resource/dynamic/text/{resourceId}")
    assert parts is not None
    assert template_match(parts, "demo://resource/dynamic/text/7") == {"resourceId": "7"}
    assert template_match(parts, "demo://resource/dynamic/text/7/8") is None  # a simple value holds no /
    assert template_match(parts, "demo://resource/static/7") is None
    reserved = parse_template("file:///{+path}")
    assert reserved is not None and template_match(reserved, "file:///a/b/../c") == {"path": "a/b/../c"}
    hostile = parse_template("{+a}" + "x{+b}" * (MAX_TEMPLATE_EXPRESSIONS - 2) + "z")
    assert hostile is not None
    assert template_match(hostile, "x" * 100_000 + "y") is None  # one pass: no exponential search
    assert template_match(hostile, "x" * 100_000 + "z") is not None
    assert parse_template("{a}" * (MAX_TEMPLATE_EXPRESSIONS + 1)) is None
    assert parse_template("broken{") is None


def test_pages_follow_their_cursor_and_a_forged_one_is_refused() -> None:
    items = list(range(1_201))
    first, cursor = page(items, None)
    second, cursor2 = page(items, cursor)
    third, end = page(items, cursor2)
    assert first + second + third == items and end is None
    for forged in ("-1", "abc", "9" * 20):
        with pytest.raises(ValueError, match="invalid cursor"):
            page(items, forged)


async def test_subscriptions_are_bounded_per_client_and_in_all_and_the_least_recent_client_makes_room(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import awf_mcp.core.catalog as catalog_module

    monkeypatch.setattr(catalog_module, "MAX_CLIENT_SUBSCRIPTIONS", 3)
    monkeypatch.setattr(catalog_module, "MAX_SUBSCRIPTIONS", 5)
    provider = Offering("one", templates=("t://{id}",))
    subscribed: list[tuple[str, bool]] = []

    async def subscribe(uri: str, on: bool) -> None:
        subscribed.append((uri, on))

    provider.offers = {"subscribe"}  # type: ignore[attr-defined]
    provider.subscribe = subscribe  # type: ignore[attr-defined]
    catalog = catalog_of(provider)
    for n in range(3):
        await catalog.subscribe(f"t://{n}", "gone", on=True)
    with pytest.raises(UnknownResourceError, match="3 subscriptions of this client"):
        await catalog.subscribe("t://9", "gone", on=True)
    await catalog.subscribe("t://0", "here", on=True)  # the same URI: the upstream is not asked again
    await catalog.subscribe("t://5", "here", on=True)
    assert subscribed.count(("t://0", True)) == 1
    await catalog.subscribe("t://6", "here", on=True)  # past 5 in all: "gone" subscribed least recently
    assert catalog.subscribers("t://1") == set() and catalog.subscribers("t://0") == {"here"}
    assert ("t://1", False) in subscribed and ("t://0", False) not in subscribed
    with pytest.raises(UnknownResourceError, match="3 subscriptions of this client"):
        await catalog.subscribe("t://7", "here", on=True)
    with pytest.raises(UnknownResourceError, match="no server or plugin offers"):
        await catalog.subscribe("x://1", "here", on=True)


async def test_a_listen_streams_subscriptions_are_never_evicted_and_past_the_bound_it_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import awf_mcp.core.catalog as catalog_module

    monkeypatch.setattr(catalog_module, "MAX_SUBSCRIPTIONS", 4)
    provider = Offering("one", templates=("t://{id}",))

    async def subscribe(uri: str, on: bool) -> None:
        return None

    provider.offers = {"subscribe"}  # type: ignore[attr-defined]
    provider.subscribe = subscribe  # type: ignore[attr-defined]
    catalog = catalog_of(provider)
    stream = object()
    for n in range(2):
        await catalog.subscribe(f"t://{n}", stream, on=True, ends_itself=True)
    for n in range(2, 4):
        await catalog.subscribe(f"t://{n}", "client", on=True)
    await catalog.subscribe("t://4", "other", on=True)  # "client" makes room, not the stream
    assert catalog.subscribers("t://0") == {stream} and catalog.subscribers("t://2") == set()
    await catalog.subscribe("t://5", "other", on=True)
    await catalog.subscribe("t://6", stream, on=True, ends_itself=True)  # "other" makes room
    await catalog.subscribe("t://7", stream, on=True, ends_itself=True)
    with pytest.raises(UnknownResourceError, match="4 subscriptions are held"):
        await catalog.subscribe("t://8", "client", on=True)  # only the stream's are held: none evicted
    assert catalog.subscribers("t://1") == {stream} and catalog.subscribers("t://7") == {stream}
    await catalog.forget(stream)  # the stream ended
    await catalog.subscribe("t://8", "client", on=True)
