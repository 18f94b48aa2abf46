"""Doctor's ``plugins`` and ``plugin-directories`` checks: every plugin, and where plugins come from.

See :mod:`awf_mcp.cli.doctor` for the contract.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awf_mcp.cli.doctor.context import Context
from awf_mcp.cli.doctor.report import ERROR, INFO, OK, WARNING, Finding, counted

if TYPE_CHECKING:
    pass


async def check_plugins(ctx: Context) -> list[Finding]:
    """Every plugin: loaded with its tools, failed with the reason, or disabled."""
    loaded = await ctx.loaded()
    if loaded is None:
        return []
    if loaded.plugin_error:
        return [Finding("plugins", ERROR, "plugins", loaded.plugin_error, "do what the sentence says")]
    findings = []
    for record in loaded.plugins:
        data = {
            "name": record.name,
            "distribution": record.distribution,
            "version": record.version,
            "location": record.location,
            "status": record.status,
            "tools": record.tool_names,
        }
        status, fix = OK, ""
        if record.ok:
            detail = f"loaded, {counted(len(record.tool_names), 'tool')}"
        elif record.status == "disabled" and record.name == "builtin":
            status, detail = INFO, "the built-in tools are off (--no-builtins, or intercept_builtins: false)"
        elif record.status == "disabled":
            status, detail = (
                INFO,
                "not loaded: AWF_MCP_PLUGINS, AWF_MCP_NO_PLUGINS or plugin_tools leaves it out",
            )
        else:
            status = ERROR
            detail = f"failed to load, its tools are not served: {record.status.removeprefix('failed: ')}"
            remove = f"pip uninstall {record.distribution}" if record.distribution else "uninstall it"
            fix = f"fix or reinstall it, or remove it ({remove}, or awf-mcp plugins uninstall {record.name})"
        findings.append(Finding("plugins", status, record.describe(), detail, fix, data))
    return findings


def _plugins_in(directory: Path) -> list[str]:
    from importlib import metadata

    names = {
        ep.name
        for distribution in metadata.distributions(path=[str(directory)])
        for ep in distribution.entry_points
        if ep.group == "awf_mcp"
    }
    return sorted(names)


def _plugin_directory(directory: Path, listed: bool, install_target: bool, frozen: bool) -> Finding | None:
    from awf_mcp.install.plugindirs import ENV_PLUGIN_PATH

    role = f"from {ENV_PLUGIN_PATH}" if listed else "the default plugin directory"
    subject = f"{directory} ({role}{', where plugins install writes' if install_target else ''})"
    data: dict[str, Any] = {
        "path": str(directory),
        "from_environment": listed,
        "install_target": install_target,
    }
    status, fix = OK, ""
    if directory.exists() and not directory.is_dir():
        status, detail, fix = (
            ERROR,
            "it is not a directory",
            f"move the file away, or change {ENV_PLUGIN_PATH}",
        )
    elif not directory.exists() and listed:
        status, detail, fix = WARNING, "it does not exist", f"create it, or remove it from {ENV_PLUGIN_PATH}"
    elif not directory.exists() and frozen:
        status, detail = INFO, "no plugins installed (it does not exist yet)"
        fix = "awf-mcp plugins install NAME creates it"
    elif not directory.exists():
        return None
    else:
        data["plugins"] = plugins = _plugins_in(directory)
        detail = counted(len(plugins), "plugin") + (f": {', '.join(plugins)}" if plugins else "")
        if install_target and not os.access(directory, os.W_OK | os.X_OK):
            status, detail = WARNING, f"{detail}; plugins install cannot write to it"
            fix = f"make it writable, or install with --target DIR and add DIR to {ENV_PLUGIN_PATH}"
    return Finding("plugin-directories", status, subject, detail, fix, data)


def plugin_directory_findings(dirs: Sequence[Path], explicit: Sequence[Path], frozen: bool) -> list[Finding]:
    """Each plugin directory (``explicit``: those from ``AWF_MCP_PLUGIN_PATH``); ``dirs[0]`` is
    where ``plugins install`` writes. Outside the single executable, plugins are pip-installed."""
    findings = []
    if not frozen:
        detail = (
            f"awf-mcp runs on {sys.executable}: plugins are pip-installed into its environment "
            f"({sys.prefix}); the plugin directories are searched too"
        )
        data = {"python": sys.executable, "prefix": sys.prefix}
        findings.append(Finding("plugin-directories", INFO, "plugin installation", detail, "", data))
    for index, directory in enumerate(dirs):
        found = _plugin_directory(directory, directory in explicit, index == 0, frozen)
        if found is not None:
            findings.append(found)
    return findings


def installer_python_finding() -> Finding:
    """The Python ``plugins install`` runs pip with (the single executable has none of its own)."""
    from awf_mcp.errors import AwfError
    from awf_mcp.install.piprunner import ENV_PYTHON, find_python

    subject = "Python for plugins install"
    try:
        python = find_python()
    except AwfError as exc:
        fix = f"install Python 3 with pip, or set {ENV_PYTHON}"
        return Finding("plugin-directories", WARNING, subject, str(exc), fix)
    return Finding("plugin-directories", OK, subject, f"{python} runs pip", "", {"python": python})


async def check_plugin_directories(ctx: Context) -> list[Finding]:
    """The plugin directories, and for the single executable the Python that installs into them."""
    import anyio

    from awf_mcp.install.plugindirs import ENV_PLUGIN_PATH, plugin_dirs

    explicit = [Path(p) for p in ctx.env.get(ENV_PLUGIN_PATH, "").split(os.pathsep) if p]
    findings = plugin_directory_findings(plugin_dirs(), explicit, ctx.frozen)
    if ctx.frozen:
        findings.append(await anyio.to_thread.run_sync(installer_python_finding))
    return findings
