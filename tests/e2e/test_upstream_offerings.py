"""Everything an upstream server offers, through ``awf-mcp serve``: prompts, resources, templates,
completions, subscriptions and log messages, against the real ``@modelcontextprotocol/server-everything``
and an SDK server that changes its prompts and resources while it runs."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, listen
from mcp.shared.exceptions import MCPError
from mcp_types import (
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    PaginatedRequestParams,
    PromptListChangedNotification,
    PromptReference,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
)

from tests.e2e.test_list_changed import http_serve, http_session, next_event
from tests.e2e.test_upstream import CHANGING, NO_PLUGINS, node_server, server_table, text_of, write_config
from tests.helpers.harness import mcp_session, server_command, server_env

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:.*(is removed|is deprecated) as of 2026-07-28"),
]


async def test_prompts_resources_templates_and_completions_of_server_everything_pass_through(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, node_server("everything", "server-everything"))
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        capabilities = session.initialize_result.capabilities if session.initialize_result else None
        assert capabilities is not None and capabilities.prompts is not None
        assert capabilities.resources is not None and capabilities.resources.subscribe
        assert capabilities.completions is not None and capabilities.logging is not None
        prompts = {prompt.name: prompt for prompt in (await session.list_prompts()).prompts}
        assert "everything_simple-prompt" in prompts and "everything_args-prompt" in prompts
        simple = await session.get_prompt("everything_simple-prompt")
        assert simple.messages[0].role == "user"
        assert simple.messages[0].content.text == "This is a simple prompt without arguments."  # type: ignore[union-attr]
        args = await session.get_prompt("everything_args-prompt", {"city": "Paris"})
        assert "Paris" in args.messages[0].content.text  # type: ignore[union-attr]

        resources = (await session.list_resources()).resources
        uris = [str(resource.uri) for resource in resources]
        assert any(uri.startswith("demo://resource/static/document/") for uri in uris)
        read = await session.read_resource(uris[0])
        assert str(read.contents[0].uri) == uris[0]
        templates = [t.uri_template for t in (await session.list_resource_templates()).resource_templates]
        assert "demo://resource/dynamic/text/{resourceId}" in templates
        dynamic = await session.read_resource("demo://resource/dynamic/text/7")
        assert "7" in dynamic.contents[0].text  # type: ignore[union-attr]
        blob = await session.read_resource("demo://resource/dynamic/blob/3")
        assert base64.b64decode(blob.contents[0].blob)  # type: ignore[union-attr]

        with pytest.raises(MCPError, match="no server or plugin offers resource 'file:///etc/passwd'"):
            await session.read_resource("file:///etc/passwd")
        with pytest.raises(MCPError, match="unknown prompt"):
            await session.get_prompt("everything_no-such-prompt")
        assert (await session.list_tools()).tools  # the server keeps serving


def changing(tmp_path: Path, *extra_tables: str, **extra: object) -> str:
    """A config serving the SDK upstream that changes its prompts and resources (not pinned)."""
    table = server_table("chg", sys.executable, [str(CHANGING), "--offerings"], pin=False, **extra)
    return write_config(tmp_path, table, *extra_tables)


async def test_prompt_and_resource_changes_updates_and_log_messages_reach_the_client(tmp_path: Path) -> None:
    told: list[Any] = []

    async def on_message(message: object) -> None:
        told.append(message)

    async def until(kind: type, count: int = 1) -> list[Any]:
        with anyio.fail_after(10):
            while len(seen := [m for m in told if isinstance(m, kind)]) < count:
                await anyio.sleep(0.02)
        return seen

    config = changing(tmp_path)
    async with mcp_session(
        "--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, message_handler=on_message
    ) as session:
        capabilities = session.initialize_result.capabilities if session.initialize_result else None
        assert (
            capabilities is not None
            and capabilities.prompts is not None
            and capabilities.prompts.list_changed
        )
        assert capabilities.resources is not None and capabilities.resources.list_changed
        assert {p.name for p in (await session.list_prompts()).prompts} == {"chg_greet", "chg_huge"}
        greeting = await session.get_prompt("chg_greet", {"who": "Ada"})
        assert [m.role for m in greeting.messages] == ["user", "assistant"]
        assert greeting.messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]
        completion = await session.complete(PromptReference(name="chg_greet"), {"name": "who", "value": "A"})
        assert completion.completion.values == ["Ada", "Alan"]
        await session.list_resources()

        await session.call_tool("chg_offer", {"prompt": "farewell"})
        await until(PromptListChangedNotification)
        assert "chg_farewell" in {p.name for p in (await session.list_prompts()).prompts}
        await session.call_tool("chg_offer", {"resource": "note://new"})
        await until(ResourceListChangedNotification)
        assert "note://new" in {str(r.uri) for r in (await session.list_resources()).resources}

        await session.subscribe_resource("note://fixed")
        assert text_of(await session.call_tool("chg_subscribed", {})) == "1: note://fixed"
        await session.call_tool("chg_touch", {"uri": "note://fixed"})
        updated = await until(ResourceUpdatedNotification)
        assert str(updated[0].params.uri) == "note://fixed"
        await session.unsubscribe_resource("note://fixed")
        assert text_of(await session.call_tool("chg_subscribed", {})) == "0: "

        await session.set_logging_level("info")
        await session.call_tool("chg_say", {"text": "hello from upstream"})
        logged = await until(LoggingMessageNotification)
        assert (
            logged[0].params.logger == "chg/changing-logger"
            and logged[0].params.data == "hello from upstream"
        )


async def test_on_the_stateless_revision_prompts_and_resources_are_listed_and_read(tmp_path: Path) -> None:
    config = changing(tmp_path)
    async with mcp_session(
        "--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, stateless=True
    ) as session:
        assert "chg_greet" in {p.name for p in (await session.list_prompts()).prompts}
        read = await session.read_resource("note://fixed")
        assert read.contents[0].text == "the text of note://fixed"  # type: ignore[union-attr]
        prompt = await session.get_prompt("chg_greet", {"who": "Alan"})
        assert prompt.messages[0].content.text == "Hello, Alan!"  # type: ignore[union-attr]


async def test_on_the_stateless_revision_a_listen_stream_subscribes_to_resources_upstream(
    tmp_path: Path,
) -> None:
    too_long = "note://" + "x" * 9000  # over the 8 KiB awf-mcp routes: left out of the acknowledgement
    async with mcp_session(
        "--config", changing(tmp_path), "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, stateless=True
    ) as session:
        async with listen(session, resource_subscriptions=["note://fixed", too_long]) as changes:
            assert changes.honored.resource_subscriptions == ["note://fixed"]
            assert text_of(await session.call_tool("chg_subscribed", {})) == "1: note://fixed"
            await session.call_tool("chg_touch", {"uri": "note://other"})  # not subscribed: not told
            await session.call_tool("chg_touch", {"uri": "note://fixed"})
            assert await next_event(changes) == ResourceUpdated(uri="note://fixed")
        # The stream ended: so does its subscription upstream.
        with anyio.fail_after(10):
            while text_of(await session.call_tool("chg_subscribed", {})) != "0: ":
                await anyio.sleep(0.05)


async def test_on_the_stateless_revision_log_messages_ride_the_request_that_asked_for_them(
    tmp_path: Path,
) -> None:
    logged: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logged.append(params)

    async with mcp_session(
        "--config",
        changing(tmp_path),
        "--no-builtins",
        cwd=tmp_path,
        env=NO_PLUGINS,
        stateless=True,
        logging_callback=on_log,
    ) as session:
        await session.call_tool("chg_say", {"text": "not asked for"})
        await session.call_tool(
            "chg_say", {"text": "too verbose"}, meta={"io.modelcontextprotocol/logLevel": "error"}
        )
        await session.call_tool(
            "chg_say", {"text": "hello from upstream"}, meta={"io.modelcontextprotocol/logLevel": "info"}
        )
        assert [(p.level, p.logger, p.data) for p in logged] == [
            ("info", "chg/changing-logger", "hello from upstream")
        ]


# ---------------------------------------------------------------- hostile upstreams and clients


async def test_a_5_mib_prompt_is_cut_to_the_budget_and_a_10_mib_one_is_refused_with_a_sentence(
    tmp_path: Path,
) -> None:
    config = changing(tmp_path)
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        cut = await session.get_prompt("chg_huge", {"mib": "5"})
        text = cut.messages[0].content.text  # type: ignore[union-attr]
        assert len(text) < 200_000 and cut.messages[0].role == "user"
        assert any("output cut to" in m.content.text for m in cut.messages)  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="over the 10485760-byte limit"):
            await session.get_prompt("chg_huge", {"mib": "10"})
        again = await session.get_prompt("chg_greet", {"who": "Ada"})  # the server was restarted
        assert again.messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]


async def test_a_200_mb_resource_is_refused_with_a_sentence_and_a_3_mb_one_is_cut(tmp_path: Path) -> None:
    config = changing(tmp_path)
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        cut = await session.read_resource("big://3")
        text = cut.contents[0].text  # type: ignore[union-attr]
        assert str(cut.contents[0].uri) == "big://3" and "output cut to" in text and len(text) < 200_000
        with pytest.raises(MCPError, match="over the 10485760-byte limit"):
            await session.read_resource("big://200")
        assert (await session.read_resource("note://fixed")).contents[0].text == "the text of note://fixed"  # type: ignore[union-attr]


async def test_a_template_matching_everything_gets_the_reads_no_one_listed_and_awf_mcp_serves_no_file(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("awf-mcp must never serve this")
    config = changing(tmp_path)
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        for uri in (secret.as_uri(), "note://fixed/../../" + str(secret), "file:///../../etc/passwd"):
            read = await session.read_resource(uri)
            assert read.contents[0].text == f"anything: {uri}"  # type: ignore[union-attr]  # the upstream's own answer
        listed = await session.read_resource("note://fixed")  # a listed URI goes before any template
        assert listed.contents[0].text == "the text of note://fixed"  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="longer than the 8,192 bytes"):
            await session.read_resource("x://" + "a" * 9000)


async def test_10000_resources_are_listed_page_by_page(tmp_path: Path) -> None:
    config = changing(tmp_path, env={"CHANGING_RESOURCES": "10000"})
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        uris: list[str] = []
        cursor = None
        pages = 0
        while True:
            listed = await session.list_resources(
                params=PaginatedRequestParams(cursor=cursor) if cursor else None
            )
            uris += [str(r.uri) for r in listed.resources]
            pages += 1
            cursor = listed.next_cursor
            if not cursor:
                break
        assert len(uris) == 10_001 and len(set(uris)) == 10_001 and pages == 21
        assert (await session.read_resource("many://9999")).contents[0].text == "the text of many://9999"  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="invalid cursor"):
            await session.list_resources(params=PaginatedRequestParams(cursor="-1"))


async def test_a_subscription_flood_is_bounded_and_the_server_keeps_serving(tmp_path: Path) -> None:
    config = changing(tmp_path)
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        refused = 0
        for n in range(1100):
            try:
                await session.subscribe_resource(f"flood://{n}")
            except MCPError as exc:
                assert "256 subscriptions of this client are held" in exc.error.message
                refused += 1
        assert refused == 1100 - 256
        for _ in range(10):  # the same URI again is no new subscription
            await session.subscribe_resource("flood://0")
        assert text_of(await session.call_tool("chg_subscribed", {})).startswith("256: flood://0,")
        await session.unsubscribe_resource("flood://0")
        await session.subscribe_resource("flood://1099")
        assert (await session.list_prompts()).prompts


async def test_a_listen_stream_asking_for_100000_uris_gets_256_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    uris = [f"flood://{n}" for n in range(100_000)]
    async with mcp_session(
        "--config", changing(tmp_path), "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, stateless=True
    ) as session:
        started = time.monotonic()
        async with listen(session, resource_subscriptions=uris) as changes:
            print(f"listen with {len(uris):,} URIs acknowledged in {time.monotonic() - started:.2f} s")
            assert changes.honored.resource_subscriptions == uris[:256]
            assert text_of(await session.call_tool("chg_subscribed", {})).startswith("256: flood://0,")
            await session.call_tool("chg_touch", {"uri": "flood://255"})
            assert await next_event(changes) == ResourceUpdated(uri="flood://255")
        assert (await session.list_prompts()).prompts


async def test_prompts_follow_rename_only_and_exclude_as_tools_do(tmp_path: Path) -> None:
    config = changing(tmp_path, '[rename]\n"server:chg/chg_greet" = "chg_hello"\n')
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as errlog:
        async with mcp_session(
            "--config",
            config,
            "--no-builtins",
            "--exclude",
            "chg_huge",
            cwd=tmp_path,
            env=NO_PLUGINS,
            errlog=errlog,
        ) as session:
            assert [p.name for p in (await session.list_prompts()).prompts] == ["chg_hello"]
            hello = await session.get_prompt("chg_hello", {"who": "Ada"})
            assert hello.messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="unknown prompt 'chg_huge'"):
                await session.get_prompt("chg_huge", {"mib": "1"})
            with pytest.raises(MCPError, match="who"):  # a required argument left out
                await session.get_prompt("chg_hello", {})
    assert "rename" not in errors.read_text()


def awf(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``awf-mcp ARGS...`` run to its end (tables 250 columns wide)."""
    env = server_env({**NO_PLUGINS, "COLUMNS": "250"})
    return subprocess.run(server_command(*args), capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


def test_the_cli_lists_gets_and_reads_through_the_same_call_path(tmp_path: Path) -> None:
    config = changing(tmp_path)
    prompts = awf(tmp_path, "prompts", "list", "--json", "--config", config, "--no-builtins")
    assert prompts.returncode == 0, prompts.stderr
    listed = {p["name"]: p for p in json.loads(prompts.stdout)["prompts"]}
    assert listed["chg_greet"]["arguments"] == [{"name": "who", "description": "", "required": True}]

    got = awf(tmp_path, "prompts", "get", "chg_greet", '{"who": "Ada"}', "--json", "--config", config)
    assert got.returncode == 0, got.stderr
    messages = json.loads(got.stdout)["messages"]
    assert [(m["role"], m["text"]) for m in messages] == [("user", "Hello, Ada!"), ("assistant", "Noted.")]
    plain = awf(tmp_path, "prompts", "get", "chg_greet", '{"who": "Ada"}', "--config", config)
    assert "[user] Hello, Ada!" in plain.stdout

    missing = awf(tmp_path, "prompts", "get", "chg_greet", "{}", "--config", config)
    assert missing.returncode == 3 and "who" in missing.stdout

    resources = awf(tmp_path, "resources", "list", "--json", "--config", config)
    report = json.loads(resources.stdout)
    assert "note://fixed" in {r["uri"] for r in report["resources"]}
    assert "big://{megabytes}" in {t["uri"] for t in report["templates"]}

    read = awf(tmp_path, "resources", "read", "note://fixed", "--json", "--config", config)
    assert json.loads(read.stdout)["contents"] == [
        {"uri": "note://fixed", "mime_type": "text/plain", "text": "the text of note://fixed"}
    ]
    big = awf(tmp_path, "resources", "read", "big://1", "--config", config, "--output-budget", "2000")
    assert big.returncode == 0 and "output cut to" in big.stdout and len(big.stdout) < 4000


def test_servers_list_shows_what_each_server_offers_besides_tools(tmp_path: Path) -> None:
    config = changing(tmp_path)
    listed = awf(tmp_path, "servers", "list", "--json", "--config", config)
    row = json.loads(listed.stdout)["servers"][0]
    assert row["offers"] == {
        "prompts": 2,
        "resources": 1,
        "resource_templates": 2,
        "completions": True,
        "logging": True,
        "subscriptions": True,
    }
    table = awf(tmp_path, "servers", "list", "--config", config)
    assert "2 prompts, 1 resources, 2 templates" in table.stdout


# ---------------------------------------------------------------- over HTTP, both protocol families


async def test_over_http_a_listening_stateless_client_is_told_of_prompt_and_resource_changes(
    tmp_path: Path,
) -> None:
    config = changing(tmp_path)
    with http_serve("--config", config, "--no-builtins", cwd=tmp_path) as (url, _):
        async with http_session(url) as session:
            discovered = await session.discover()
            assert (
                discovered.capabilities.prompts is not None and discovered.capabilities.prompts.list_changed
            )
            assert discovered.capabilities.resources is not None
            prompt = await session.get_prompt("chg_greet", {"who": "Ada"})
            assert prompt.messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]
            async with listen(session, prompts_list_changed=True, resources_list_changed=True) as changes:
                await session.call_tool("chg_offer", {"prompt": "farewell"})
                assert await next_event(changes) == PromptsListChanged()
                assert "chg_farewell" in {p.name for p in (await session.list_prompts()).prompts}
                await session.call_tool("chg_offer", {"resource": "note://http"})
                assert await next_event(changes) == ResourcesListChanged()
                read = await session.read_resource("note://http")
                assert read.contents[0].text == "the text of note://http"  # type: ignore[union-attr]


