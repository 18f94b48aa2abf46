"""The scripts plugin: discovery, naming, descriptions, and running real scripts."""

from __future__ import annotations

import stat
import time
from importlib import metadata
from pathlib import Path

import pytest
from awf_plugin_scripts import ApprovalStore, ScriptTools, awf_mcp_register_tools, sanitize
from awf_plugin_scripts.__main__ import main as scripts_main

from awf_mcp import PluginContext, ToolError


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def private_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Approvals go to a temporary state directory, never the user's."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


def write_script(directory: Path, name: str, body: str, *, executable: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(body, encoding="utf-8")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def tools_dir(tmp_path: Path) -> Path:
    directory = tmp_path / ".awf-tools"
    write_script(
        directory,
        "Say-Hello.sh",
        "#!/bin/sh\n"
        "# description: Greet everyone named in the arguments.\n"
        'for n in "$@"; do echo "hello $n"; done\n',
    )
    write_script(directory, "fail.sh", "#!/bin/sh\necho oops >&2\nexit 7\n")
    write_script(directory, "notes.txt", "not a script\n", executable=False)
    write_script(directory, ".hidden.sh", "#!/bin/sh\necho hidden\n")
    return directory


def test_entry_point_names_the_plugin_scripts() -> None:
    points = {ep.name: ep.value for ep in metadata.entry_points(group="awf_mcp")}
    assert points.get("scripts") == "awf_plugin_scripts"


def test_sanitize_keeps_only_lowercase_letters_digits_and_underscores() -> None:
    assert sanitize("Say-Hello.v2") == "say_hello_v2"
    assert sanitize("--") == ""


def test_default_directory_is_dot_awf_tools_under_the_first_root(tmp_path: Path, tools_dir: Path) -> None:
    context = PluginContext(name="scripts", roots=(str(tmp_path),))
    awf_mcp_register_tools(plugin=context)
    [provider] = context.registered
    definitions = provider.list_tools()
    assert [d.name for d in definitions] == ["scripts_fail", "scripts_say_hello"]
    assert definitions[1].description == "Greet everyone named in the arguments."
    assert definitions[0].description.startswith("Run the script fail.sh")
    assert definitions[0].input_schema["properties"]["args"]["items"] == {"type": "string"}


def test_missing_directory_gives_no_tools(tmp_path: Path) -> None:
    assert ScriptTools(tmp_path / "absent", cwd=tmp_path).list_tools() == []


def test_clashing_names_keep_the_first(tmp_path: Path) -> None:
    write_script(tmp_path / "d", "a-b.sh", "#!/bin/sh\n")
    write_script(tmp_path / "d", "a_b.py", "#!/bin/sh\n")
    scripts = ScriptTools(tmp_path / "d", cwd=tmp_path).scripts
    assert list(scripts) == ["scripts_a_b"]
    assert scripts["scripts_a_b"].path.name == "a-b.sh"


@pytest.mark.anyio
async def test_arguments_reach_the_script_unexpanded(tmp_path: Path, tools_dir: Path) -> None:
    provider = ScriptTools(tools_dir, cwd=tmp_path)
    result = await provider.call_tool("scripts_say_hello", {"args": ["ann", "$HOME; rm -rf /"]})
    assert not result.is_error
    assert result.content[0].text == "hello ann\nhello $HOME; rm -rf /\nexit code 0"
    assert result.structured_content["exit_code"] == 0


@pytest.mark.anyio
async def test_non_zero_exit_is_an_error_with_stderr(tmp_path: Path, tools_dir: Path) -> None:
    result = await ScriptTools(tools_dir, cwd=tmp_path).call_tool("scripts_fail", {})
    assert result.is_error
    assert result.content[0].text == "[stderr]\noops\nexit code 7"
    assert result.structured_content["exit_code"] == 7


@pytest.mark.anyio
async def test_output_is_capped(tmp_path: Path) -> None:
    write_script(tmp_path / "d", "big.sh", "#!/bin/sh\nhead -c 100000 /dev/zero | tr '\\0' x\n")
    provider = ScriptTools(tmp_path / "d", cwd=tmp_path, max_output_bytes=1000)
    result = await provider.call_tool("scripts_big", {})
    assert result.structured_content["stdout"] == "x" * 1000
    assert result.structured_content["truncated"] is True
    assert "[output truncated]" in result.content[0].text


@pytest.mark.anyio
async def test_timeout_kills_the_script(tmp_path: Path) -> None:
    write_script(tmp_path / "d", "slow.sh", "#!/bin/sh\nsleep 30\n")
    started = time.monotonic()
    provider = ScriptTools(tmp_path / "d", cwd=tmp_path, timeout_seconds=0.5)
    result = await provider.call_tool("scripts_slow", {})
    assert time.monotonic() - started < 10
    assert result.is_error and result.structured_content["timed_out"] is True
    assert "timed out after 0.5 s" in result.content[0].text


# ---------------------------------------------------------------- consent: only approved content runs


@pytest.mark.anyio
async def test_a_script_changed_after_start_up_is_refused(tmp_path: Path, tools_dir: Path) -> None:
    provider = ScriptTools(tools_dir, cwd=tmp_path)
    (tools_dir / "fail.sh").write_text("#!/bin/sh\necho pwned\n", encoding="utf-8")
    with pytest.raises(ToolError, match=r"fail\.sh changed since it was approved.*restart the server"):
        await provider.call_tool("scripts_fail", {})
    assert not (await provider.call_tool("scripts_say_hello", {"args": []})).is_error


@pytest.mark.anyio
async def test_with_a_store_only_what_the_user_approved_runs_across_restarts(
    tmp_path: Path, tools_dir: Path, private_state: Path
) -> None:
    store = ApprovalStore(private_state / "approved.json")
    approve = ["approve", str(tools_dir), "--approvals", str(store.path)]
    first = ScriptTools(tools_dir, cwd=tmp_path, approvals=store, roots=(tmp_path,))
    with pytest.raises(ToolError, match=r"was never approved.*python -m awf_plugin_scripts approve"):
        await first.call_tool("scripts_say_hello", {})
    assert scripts_main(approve) == 0
    assert not (await first.call_tool("scripts_say_hello", {"args": ["a"]})).is_error
    script = tools_dir / "Say-Hello.sh"
    script.write_text("#!/bin/sh\necho pwned\n", encoding="utf-8")
    restarted = ScriptTools(tools_dir, cwd=tmp_path, approvals=store, roots=(tmp_path,))
    with pytest.raises(
        ToolError, match=r"changed since it was approved.*python -m awf_plugin_scripts approve"
    ):
        await restarted.call_tool("scripts_say_hello", {})
    assert scripts_main(approve) == 0
    result = await restarted.call_tool("scripts_say_hello", {})
    assert result.content[0].text == "pwned\nexit code 0"
    assert oct(store.path.stat().st_mode & 0o777) == "0o600"


@pytest.mark.anyio
async def test_an_approvals_file_inside_a_root_runs_nothing(tmp_path: Path, tools_dir: Path) -> None:
    store = ApprovalStore(tmp_path / "approved.json")
    provider = ScriptTools(tools_dir, cwd=tmp_path, approvals=store, roots=(tmp_path,))
    with pytest.raises(ToolError, match=r"approvals file .* is inside root"):
        await provider.call_tool("scripts_say_hello", {})
    assert not store.path.exists()
