"""Doctor's ``search`` check: the ``rg`` Grep and Glob run, or the pure-Python engine.

See :mod:`awf_mcp.cli.doctor` for the contract.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from awf_mcp.cli.doctor.context import Context
from awf_mcp.cli.doctor.report import ERROR, INFO, OK, WARNING, Finding

if TYPE_CHECKING:
    pass


VERSION_TIMEOUT_SECONDS = 10.0


def _command_version(argv: Sequence[str]) -> tuple[str | None, str]:
    """The first line ``ARGV`` prints (its version), or None and why it did not run."""
    from awf_mcp.install.buildinfo import command_version

    return command_version(argv, VERSION_TIMEOUT_SECONDS)


def search_findings(binary: str | None, forced_python: bool) -> list[Finding]:
    """What Grep and Glob run on: ``binary`` (the ``rg`` found, or None)."""
    from awf_mcp.builtins.ripgrep import ENGINE_VARIABLE

    subject = "Grep and Glob search engine"
    if binary is None:
        data = {"engine": "python", "rg": None}
        if forced_python:
            return [
                Finding(
                    "search", INFO, subject, f"the pure-Python engine ({ENGINE_VARIABLE}=python)", "", data
                )
            ]
        detail = "no rg found: the pure-Python engine runs (same results, slower)"
        fix = "pip install 'ripgrep<15' beside awf-mcp, or install rg on PATH"
        return [Finding("search", WARNING, subject, detail, fix, data)]
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None and Path(binary).is_relative_to(bundle):
        origin = "bundled with the single executable"
    elif Path(binary).is_relative_to(sys.prefix):
        origin = "from the ripgrep wheel beside awf-mcp"
    else:
        origin = "found on PATH"
    version, reason = _command_version([binary, "--version"])
    data = {"engine": "ripgrep", "rg": binary, "origin": origin, "version": version}
    if version is None:
        detail = f"{binary} ({origin}) does not run: {reason}"
        fix = f"reinstall ripgrep, or set {ENGINE_VARIABLE}=python in the entry's env"
        return [Finding("search", ERROR, subject, detail, fix, data)]
    return [Finding("search", OK, subject, f"{version}: {binary} ({origin})", "", data)]


async def check_search(ctx: Context) -> list[Finding]:
    """The ``rg`` Grep and Glob run, or the pure-Python engine."""
    from awf_mcp.builtins.ripgrep import ENGINE_VARIABLE, ripgrep_binary

    forced = ctx.env.get(ENGINE_VARIABLE, "").strip().lower() == "python"
    return search_findings(ripgrep_binary(), forced)
