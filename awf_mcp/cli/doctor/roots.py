"""Doctor's ``roots`` check: every root exists, is a directory, and can be listed.

See :mod:`awf_mcp.cli.doctor` for the contract.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from awf_mcp.cli.doctor.context import Context
from awf_mcp.cli.doctor.report import ERROR, OK, Finding

if TYPE_CHECKING:
    pass


def root_findings(roots: Sequence[str]) -> list[Finding]:
    """Each root: it exists, is a directory, and can be listed and entered."""
    findings = []
    for root in roots:
        path = Path(root)
        status, detail, fix = ERROR, "", "pass --root DIR, or fix roots in the config"
        if not path.exists():
            detail = "the root does not exist"
        elif not path.is_dir():
            detail = "the root is not a directory"
        elif not os.access(path, os.R_OK | os.X_OK):
            detail = "the root cannot be listed (no read or search permission)"
        else:
            status, detail, fix = OK, "a readable directory", ""
        findings.append(Finding("roots", status, root, detail, fix, {"root": root}))
    return findings


async def check_roots(ctx: Context) -> list[Finding]:
    """The roots the built-in tools are confined to."""
    return root_findings(ctx.settings.roots) if ctx.settings is not None else []
