"""Doctor's ``build`` check: what this awf-mcp is.

See :mod:`awf_mcp.cli.doctor` for the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from awf_mcp import __version__
from awf_mcp.cli.doctor.context import Context
from awf_mcp.cli.doctor.report import INFO, Finding

if TYPE_CHECKING:
    pass


async def check_build(ctx: Context) -> list[Finding]:
    """What this awf-mcp is: version, commit, Python, C library, rg, the platform it was built for."""
    from awf_mcp.builtins.ripgrep import ripgrep_binary
    from awf_mcp.install.buildinfo import build_identity

    identity = build_identity(ripgrep_binary())
    detail = (
        f"awf-mcp {__version__} (commit {identity['commit']}), {identity['python']} on "
        f"{identity['libc']}, {identity['rg']}, built for {identity['built for']}"
    )
    return [Finding("build", INFO, "this awf-mcp", detail, "", {"version": __version__, **identity})]
