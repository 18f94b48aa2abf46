"""Write small plugin distributions into a directory, as ``pip install --target`` lays them out.

Each one is a real distribution to :mod:`importlib.metadata`: a module plus a
``<name>-<version>.dist-info`` with ``METADATA`` and ``entry_points.txt``. Point
``AWF_MCP_PLUGIN_PATH`` (or ``PYTHONPATH``) at the directory to install them
for one server process only.
"""

from __future__ import annotations

import textwrap
from pathlib import Path


def make_distribution(
    target: Path, *, dist: str, plugin: str, module: str, source: str, version: str = "1.0.0"
) -> Path:
    """Create distribution ``dist`` declaring plugin ``plugin`` = module ``module`` with ``source``."""
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = target / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[awf_mcp]\n{plugin} = {module}\n", encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    return target


PROVIDER_PLUGIN = """
from awf_mcp import ToolDefinition, ToolResult, hookimpl

NAMES = {names!r}

class Provider:
    def list_tools(self):
        schema = {{"type": "object", "properties": {{}}}}
        return [ToolDefinition(n, "test tool " + n, schema, "plugin:{plugin}") for n in NAMES]

    def call_tool(self, name, arguments):
        return ToolResult.text("{plugin} says " + name)

    def close(self):
        pass

@hookimpl
def awf_mcp_register_tools(plugin):
    plugin.register(Provider())
"""


def provider_plugin(target: Path, plugin: str, *names: str, dist: str | None = None) -> Path:
    """A distribution whose plugin serves tools ``names`` answering ``<plugin> says <name>``."""
    return make_distribution(
        target,
        dist=dist or f"awf-plugin-{plugin}",
        plugin=plugin,
        module=f"awf_test_{plugin}_{abs(hash(dist or plugin)) % 10_000}",
        source=PROVIDER_PLUGIN.format(names=list(names), plugin=plugin),
    )