async def test_over_http_a_stateless_client_gets_its_resource_updates_and_the_logs_it_asked_for(
    tmp_path: Path,
) -> None:
    logged: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logged.append(params)

    with http_serve("--config", changing(tmp_path), "--no-builtins", cwd=tmp_path) as (url, _):
        async with http_session(url, logging_callback=on_log) as session:
            await session.discover()
            async with listen(session, resource_subscriptions=["note://fixed"]) as changes:
                assert changes.honored.resource_subscriptions == ["note://fixed"]
                await session.call_tool("chg_touch", {"uri": "note://fixed"})
                assert await next_event(changes) == ResourceUpdated(uri="note://fixed")
            info = {"io.modelcontextprotocol/logLevel": "info"}
            await session.call_tool("chg_say", {"text": "over http"}, meta=info)
            assert [(p.logger, p.data) for p in logged] == [("chg/changing-logger", "over http")]


async def test_over_http_a_handshake_era_session_gets_resource_updates_on_its_get_stream(
    tmp_path: Path,
) -> None:
    updated: list[ResourceUpdatedNotification] = []

    async def on_message(message: object) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            updated.append(message)

    with http_serve("--config", changing(tmp_path), "--no-builtins", cwd=tmp_path) as (url, _):
        async with http_session(url, message_handler=on_message) as session:
            await session.initialize()
            assert (await session.read_resource("note://fixed")).contents[
                0
            ].text == "the text of note://fixed"  # type: ignore[union-attr]
            await session.subscribe_resource("note://fixed")
            # The client opens its GET stream on its own after the handshake: touch until one is told.
            with anyio.fail_after(20):
                while not updated:
                    await session.call_tool("chg_touch", {"uri": "note://fixed"})
                    with anyio.move_on_after(2):
                        while not updated:
                            await anyio.sleep(0.02)
            assert str(updated[0].params.uri) == "note://fixed"


