"""Doctor's ``servers`` and ``tools`` checks: every upstream server started as ``serve`` starts it,
and the tools merged into one registry.

See :mod:`awf_mcp.cli.doctor` for the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from awf_mcp.cli.doctor.context import Context
from awf_mcp.cli.doctor.report import ERROR, INFO, OK, WARNING, Finding, counted

if TYPE_CHECKING:
    from awf_mcp.core.servers import ServerSpec


async def check_servers(ctx: Context) -> list[Finding]:
    """Every upstream server: running with its tools (and prompts, resources, templates), failed with
    the reason, or disabled."""
    from awf_mcp.cli.servers import offered, offers_of

    loaded = await ctx.loaded()
    if loaded is None or ctx.settings is None:
        return []
    specs = {spec.name: spec for spec in ctx.settings.servers}
    findings = []
    from awf_mcp.cli.servers import sign_in_state  # an OAuth server's sign-in, as servers list shows it

    for record in loaded.servers:
        spec = specs[record.name]
        offers = offers_of(record)
        data = {**spec.public(), "status": record.status, "tools": record.tool_names, "offers": offers}
        status, fix = OK, ""
        state, _, reason = record.status.partition(": ")
        signed = sign_in_state(spec, "running" if record.ok else state, reason)
        data.update(signed)
        if record.ok:
            detail = f"starts and lists {counted(len(record.tool_names), 'tool')}"
            if offered(offers):
                detail += f", and {offered(offers)}"
        elif record.status == "disabled":
            status, detail = INFO, "disabled (enabled = false)"
        elif signed["sign_in"] == "needs sign-in":
            status, detail, fix = ERROR, "not served: it needs sign-in", f"sign in once: {signed['fix']}"
        else:
            status, detail = ERROR, f"not served: {record.status.removeprefix('failed: ')}"
            fix = (
                f"fix [servers.{record.name}] in the config file, or set enabled = false (docs/upstreams.md)"
            )
            if signed["sign_in"] == "refused":
                fix = f"do what the sentence says, then sign in again: {signed['fix']}"
        if record.ok and signed["sign_in"] == "signed in":
            detail += f"; signed in (token expires {signed['expires_at'] or 'never'}; refreshed as needed)"
        subject = f"server '{record.name}' ({spec.transport})"
        findings.append(Finding("servers", status, subject, detail, fix, data))
        findings.extend(held_findings(spec))
    return findings


def held_findings(spec: ServerSpec) -> list[Finding]:
    """One warning per item of ``spec`` held back (:mod:`awf_mcp.core.pins`): what changed, how to approve."""
    from awf_mcp.core import pins

    command = pins.approve_command(spec.name)
    return [
        Finding(
            "servers",
            WARNING,
            f"server '{spec.name}': {hold.kind} '{hold.name}'",
            f"held, not served: {hold.summary}",
            f"review and approve it: {command}",
            {
                "server": spec.name,
                "item": hold.kind,
                "name": hold.name,
                "changes": dict(hold.changes),
                "approve": command,
            },
        )
        for hold in pins.held(spec)
    ]


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
            "tools", OK, subject, f"{counted(len(names), 'tool')} merge without a clash", "", {"tools": names}
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
