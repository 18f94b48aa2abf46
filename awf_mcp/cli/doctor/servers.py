"""The ``servers`` check: every upstream server, its held tools, and an OAuth server's sign-in."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from awf_mcp.core.servers import ServerSpec

from awf_mcp.cli.doctor.base import (
    ERROR,
    INFO,
    OK,
    WARNING,
    Context,
    Finding,
    _count,
)


async def check_servers(ctx: Context) -> list[Finding]:
    """Every upstream server: running with its tools, failed with the reason, or disabled; an
    ``auth = "oauth"`` server signed in (its token's expiry), needing sign-in or refused, with the
    ``servers login`` command that fixes it (:func:`awf_mcp.cli.servers.sign_in_state`)."""
    from awf_mcp.cli.servers import sign_in_state

    loaded = await ctx.loaded()
    if loaded is None or ctx.settings is None:
        return []
    specs = {spec.name: spec for spec in ctx.settings.servers}
    findings = []
    for record in loaded.servers:
        spec = specs[record.name]
        data = {**spec.public(), "status": record.status, "tools": record.tool_names}
        status, fix = OK, ""
        state, _, reason = record.status.partition(": ")
        signed = sign_in_state(spec, "running" if record.ok else state, reason)
        data.update(signed)
        if record.ok:
            detail = f"starts and lists {_count(len(record.tool_names), 'tool')}"
            if signed["sign_in"] == "signed in":
                detail += (
                    f"; signed in (token expires {signed['expires_at'] or 'never'}; refreshed as needed)"
                )
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
