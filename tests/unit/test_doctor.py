"""``awf-mcp doctor`` (awf_mcp.cli.doctor): each check against real files, processes and plugins."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.builtins.ripgrep import ripgrep_binary
from awf_mcp.cli import doctor
from awf_mcp.cli.doctor import (
    Context,
    Finding,
    Report,
    plugin_directory_findings,
    root_findings,
    run_checks,
    search_findings,
)
from awf_mcp.clients import clientconfig
from awf_mcp.core.config import ServeOptions
from awf_mcp.errors import UserError
from tests.helpers.distributions import make_distribution, provider_plugin
from tests.helpers.harness import server_command, write_approved

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).resolve().parents[1] / "upstreams" / "fake_upstream.py"
WRITABLE_CLIENTS = [name for name, profile in clientconfig.PROFILES.items() if profile.files]


@pytest.fixture(autouse=True)
def _no_stray_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWF_MCP_PLUGIN_PATH", str(tmp_path / "no-plugins"))
    monkeypatch.delenv("AWF_MCP_PLUGINS", raising=False)
    monkeypatch.delenv("AWF_MCP_NO_PLUGINS", raising=False)


def context(
    tmp_path: Path,
    *,
    options: ServeOptions | None = None,
    timeout: float = 20.0,
    frozen: bool = False,
) -> Context:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    ctx = Context(
        cwd=project,
        home=home,
        env={"PATH": os.environ.get("PATH", "")},
        options=options or ServeOptions(),
        timeout=timeout,
        frozen=frozen,
    )
    ctx.load_settings()
    return ctx


def write_entry(ctx: Context, client: str, command: list[str], scope: str = "project") -> Path:
    """The awf entry exactly as `awf-mcp config CLIENT --write` writes it, starting COMMAND."""
    clientconfig.write(
        client,
        command=command,
        read_only_tools=[],
        trust=None,
        scope=scope,
        cwd=ctx.cwd,
        home=ctx.home,
        env=ctx.env,
    )
    return clientconfig.target_files(client, scope, cwd=ctx.cwd, home=ctx.home, env=ctx.env)["servers"]


def first_scope(ctx: Context, client: str) -> str:
    """The first scope CLIENT has a file for (some clients have no project file)."""
    for scope in clientconfig.SCOPES:
        try:
            clientconfig.target_files(client, scope, cwd=ctx.cwd, home=ctx.home, env=ctx.env)
        except UserError:
            continue
        return scope
    raise AssertionError(f"{client} has no file in any scope")


def of(findings: list[Finding], status: str | None = None, **data: Any) -> list[Finding]:
    return [
        f
        for f in findings
        if (status is None or f.status == status) and all(f.data.get(k) == v for k, v in data.items())
    ]


# --------------------------------------------------------------------------- clients


@pytest.mark.parametrize("client", WRITABLE_CLIENTS)
async def test_every_clients_entry_with_a_missing_command_is_an_error_with_the_fix(
    tmp_path: Path, client: str
) -> None:
    ctx = context(tmp_path)
    scope = first_scope(ctx, client)
    path = write_entry(ctx, client, [str(tmp_path / "gone" / "awf-mcp"), "serve", "--root", "/r"], scope)
    findings = await doctor.check_clients(ctx)
    [error] = of(findings, "error", client=client)
    assert error.data["path"] == str(path)
    assert "does not exist" in error.detail and str(tmp_path / "gone" / "awf-mcp") in error.detail
    scope_option = " --scope user" if scope == "user" else ""
    assert error.fix.endswith(f"awf-mcp config {client} --write{scope_option} --root /r")
    others = [f for f in findings if f.data.get("client") not in (client, None)]
    assert all(f.status == "info" and "no awf entry" in f.detail for f in others)


async def test_an_entry_starting_the_real_server_answers_tools_list(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    client = WRITABLE_CLIENTS[0]
    write_entry(ctx, client, server_command("serve"), scope="user")
    findings = await doctor.check_clients(ctx)
    [ok] = of(findings, "ok", client=client)
    assert ok.data["scopes"] == ["user"]
    assert {"Read", "Bash", "Grep"} <= set(ok.data["tools"])
    assert "answers tools/list" in ok.detail
    assert not of(findings, "error") and not of(findings, "warning")


async def test_an_entry_that_exits_at_once_reports_how_it_ended(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    client = WRITABLE_CLIENTS[0]
    crash = [sys.executable, "-c", "import sys; print('no such option', file=sys.stderr); sys.exit(3)"]
    write_entry(ctx, client, [*crash, "serve"], scope="user")
    [error] = of(await doctor.check_clients(ctx), "error", client=client)
    assert "exited with code 3" in error.detail and "no such option" in error.detail
    assert error.fix.startswith("run `")


async def test_an_entry_that_never_answers_is_cut_off_by_the_timeout(tmp_path: Path) -> None:
    ctx = context(tmp_path, timeout=1.0)
    client = WRITABLE_CLIENTS[0]
    # The entry is named awf, so it is checked although its command is not awf-mcp.
    write_entry(ctx, client, [sys.executable, str(UPSTREAM), "silent"], scope="user")
    [error] = of(await doctor.check_clients(ctx), "error", client=client)
    assert "within 1 s" in error.detail


@pytest.mark.parametrize("kind", ["not awf-mcp", "inside the project", "python -m from the project"])
async def test_a_project_entry_runs_only_an_awf_mcp_installed_outside_the_project(
    tmp_path: Path, kind: str
) -> None:
    ctx = context(tmp_path)
    marker = tmp_path / "ran"
    touch = f"open({str(marker)!r}, 'w').close()"
    if kind == "not awf-mcp":
        command = [sys.executable, "-c", touch, "serve"]
    elif kind == "inside the project":
        script = ctx.cwd / "bin" / "awf-mcp"
        script.parent.mkdir()
        script.write_text(f"#!{sys.executable}\n{touch}\n")
        script.chmod(0o755)
        command = ["bin/awf-mcp", "serve"]
    else:
        (ctx.cwd / "awf_mcp").mkdir()
        (ctx.cwd / "awf_mcp" / "__main__.py").write_text(touch)
        command = [sys.executable, "-m", "awf_mcp", "serve"]
    client = WRITABLE_CLIENTS[0]
    write_entry(ctx, client, command)
    [warning] = of(await doctor.check_clients(ctx), "warning", client=client)
    assert "not started" in warning.detail and "if you trust this project" in warning.fix
    assert not marker.exists()


async def test_no_configured_client_is_a_warning_and_each_client_says_how(tmp_path: Path) -> None:
    findings = await doctor.check_clients(context(tmp_path))
    assert {f.data["client"] for f in of(findings, "info")} == set(WRITABLE_CLIENTS)
    assert all("awf-mcp config" in f.fix for f in of(findings, "info"))
    [warning] = of(findings, "warning")
    assert "no client is configured" in warning.detail


async def test_disabled_http_and_unreadable_entries_are_explained(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    json_clients = [c for c in WRITABLE_CLIENTS if clientconfig.PROFILES[c].format == "json"]
    assert len(json_clients) >= 2
    first, second = json_clients[:2]
    for client, entry in (
        (first, {"command": "awf-mcp", "args": ["serve"], "disabled": True}),
        (second, {"url": "http://127.0.0.1:8765/mcp"}),
    ):
        path = clientconfig.target_files(client, "project", cwd=ctx.cwd, home=ctx.home, env=ctx.env)[
            "servers"
        ]
        path.parent.mkdir(parents=True, exist_ok=True)
        keys = clientconfig.PROFILES[client].servers_key
        node: dict[str, Any] = {"awf": entry}
        for key in reversed(keys):
            node = {key: node}
        path.write_text(json.dumps(node))
    user = clientconfig.target_files(first, "user", cwd=ctx.cwd, home=ctx.home, env=ctx.env)["servers"]
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('{"mcpServers": ')
    findings = await doctor.check_clients(ctx)
    assert "disabled" in of(findings, "warning", client=first, path=str(ctx.cwd / _rel(ctx, first)))[0].detail
    assert "not valid JSON" in of(findings, "warning", client=first, path=str(user))[0].detail
    assert "connects to http://127.0.0.1:8765/mcp" in of(findings, "info", client=second)[0].detail
    assert not of(findings, "error")


async def test_an_awf_entry_under_another_name_is_found_by_its_command(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    path = clientconfig.target_files("opencode", "user", cwd=ctx.cwd, home=ctx.home, env=ctx.env)["servers"]
    path.parent.mkdir(parents=True, exist_ok=True)
    gone = str(tmp_path / "gone" / "awf-mcp")
    servers = {
        "tools": {"type": "local", "command": [gone, "serve"], "environment": {"TOKEN": "s3cret"}},
        "git": {"type": "local", "command": ["uvx", "mcp-server-git"]},
    }
    path.write_text("// mine\n" + json.dumps({"mcp": servers}))
    findings = await doctor.check_clients(ctx)
    [error] = of(findings, "error", client="opencode")
    assert error.data["server"] == "tools" and gone in error.detail and error.data["env"] == ["TOKEN"]
    assert "s3cret" not in json.dumps(error.as_data())
    assert not of(findings, server="git")


async def test_a_client_file_that_is_not_utf8_is_a_warning(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    path = clientconfig.target_files("cursor", "project", cwd=ctx.cwd, home=ctx.home, env=ctx.env)["servers"]
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"mcpServers": {"awf": {"command": "\xff"}}}')
    [warning] = of(await doctor.check_clients(ctx), "warning", client="cursor")
    assert "not UTF-8" in warning.detail and warning.data["path"] == str(path)


def _rel(ctx: Context, client: str) -> Path:
    path = clientconfig.target_files(client, "project", cwd=ctx.cwd, home=ctx.home, env=ctx.env)["servers"]
    return path.relative_to(ctx.cwd)


# --------------------------------------------------------------------------- plugins, servers, tools


async def test_a_broken_plugin_is_an_error_with_its_reason_and_the_others_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugins = tmp_path / "plugins"
    monkeypatch.setenv("AWF_MCP_PLUGIN_PATH", str(plugins))
    source = "from awf_mcp import hookimpl\n\n@hookimpl\ndef awf_mcp_register_tools(plugin):\n    1 / 0\n"
    make_distribution(
        plugins, dist="awf-plugin-doctorbroken", plugin="doctorbroken", module="m_dr", source=source
    )
    provider_plugin(plugins, "doctorgood", "doctorgood_one")
    ctx = context(tmp_path, options=ServeOptions(strict=True))
    findings = await run_checks(ctx, [doctor.check_plugins, doctor.check_tools])
    [broken] = of(findings.findings, "error", name="doctorbroken")
    assert "ZeroDivisionError" in broken.detail and "pip uninstall awf-plugin-doctorbroken" in broken.fix
    assert of(findings.findings, "ok", name="doctorgood")[0].data["tools"] == ["doctorgood_one"]
    assert of(findings.findings, "ok", name="builtin")
    assert "doctorgood_one" in of(findings.findings, "ok")[-1].data["tools"]  # the tools check still ran


async def test_a_name_clash_says_serve_would_not_start(tmp_path: Path) -> None:
    config = write_approved(tmp_path / "awf-mcp.toml", '[rename]\n"Glob" = "Read"\n')
    ctx = context(tmp_path, options=ServeOptions(config=str(config)))
    [finding] = await doctor.check_tools(ctx)
    await ctx.close()
    assert finding.status == "error" and "would not start" in finding.detail and "Read" in finding.detail


async def test_upstream_servers_are_started_and_reported(tmp_path: Path) -> None:
    python, script = json.dumps(sys.executable), json.dumps(str(UPSTREAM))
    config = write_approved(
        tmp_path / "awf-mcp.toml",
        f"[servers.good]\ncommand = {python}\nargs = [{script}, 'good']\n"
        f"[servers.dead]\ncommand = {python}\nargs = [{script}, 'exit']\n"
        "[servers.off]\ncommand = 'nothing'\nenabled = false\n",
    )
    ctx = context(tmp_path, options=ServeOptions(config=str(config)))
    report = await run_checks(ctx, [doctor.check_servers])
    by_name = {f.data["name"]: f for f in report.findings}
    assert by_name["good"].status == "ok" and "good_audio" in by_name["good"].data["tools"]
    assert by_name["dead"].status == "error" and "exited with code 3" in by_name["dead"].detail
    assert "[servers.dead]" in by_name["dead"].fix
    assert by_name["off"].status == "info"


async def test_a_configuration_that_does_not_load_is_an_error_and_skips_what_needs_it(tmp_path: Path) -> None:
    ctx = context(tmp_path, options=ServeOptions(roots=(str(tmp_path / "missing"),)))
    report = await run_checks(
        ctx, [doctor.check_configuration, doctor.check_plugins, doctor.check_roots, doctor.check_tools]
    )
    [finding] = report.findings
    assert finding.check == "configuration" and finding.status == "error"
    assert str(tmp_path / "missing") in finding.detail and report.broken


# --------------------------------------------------------------------------- roots, search, plugin dirs


def test_roots_must_exist_be_directories_and_be_readable(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    findings = root_findings([str(tmp_path), str(tmp_path / "missing"), str(a_file)])
    assert [f.status for f in findings] == ["ok", "error", "error"]
    assert "does not exist" in findings[1].detail and "not a directory" in findings[2].detail
    assert all("--root" in f.fix for f in findings[1:])


def test_a_root_that_cannot_be_listed_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tests may run as root, whom permission bits do not stop: the refusal is simulated.
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: path != tmp_path and real_access(path, mode))
    [finding] = root_findings([str(tmp_path)])
    assert finding.status == "error" and "cannot be listed" in finding.detail


def test_search_reports_rg_its_version_or_the_python_engine(tmp_path: Path) -> None:
    binary = ripgrep_binary()
    assert binary is not None, "the ripgrep wheel is a dependency"
    [ok] = search_findings(binary, forced_python=False)
    assert ok.status == "ok" and ok.data["version"].startswith("ripgrep ") and ok.data["rg"] == binary
    [missing] = search_findings(None, forced_python=False)
    assert missing.status == "warning" and "ripgrep" in missing.fix
    [forced] = search_findings(None, forced_python=True)
    assert forced.status == "info" and "AWF_MCP_SEARCH_ENGINE=python" in forced.detail
    broken = tmp_path / "rg"
    broken.write_text("#!/bin/sh\necho 'cannot run' >&2\nexit 2\n")
    broken.chmod(0o755)
    [error] = search_findings(str(broken), forced_python=False)
    assert error.status == "error" and "cannot run" in error.detail


def test_plugin_directories_for_the_single_executable(tmp_path: Path) -> None:
    listed_missing = tmp_path / "listed"
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    with_plugin = tmp_path / "with-plugin"
    provider_plugin(with_plugin, "dirplugin", "dirplugin_one")
    default = tmp_path / "default"
    findings = plugin_directory_findings(
        [with_plugin, listed_missing, a_file, default], [with_plugin, listed_missing, a_file], frozen=True
    )
    assert [f.status for f in findings] == ["ok", "warning", "error", "info"]
    assert findings[0].data["plugins"] == ["dirplugin"] and findings[0].data["install_target"]
    assert "AWF_MCP_PLUGIN_PATH" in findings[1].fix
    assert "plugins install" in findings[3].fix


def test_plugin_directories_outside_the_single_executable_point_at_pip(tmp_path: Path) -> None:
    findings = plugin_directory_findings([tmp_path / "default"], [], frozen=False)
    [finding] = findings
    assert finding.status == "info" and sys.prefix in finding.detail


# --------------------------------------------------------------------------- the report


async def test_a_failing_check_is_an_error_finding_not_a_crash(tmp_path: Path) -> None:
    async def check_exploding(ctx: Context) -> list[Finding]:
        raise RuntimeError("bug")

    report = await run_checks(context(tmp_path), [doctor.check_roots, check_exploding])
    assert [f.status for f in report.findings] == ["ok", "error"]
    assert report.findings[1].check == "exploding" and "RuntimeError: bug" in report.findings[1].detail


def test_the_report_as_data_has_stable_keys() -> None:
    report = Report([Finding("roots", "ok", "/r", "fine"), Finding("search", "warning", "rg", "slow", "fix")])
    data = report.as_data()
    assert set(data) == {"version", "ok", "counts", "findings"}
    assert data["ok"] is True and data["counts"] == {"ok": 1, "info": 0, "warning": 1, "error": 0}
    assert set(data["findings"][0]) == {"check", "status", "subject", "detail", "fix", "data"}
    assert Report([Finding("roots", "error", "/r", "gone")]).as_data()["ok"] is False


def test_the_printed_report_is_one_line_per_finding_with_its_fix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    fix = "awf-mcp config x --write --scope user --root /a/very/long/path/that/does/not/fit/in/eighty/columns"
    report = Report(
        [
            Finding("roots", "ok", "/r", "a readable directory"),
            Finding("clients", "error", "/p/[red]x[/].json", "its command [bold]gone", fix),
        ]
    )
    doctor.print_report(report)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ok", "roots:", "/r:", "a", "readable", "directory"]
    assert lines[1] == "error clients: /p/[red]x[/].json: its command [bold]gone"
    assert lines[2] == f"      fix: {fix}"  # whole on its own line at 80 columns: copyable
    assert lines[-1] == "1 ok, 0 info, 0 warnings, 1 error: something is broken"
