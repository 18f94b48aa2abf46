"""Registry: name rules, all-or-nothing per plugin, collisions, selection, renames."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from awf_mcp.core.config import PluginToolSelection, Settings
from awf_mcp.core.plugins import PluginRecord, ProviderTools
from awf_mcp.core.registry import build, long_names, name_problem
from awf_mcp.errors import ConfigError, PluginError, ToolNameError, UnknownToolError
from awf_mcp.ports import BUILTIN_SOURCE, ToolDefinition
from tests.helpers.providers import StaticProvider, definition


def record(name: str, *tool_names: str, source: str | None = None) -> PluginRecord:
    src = source or f"plugin:{name}"
    provider = StaticProvider(*(definition(t, src) for t in tool_names))
    rec = PluginRecord(name=name, source=src, distribution=f"awf-plugin-{name}", version="1.0")
    rec.providers.append(ProviderTools(provider=provider, tools=provider.list_tools()))
    return rec


def builtin(*tool_names: str) -> PluginRecord:
    return record("builtin", *tool_names, source=BUILTIN_SOURCE)


@pytest.mark.parametrize("name", ["Read", "echo_echo", "a-b", "x" * 64, "A1_b-2"])
def test_valid_names_pass(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize("name", ["", "has.dot", "has space", "x" * 65, "ünï", "a/b"])
def test_invalid_names_are_explained(name: str) -> None:
    problem = name_problem(name)
    assert problem is not None and "invalid" in problem


def test_tools_are_sorted_by_name_across_plugins() -> None:
    registry = build(
        [record("zed", "zed_a"), builtin("Read", "Bash"), record("abc", "abc_z", "abc_a")], Settings()
    )
    assert [d.name for d in registry.definitions()] == ["Bash", "Read", "abc_a", "abc_z", "zed_a"]


def test_a_plugin_with_one_invalid_name_is_skipped_whole() -> None:
    bad = record("demo", "demo_ok", "demo.bad")
    good = record("other", "other_x")
    registry = build([bad, good], Settings())
    assert [d.name for d in registry.definitions()] == ["other_x"]
    assert bad.status.startswith("failed: tool name 'demo.bad' is invalid")


def test_a_plugin_tool_without_its_prefix_is_refused() -> None:
    rec = record("demo", "Read")
    build([rec, builtin("Bash")], Settings())
    assert "must be named 'demo_<name>'" in rec.status


def test_invalid_tools_are_fatal_when_strict() -> None:
    with pytest.raises(PluginError, match=r"demo\.bad"):
        build([record("demo", "demo.bad")], Settings(strict=True))


def test_collision_inside_one_plugin_is_fatal_and_names_the_tool() -> None:
    with pytest.raises(ToolNameError) as caught:
        build([record("demo", "demo_x", "demo_x")], Settings())
    message = str(caught.value)
    assert "USER.MCP_PROXY.NAME_COLLISION" in message
    assert "'demo_x'" in message and "--exclude demo_x" in message and "[rename]" in message


def test_collision_across_plugins_names_both_sources() -> None:
    with pytest.raises(ToolNameError) as caught:
        build([record("a", "a_b_c"), record("a_b", "a_b_c")], Settings())
    assert "plugin:a and plugin:a_b" in str(caught.value)


def test_exclude_resolves_a_collision() -> None:
    registry = build(
        [builtin("Read"), record("a", "a_x")], Settings(renames={"a_x": "Read"}, exclude=("Read",))
    )
    assert registry.definitions() == []


def test_rename_by_qualified_name_resolves_a_collision() -> None:
    registry = build(
        [record("a", "a_b_c"), record("a_b", "a_b_c")], Settings(renames={"plugin:a_b/a_b_c": "ab_c"})
    )
    names = {d.name: d.source for d in registry.definitions()}
    assert names == {"a_b_c": "plugin:a", "ab_c": "plugin:a_b"}
    assert registry.lookup("ab_c").original_name == "a_b_c"


def test_rename_to_an_invalid_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="invalid"):
        build([record("a", "a_x")], Settings(renames={"a_x": "bad.name"}))


def test_rename_of_an_unknown_tool_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'ghost'"):
        build([record("a", "a_x")], Settings(renames={"ghost": "g"}))


def test_only_and_exclude_take_globs() -> None:
    records = [builtin("Read", "Bash", "Grep"), record("a", "a_x", "a_y")]
    only = build(records, Settings(only=("a_*", "Read")))
    assert [d.name for d in only.definitions()] == ["Read", "a_x", "a_y"]
    excluded = build(records, Settings(exclude=("Bash", "a_y")))
    assert [d.name for d in excluded.definitions()] == ["Grep", "Read", "a_x"]


def test_proxy_selection_exposes_only_listed_operations() -> None:
    settings = Settings(plugin_tools=(PluginToolSelection("a", ("x",)),))
    registry = build([builtin("Read"), record("a", "a_x", "a_y")], settings)
    assert [d.name for d in registry.definitions()] == ["Read", "a_x"]


def test_proxy_selection_of_an_unknown_plugin_has_its_code() -> None:
    settings = Settings(plugin_tools=(PluginToolSelection("nope", ("x",)),))
    with pytest.raises(ConfigError) as caught:
        build([record("a", "a_x")], settings)
    assert caught.value.code == "USER.MCP_PROXY.UNKNOWN_PLUGIN" and "installed plugins: a" in str(
        caught.value
    )


def test_proxy_selection_of_an_unknown_operation_lists_the_offered_ones() -> None:
    settings = Settings(plugin_tools=(PluginToolSelection("a", ("zz",)),))
    with pytest.raises(ConfigError) as caught:
        build([record("a", "a_x", "a_y")], settings)
    assert caught.value.code == "USER.MCP_PROXY.UNKNOWN_OPERATION"
    assert "offers: x, y" in str(caught.value)


def test_nothing_to_serve_is_the_empty_proxy_error() -> None:
    with pytest.raises(ConfigError) as caught:
        build([], Settings(builtins=False))
    assert caught.value.code == "USER.MCP_PROXY.EMPTY_PROXY"


def test_lookup_of_an_unknown_tool_suggests_close_names() -> None:
    registry = build([builtin("Read", "Grep")], Settings())
    with pytest.raises(UnknownToolError, match="unknown tool 'Rea'"):
        registry.lookup("Rea")


def test_long_names_counts_the_client_prefix() -> None:
    fits = definition("a" * (64 - len("mcp__awf__")))
    too_long = definition("b" * (65 - len("mcp__awf__")))
    assert long_names([fits, too_long]) == [too_long.name]


# Upstream servers' tools: names checked one by one, with the [rename] line to add.


class ChangingTools(StaticProvider):
    """A provider whose tool set the test changes, like an upstream after tools/list_changed."""

    def __init__(self, *definitions: ToolDefinition) -> None:
        super().__init__(*definitions)
        self.watchers: list[Any] = []

    def watch_tools(self, on_change: Any) -> None:
        self.watchers.append(on_change)

    async def change(self, *names: str, source: str) -> None:
        self.definitions = [definition(n, source) for n in names]
        for watcher in self.watchers:
            await watcher()


def upstream(name: str, *tool_names: str) -> PluginRecord:
    source = f"server:{name}"
    provider = ChangingTools(*(definition(t, source) for t in tool_names))
    rec = PluginRecord(name=name, source=source, distribution="stdio server")
    rec.providers.append(ProviderTools(provider=provider, tools=provider.list_tools()))
    return rec


def provider_of(rec: PluginRecord) -> ChangingTools:
    provider = rec.providers[0].provider
    assert isinstance(provider, ChangingTools)
    return provider


def test_an_upstream_tool_with_a_bad_name_is_left_out_with_the_rename_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = build([upstream("git", "git_status", 'git_log "all".v2')], Settings())
    assert [d.name for d in registry.definitions()] == ["git_status"]  # the server is served, minus one
    assert (
        "server 'git': tool 'log \"all\".v2' is left out: tool name 'git_log \"all\".v2' is invalid"
        in caplog.text
    )
    assert 'add to awf-mcp.toml under [rename]: "server:git/git_log \\"all\\".v2" = "git_log_all_v2"' in (
        caplog.text
    )


def test_the_suggested_rename_line_is_valid_toml_and_makes_the_tool_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    long_tool = "fetch_" + "x" * 70  # over 64 with the server prefix alone
    build([upstream("web", f"web_{long_tool}", "web_a b")], Settings())
    lines = [
        line.partition("under [rename]: ")[2] for line in caplog.text.splitlines() if "[rename]: " in line
    ]
    assert len(lines) == 2
    renames = tomllib.loads("[rename]\n" + "\n".join(lines))["rename"]
    assert renames["server:web/web_a b"] == "web_a_b"
    suggested = renames[f"server:web/web_{long_tool}"]
    assert suggested.startswith("web_fetch_x") and len(f"mcp__awf__{suggested}") == 64
    registry = build([upstream("web", f"web_{long_tool}", "web_a b")], Settings(renames=renames))
    assert sorted(d.name for d in registry.definitions()) == sorted(renames.values())
    assert not long_names(registry.definitions())


def test_a_bad_upstream_name_is_fatal_when_strict_and_an_exclusion_silences_it() -> None:
    with pytest.raises(PluginError, match=r'\[rename\]: "server:git/git_a\.b" = "git_a_b"'):
        build([upstream("git", "git_ok", "git_a.b")], Settings(strict=True))
    registry = build([upstream("git", "git_ok", "git_a.b")], Settings(strict=True, exclude=("git_a.b",)))
    assert [d.name for d in registry.definitions()] == ["git_ok"]


def test_an_upstream_name_too_long_for_clients_is_served_with_the_advice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    name = "srv_" + "y" * (64 - len("mcp__awf__") - 3)
    registry = build([upstream("srv", name)], Settings())
    assert [d.name for d in registry.definitions()] == [name]
    assert f"over 64 characters as mcp__awf__{name}" in caplog.text
    assert f'"server:srv/{name}" = "{name[:-1]}"' in caplog.text


@pytest.mark.parametrize("server_first", [True, False])
def test_an_upstream_tool_that_takes_a_plugins_name_gives_way_with_the_rename_line(
    caplog: pytest.LogCaptureFixture, server_first: bool
) -> None:
    plugin, server = record("time", "time_now"), upstream("time", "time_now", "time_zone")
    records = [server, plugin] if server_first else [plugin, server]
    registry = build(records, Settings())
    assert {d.name: d.source for d in registry.definitions()} == {
        "time_now": "plugin:time",
        "time_zone": "server:time",
    }
    assert "server 'time': tool 'now' is left out: its name 'time_now' is already taken by plugin:time" in (
        caplog.text
    )
    line = next(line for line in caplog.text.splitlines() if "[rename]: " in line)
    renames = tomllib.loads("[rename]\n" + line.partition("under [rename]: ")[2])["rename"]
    assert renames == {"server:time/time_now": "time_now_2"}
    served = build([record("time", "time_now"), upstream("time", "time_now")], Settings(renames=renames))
    assert {d.name: d.source for d in served.definitions()} == {
        "time_now": "plugin:time",
        "time_now_2": "server:time",
    }
    with pytest.raises(ToolNameError, match="time_now"):
        build([record("time", "time_now"), upstream("time", "time_now")], Settings(strict=True))


def test_of_two_servers_claiming_one_name_the_second_gives_way(caplog: pytest.LogCaptureFixture) -> None:
    registry = build([upstream("a", "a_x"), upstream("b", "b_y")], Settings(renames={"b_y": "a_x"}))
    assert {d.name: d.source for d in registry.definitions()} == {"a_x": "server:a"}
    assert "server 'b': tool 'y' is left out: its name 'a_x' is already taken by server:a" in caplog.text
    assert '[rename]: "server:b/b_y" = "b_y"' in caplog.text


def test_a_rename_of_a_server_that_did_not_start_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    down = PluginRecord(name="slow", source="server:slow", distribution="stdio server")
    down.fail("it did not list its tools within 1 s")
    renames = {"server:slow/slow_a b": "slow_a_b", "slow_other": "other"}
    registry = build([record("a", "a_x"), down], Settings(renames=renames))
    assert [d.name for d in registry.definitions()] == ["a_x"]
    assert "rename of 'server:slow/slow_a b' not applied: no server serves that tool now" in caplog.text
    assert "rename of 'slow_other' not applied" in caplog.text
    with pytest.raises(ConfigError, match="'ghost_x', which no plugin offers"):
        build([record("a", "a_x"), down], Settings(renames={"ghost_x": "g"}))


def test_a_selection_naming_a_server_that_did_not_start_serves_the_rest() -> None:
    down = PluginRecord(name="slow", source="server:slow", distribution="stdio server")
    down.fail("it did not list its tools within 1 s")
    settings = Settings(plugin_tools=(PluginToolSelection("a", ("x",)), PluginToolSelection("slow", ())))
    registry = build([record("a", "a_x", "a_y"), down], settings)
    assert [d.name for d in registry.definitions()] == ["a_x"]


# A tool set that changes while serving.


@pytest.mark.anyio
async def test_a_changed_upstream_is_re_merged_and_the_listeners_told() -> None:
    rec = upstream("up", "up_a", "up_b")
    registry = build([builtin("Read"), rec], Settings(exclude=("up_hidden",), renames={"up_b": "bee"}))
    told: list[list[str]] = []

    async def listener() -> None:
        told.append([d.name for d in registry.definitions()])

    registry.watch(listener)
    assert registry.can_change
    in_flight = registry.lookup("up_a")  # a call in flight holds its tool
    await provider_of(rec).change("up_b", "up_c", "up_hidden", source="server:up")
    assert told == [["Read", "bee", "up_c"]]  # rename and exclude applied to the new set
    assert rec.tool_names == ["up_b", "up_c", "up_hidden"]
    with pytest.raises(UnknownToolError):
        registry.lookup("up_a")
    assert in_flight.provider is provider_of(rec) and in_flight.original_name == "up_a"
    await provider_of(rec).change("up_b", "up_c", "up_hidden", source="server:up")
    assert len(told) == 1  # nothing changed: nobody told


@pytest.mark.anyio
async def test_a_new_collision_at_runtime_drops_the_newcomer_and_keeps_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second = upstream("one", "one_x"), upstream("two", "two_y")
    registry = build([first, second], Settings(renames={"server:two/two_y": "one_z"}))
    assert [d.name for d in registry.definitions()] == ["one_x", "one_z"]
    await provider_of(first).change("one_x", "one_z", source="server:one")  # the name "two" was given
    assert {d.name: d.source for d in registry.definitions()} == {
        "one_x": "server:one",
        "one_z": "server:two",
    }
    assert "tool name 'one_z' is now claimed by both server:two and server:one" in caplog.text
    assert "the tool 'one_z' of server:one is left out" in caplog.text
    assert registry.lookup("one_z").original_name == "two_y"
    # Inside one server too: a name listed twice keeps the first.
    await provider_of(second).change("two_y", "two_z", "two_z", source="server:two")
    assert [d.name for d in registry.definitions()] == ["one_x", "one_z", "two_z"]
    assert "tool name 'two_z' is now claimed by server:two twice" in caplog.text


@pytest.mark.anyio
async def test_a_changed_schema_under_the_same_name_is_the_one_calls_are_checked_against() -> None:
    from awf_mcp.core.calls import ToolInvoker

    rec = upstream("up", "up_a")
    invoker = ToolInvoker(build([rec], Settings()), timeout_seconds=5)
    assert not (await invoker.call("up_a", {"text": "x"})).is_error
    provider = provider_of(rec)
    number = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    provider.definitions = [ToolDefinition("up_a", "now takes a number", number, source="server:up")]
    for watcher in provider.watchers:
        await watcher()
    refused = await invoker.call("up_a", {"text": "x"})
    assert refused.is_error and "'n' is a required property" in refused.content[0].text
    assert not (await invoker.call("up_a", {"n": 1})).is_error


def test_the_client_prefix_is_the_name_awf_mcp_config_writes() -> None:
    from awf_mcp.clients.clientconfig import DEFAULT_SERVER_NAME
    from awf_mcp.core.registry import CLIENT_SERVER_NAME

    assert CLIENT_SERVER_NAME == DEFAULT_SERVER_NAME


def test_serving_keeps_only_the_upstream_servers_that_may_serve_a_tool() -> None:
    from awf_mcp.core.registry import serving
    from awf_mcp.core.servers import ServerSpec

    settings = Settings(
        servers=tuple(ServerSpec(name=n, command="x") for n in ("git", "time", "docs")),
        renames={"server:docs/docs_search": "git_find", "time_now": "clock", "echo_echo": "say"},
        plugin_tools=(PluginToolSelection("time", ()), PluginToolSelection("echo", ())),
    )

    def names(tool: str | None) -> list[str]:
        return [spec.name for spec in serving(settings, tool).servers]

    assert names(None) == [] and names("Read") == [] and names("echo_echo") == []
    assert names("time_get_current_time") == ["time"]
    assert names("clock") == ["time"]  # renamed from time_now
    assert names("git_find") == ["git", "docs"]  # a git-looking name that docs' rename took
    narrowed = serving(settings, "git_status")
    assert dict(narrowed.renames) == {"echo_echo": "say"}
    assert [s.plugin for s in narrowed.plugin_tools or ()] == ["echo"]


def test_a_mistyped_tool_gets_the_closest_names() -> None:
    registry = build([builtin("Read", "Bash", "Glob", "Grep")], Settings())
    with pytest.raises(UnknownToolError, match="did you mean 'Read'\\?"):
        registry.lookup("Reed")
    with pytest.raises(UnknownToolError, match="did you mean 'Read'\\?"):
        registry.lookup("read")
    with pytest.raises(UnknownToolError) as caught:
        registry.lookup("x" * 1_000_000)
    assert "did you mean" not in str(caught.value) and len(str(caught.value)) < 200