def test_doctor_shows_what_each_server_offers_besides_tools(tmp_path: Path) -> None:
    config = changing(tmp_path)
    report = awf(tmp_path, "doctor", "--json", "--config", config)
    findings = [f for f in json.loads(report.stdout)["findings"] if f["subject"] == "server 'chg' (stdio)"]
    assert findings and "2 prompts, 1 resources, 2 templates" in findings[0]["detail"], report.stdout[-2000:]
    assert findings[0]["data"]["offers"]["prompts"] == 2


async def test_a_server_with_nothing_more_to_offer_advertises_as_before(tmp_path: Path) -> None:
    async with mcp_session("--root", str(tmp_path), cwd=tmp_path, env=NO_PLUGINS) as session:
        capabilities = session.initialize_result.capabilities if session.initialize_result else None
        assert capabilities is not None and capabilities.tools is not None
        assert capabilities.prompts is None and capabilities.resources is None
        assert capabilities.completions is None and capabilities.logging is None
        assert (await session.list_prompts()).prompts == []  # answered, though not advertised


def test_a_missing_optional_list_method_is_no_failure_of_the_rest(tmp_path: Path) -> None:
    """A server without resources/templates/list (-32601): its prompts and resources are served,
    and the CLI says what serve does (one judgement of a partly capable server)."""
    partial = Path(__file__).resolve().parents[1] / "upstreams" / "partial_upstream.py"
    config = tmp_path / "awf.toml"
    config.write_text(f"[servers.part]\ncommand = {sys.executable!r}\nargs = [{str(partial)!r}]\n")
    (tmp_path / "work").mkdir()
    prompts = awf(tmp_path / "work", "prompts", "list", "--json", "--config", str(config))
    resources = awf(tmp_path / "work", "resources", "list", "--json", "--config", str(config))
    listed = awf(tmp_path / "work", "tools", "list", "--config", str(config))
    for done in (prompts, resources, listed):
        assert done.returncode == 0, done.stderr
        assert "not served" not in done.stderr, done.stderr
    assert "part_greet" in prompts.stdout and "partial://notes" in resources.stdout


