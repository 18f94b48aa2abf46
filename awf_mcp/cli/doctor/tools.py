"""The ``tools`` check: the plugins' and servers' tools merge into one registry."""

from __future__ import annotations

from awf_mcp.cli.doctor.base import (
    ERROR,
    OK,
    WARNING,
    Context,
    Finding,
    _count,
)


async def check_tools(ctx: Context) -> list[Finding]:
    """The tools merge into one registry, as ``serve`` needs; names some clients refuse."""
    from awf_mcp.core.registry import long_names
    from awf_mcp.ports import MAX_TOOL_NAME_LENGTH, client_tool_name

    loaded = await ctx.loaded()
    subject = "the served tools"
    if loaded is None or loaded.plugin_error:
        return []
    if loaded.registry is None:
        detail = f"awf-mcp serve would not start: {loaded.registry_error}"
        return [Finding("tools", ERROR, subject, detail, "do what the sentence says")]
    definitions = loaded.registry.definitions()
    names = [definition.name for definition in definitions]
    findings = [
        Finding(
            "tools", OK, subject, f"{_count(len(names), 'tool')} merge without a clash", "", {"tools": names}
        )
    ]
    if not names:
        findings = [
            Finding("tools", WARNING, subject, "no tool would be served", "check --only and --exclude")
        ]
    for name in long_names(definitions):
        served = client_tool_name("awf", name)
        detail = f"{served} is over {MAX_TOOL_NAME_LENGTH} characters; some clients refuse it"
        fix = "rename it under [rename] in awf-mcp.toml"
        findings.append(Finding("tools", WARNING, f"tool '{name}'", detail, fix, {"tool": name}))
    return findings


# --------------------------------------------------------------------------- roots
