"""Doctor's ``configuration`` check: the settings load as ``serve`` loads them.

See :mod:`awf_mcp.cli.doctor` for the contract. A running ``serve`` reloads its config file live
(:mod:`awf_mcp.core.reload`) with the same checks: when the file does not load, or is not approved
since it changed, the finding says that a running server keeps its old configuration meanwhile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from awf_mcp.cli.doctor.context import Context
from awf_mcp.cli.doctor.report import ERROR, OK, WARNING, Finding

if TYPE_CHECKING:
    pass

KEPT = "A running awf-mcp serve keeps its old configuration until the file loads (and is approved)"
"""What a running server does meanwhile (its live reload refuses the file)."""


async def check_configuration(ctx: Context) -> list[Finding]:
    """The settings load as ``serve`` loads them; a project's config file not approved is said."""
    path = ctx.config_file()
    where = str(path) if path else f"defaults (no {ctx.cwd / 'awf-mcp.toml'})"
    if ctx.settings_error:
        return [
            Finding(
                "configuration",
                ERROR,
                where,
                f"the settings do not load: {ctx.settings_error}",
                "fix the file or option it names; plugins, servers, tools and roots were not checked. "
                f"{KEPT}",
                {"path": str(path) if path else None},
            )
        ]
    ignored = ctx.settings.ignored_config if ctx.settings else None
    if ignored is not None:
        detail = f"not used: {ignored.verdict.reason}; it would: {'; '.join(ignored.would) or 'nothing'}"
        if ignored.verdict.state == "changed":
            detail = f"{detail}. {KEPT}"
        data = {"path": str(ignored.path), "approval": ignored.verdict.state, "would": list(ignored.would)}
        return [
            Finding("configuration", WARNING, where, detail, f"to review and approve it: {ignored.fix}", data)
        ]
    return [
        Finding("configuration", OK, where, "the settings load", data={"path": str(path) if path else None})
    ]
