"""The plugin loader (awf_mcp.core.plugins): built-ins, entry points, failures, selection, pluggy hooks."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from awf_mcp.core.config import Settings
from awf_mcp.core.plugins import load
from awf_mcp.core.policy import policies_from
from tests.helpers.distributions import make_distribution, provider_plugin


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "plugins"
    directory.mkdir()
    monkeypatch.setenv("AWF_MCP_PLUGIN_PATH", str(directory))
    monkeypatch.delenv("AWF_MCP_PLUGINS", raising=False)
    monkeypatch.delenv("AWF_MCP_NO_PLUGINS", raising=False)
    return directory


def unique(stem: str) -> str:
    return f"{stem}{uuid.uuid4().hex[:8]}"


def settings(tmp_path: Path) -> Settings:
    return Settings(roots=(str(tmp_path),))


def test_the_builtins_load_as_an_internal_plugin(tmp_path: Path, plugin_dir: Path) -> None:
    loaded = load(settings(tmp_path))
    builtin = next(record for record in loaded.records if record.name == "builtin")
    assert builtin.ok and "Read" in builtin.tool_names and "BashOutput" in builtin.tool_names


def test_an_entry_point_plugin_contributes_its_tools(tmp_path: Path, plugin_dir: Path) -> None:
    name = unique("good")
    provider_plugin(plugin_dir, name, f"{name}_one", f"{name}_two")
    loaded = load(settings(tmp_path))
    record = next(record for record in loaded.records if record.name == name)
    assert record.ok and record.tool_names == [f"{name}_one", f"{name}_two"]
    assert record.distribution == f"awf-plugin-{name}" and record.version == "1.0.0"


def test_a_misspelt_hook_fails_the_plugin_and_names_the_real_hooks(tmp_path: Path, plugin_dir: Path) -> None:
    name = unique("typo")
    source = "from awf_mcp import hookimpl\n\n@hookimpl\ndef awf_mcp_register_tool(plugin):\n    pass\n"
    make_distribution(plugin_dir, dist=f"awf-plugin-{name}", plugin=name, module=f"m_{name}", source=source)
    failed: list[str] = []
    loaded = load(settings(tmp_path), on_failure=lambda record: failed.append(record.name))
    record = next(record for record in loaded.records if record.name == name)
    assert failed == [name] and not record.ok
    assert "unknown hook 'awf_mcp_register_tool'" in record.status
    assert "awf_mcp_register_tools" in record.status


def test_a_failed_plugins_other_hooks_never_run(tmp_path: Path, plugin_dir: Path) -> None:
    name = unique("broken")
    source = (
        "from awf_mcp import hookimpl\n\n"
        "@hookimpl\ndef awf_mcp_register_tools(plugin):\n    raise RuntimeError('no database')\n\n"
        "@hookimpl\ndef awf_mcp_authorize_call(tool, source, arguments):\n"
        "    return 'denied by a broken plugin'\n"
    )
    make_distribution(plugin_dir, dist=f"awf-plugin-{name}", plugin=name, module=f"m_{name}", source=source)
    loaded = load(settings(tmp_path))
    record = next(record for record in loaded.records if record.name == name)
    assert record.status == "failed: RuntimeError: no database"
    policy = policies_from(loaded.manager).call
    assert policy is None or policy("Read", "builtin", {}) is None


def test_a_failing_plugin_is_fatal_with_strict(
    tmp_path: Path, plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awf_mcp.errors import PluginError

    name = unique("strict")
    monkeypatch.setenv("AWF_MCP_PLUGINS", name)  # plugin directories of earlier tests stay on sys.path
    header = "from awf_mcp import hookimpl\n\n"
    source = header + "@hookimpl\ndef awf_mcp_register_tools(plugin):\n    raise KeyError('x')\n"
    make_distribution(plugin_dir, dist=f"awf-plugin-{name}", plugin=name, module=f"m_{name}", source=source)
    with pytest.raises(PluginError, match=f"plugin '{name}'.*failed to load: KeyError"):
        load(Settings(roots=(str(tmp_path),), strict=True))


def test_awf_mcp_plugins_selects_and_the_rest_are_disabled(
    tmp_path: Path, plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wanted, other = unique("wanted"), unique("other")
    provider_plugin(plugin_dir, wanted, f"{wanted}_x")
    provider_plugin(plugin_dir, other, f"{other}_x")
    monkeypatch.setenv("AWF_MCP_PLUGINS", wanted)
    statuses = {record.name: record.status for record in load(settings(tmp_path)).records}
    assert statuses[wanted] == "ok" and statuses[other] == "disabled"