@pytest.mark.anyio
async def test_meta_icons_and_annotations_pass_through_pinned(tmp_path: Path) -> None:
    """MCP Apps' _meta["ui/resourceUri"], icons and a resource's annotations reach the client; a
    key that steers the client's own loading is awf-mcp's to set; a change of _meta is held."""
    partial = Path(__file__).resolve().parents[1] / "upstreams" / "partial_upstream.py"
    config = tmp_path / "awf.toml"  # the user's own: outside the working directory
    work = tmp_path / "work"
    work.mkdir()

    def write(ui: str) -> None:
        config.write_text(
            f"[servers.part]\ncommand = {sys.executable!r}\nargs = [{str(partial)!r}]\n"
            f'env = {{ PARTIAL_UI = "{ui}" }}\n'
        )

    async def listed() -> tuple[dict[str, Any], list[Any]]:
        async with mcp_session("--config", str(config), cwd=work, env=NO_PLUGINS) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            return tools, (await session.list_resources()).resources

    write("ui://partial/one")
    tools, resources = await listed()
    ping = tools["part_ping"]
    assert ping.meta == {"ui/resourceUri": "ui://partial/one"}  # no anthropic/alwaysLoad of its own
    assert ping.icons and str(ping.icons[0].src) == "https://example.invalid/ping.png"
    (notes,) = resources
    assert notes.annotations is not None and notes.annotations.audience == ["user"]
    write("ui://evil/other")
    tools, _ = await listed()
    assert "part_ping" not in tools  # its definition changed under the approval: held
