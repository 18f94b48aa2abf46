"""Live reload's pieces (awf_mcp.core.reload): what counts as a change, and the debounced watch."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from awf_mcp.core.config import ServeOptions, Settings
from awf_mcp.core.reload import ConfigWatch, compare, watched_files
from awf_mcp.core.servers import ServerSpec
from awf_mcp.processes.containment import policy as containment_policy
from awf_mcp.processes.containment.policy import SandboxPolicy, active_roots

ONE = ServerSpec(name="one", command="one")
TWO = ServerSpec(name="two", command="two")


def test_servers_added_removed_and_changed_are_told_apart() -> None:
    old = Settings(servers=(ONE, TWO))
    new = Settings(servers=(ServerSpec(name="one", command="one", args=("-v",)), ServerSpec(name="three")))
    changes = compare(old, new)
    assert (changes.added, changes.removed, changes.restarted) == (("three",), ("two",), ("one",))
    assert not changes.plugins and not changes.settings and changes
    assert not compare(old, Settings(servers=(ONE, TWO)))


def test_the_roots_or_the_sandbox_restart_every_server_and_the_roots_reload_the_plugins() -> None:
    old = Settings(servers=(ONE, TWO), roots=("/a",))
    roots = compare(old, Settings(servers=(ONE, TWO), roots=("/b",)))
    assert roots.restarted == ("one", "two") and roots.plugins and roots.settings == ("roots",)
    sandbox = compare(old, Settings(servers=(ONE, TWO), roots=("/a",), sandbox=SandboxPolicy(network=("x",))))
    assert sandbox.restarted == ("one", "two") and not sandbox.plugins


def test_settings_that_cannot_change_live_are_set_apart() -> None:
    changes = compare(Settings(), Settings(http_auth={"issuer": "https://i"}, output_budget=5000))
    assert changes.fixed == ("http_auth",) and changes.settings == ("output_budget",)
    assert not compare(Settings(), Settings(http_auth={"issuer": "https://i"}))


def test_only_a_serve_with_a_config_file_watches(tmp_path: Path) -> None:
    assert watched_files(ServeOptions(), tmp_path) == []
    (tmp_path / "awf-mcp.toml").write_text("")
    assert watched_files(ServeOptions(), tmp_path)[0] == tmp_path / "awf-mcp.toml"
    named = watched_files(ServeOptions(config="missing.toml"), tmp_path)
    assert named[0] == tmp_path / "missing.toml"  # named: watched even while absent


@pytest.mark.anyio
async def test_a_burst_of_writes_is_one_change_and_removal_and_creation_count(tmp_path: Path) -> None:
    path = tmp_path / "awf-mcp.toml"
    path.write_text("a = 1\n")
    watch = ConfigWatch([path], poll=0.05, debounce=0.2)
    seen: list[float] = []

    async def follow() -> None:
        async for _ in watch.changes():
            seen.append(time.monotonic())

    async with anyio.create_task_group() as group:
        group.start_soon(follow)
        await anyio.sleep(0.2)
        for index in range(5):  # an editor's save in several writes
            path.write_text(f"a = {index + 2}\n" * (index + 1))
            await anyio.sleep(0.05)
        last_write = time.monotonic()
        await anyio.sleep(0.6)
        assert len(seen) == 1 and seen[0] - last_write >= 0.15
        path.unlink()
        await anyio.sleep(0.6)
        assert len(seen) == 2
        path.write_text("a = 1\n")
        await anyio.sleep(0.6)
        assert len(seen) == 3
        watch.now()  # SIGHUP: at once, changed or not
        await anyio.sleep(0.1)
        assert len(seen) == 4
        group.cancel_scope.cancel()


@pytest.mark.anyio
async def test_an_in_process_reload_applies_a_valid_file_and_keeps_the_old_one_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from awf_mcp.cli import runtime
    from awf_mcp.core.config import load
    from awf_mcp.core.reload import Reloader

    monkeypatch.setenv("AWF_MCP_NO_PLUGINS", "1")
    for name in ("policy", "roots", "own_config"):  # the process's sandbox policy, as it was, after
        monkeypatch.setattr(containment_policy._active, name, getattr(containment_policy._active, name))
    config = tmp_path / "own.toml"  # named, outside the project (the working directory): the user's own
    work = tmp_path / "work"
    work.mkdir()
    config.write_text('only = ["Read"]\n')
    options = ServeOptions(config=str(config))
    settings = load(options, cwd=str(work))
    told: list[str] = []

    async def no_servers(settings: Settings, specs: object) -> list[object]:
        raise AssertionError("no server is configured")

    async with runtime.open_runtime(settings, observer=None) as live:

        async def tools_changed() -> None:
            told.append("tools")

        live.registry.watch(tools_changed)
        reloader = Reloader(
            settings,
            options,
            plugins=live.plugins,
            registry=live.registry,
            invoker=live.invoker,
            catalog=None,
            start_servers=no_servers,  # type: ignore[arg-type]
            close_providers=runtime.close_providers,
            cwd=work,
        )
        config.write_text('only = ["Glob"]\noutput_budget = 5000\n')
        assert await reloader.reload()
        assert [d.name for d in live.registry.definitions()] == ["Glob"] and told == ["tools"]
        assert live.invoker.output_budget == 5000 and reloader.settings.output_budget == 5000

        config.write_text('only = ["Grep"\n')  # not TOML
        with caplog.at_level("WARNING", logger="awf_mcp.reload"):
            assert not await reloader.reload()
            assert not await reloader.reload()
        assert [d.name for d in live.registry.definitions()] == ["Glob"] and told == ["tools"]
        assert reloader.problem is not None and "not valid TOML" in reloader.problem
        assert len([r for r in caplog.records if "is not reloaded" in r.getMessage()]) == 1

        config.write_text(
            'only = ["Glob"]\noutput_budget = 5000\n[http.auth]\nissuer = "https://i.example"\naudience = "https://a.example/mcp"\n'
        )
        caplog.clear()
        with caplog.at_level("WARNING", logger="awf_mcp.reload"):
            assert not await reloader.reload()  # nothing else changed
            assert not await reloader.reload()
        assert reloader.problem is None and reloader.settings.http_auth is None
        assert len([r for r in caplog.records if "http.auth changed" in r.getMessage()]) == 1

        read_before = next(tool.provider for tool in live.registry if tool.name == "Glob")
        (tmp_path / "sub").mkdir()
        config.write_text(f'only = ["Glob"]\nroots = ["{tmp_path / "sub"}"]\n')
        assert await reloader.reload()  # the roots: the built-ins load again, confined to them
        assert next(tool.provider for tool in live.registry if tool.name == "Glob") is not read_before
        assert live.invoker.client_roots is not None
        assert live.invoker.client_roots.configured == (str(tmp_path / "sub"),)
        assert active_roots() == (str(tmp_path / "sub"),)
        assert live.invoker.output_budget is None  # gone from the file: back to the default
