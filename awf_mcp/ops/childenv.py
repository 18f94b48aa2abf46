"""The environment for processes awf-mcp starts (``Bash`` commands, pip, ...).

The frozen single executable is started by PyInstaller's bootloader, which points
``LD_LIBRARY_PATH`` (``DYLD_LIBRARY_PATH`` on macOS, ``LIBPATH`` on AIX) at the
bundle's own shared libraries and sets ``_PYI_*`` / ``_MEIPASS2`` for itself. A child
process must not inherit those: the user's ``python3``, ``git`` or ``curl`` would load
the bundle's OpenSSL or libz instead of the system's, and a child awf-mcp would think
it is the bootloader's. :func:`child_environment` returns the user's environment as it
was before the bootloader changed it (PyInstaller keeps the original in ``VAR_ORIG``).
Outside a frozen binary it is ``os.environ`` unchanged.

Standard library only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

LIBRARY_PATH_VARIABLES = ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "LIBPATH")


def child_environment(
    environ: Mapping[str, str] | None = None, *, frozen: bool | None = None
) -> dict[str, str]:
    """A copy of ``environ`` (default ``os.environ``) fit for a child process; see the module doc."""
    env = dict(os.environ if environ is None else environ)
    if not (getattr(sys, "frozen", False) if frozen is None else frozen):
        return env
    for var in LIBRARY_PATH_VARIABLES:
        original = env.pop(f"{var}_ORIG", None)
        if original is not None:
            env[var] = original
        else:
            env.pop(var, None)
    for var in [v for v in env if v.startswith("_PYI_") or v == "_MEIPASS2"]:
        del env[var]
    return env
