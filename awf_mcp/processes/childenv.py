"""The environment for processes awf-mcp starts (``Bash`` commands, pip, ...).

The frozen single executable is started by PyInstaller's bootloader, which points
``LD_LIBRARY_PATH`` (``DYLD_LIBRARY_PATH`` on macOS, ``LIBPATH`` on AIX) at the
bundle's own shared libraries and sets ``_PYI_*`` / ``_MEIPASS2`` for itself. A child
process must not inherit those: the user's ``python3``, ``git`` or ``curl`` would load
the bundle's OpenSSL or libz instead of the system's, and a child awf-mcp would think
it is the bootloader's. :func:`child_environment` returns the user's environment as it
was before the bootloader changed it (PyInstaller keeps the original in ``VAR_ORIG``).
Outside a frozen binary it is ``os.environ`` unchanged.

The portable binary is PyInstaller's one-directory build wrapped by staticx, whose static
bootloader unpacks it with the loader and libc it was built against and runs it on them. It
adds ``STATICX_BUNDLE_DIR`` and ``STATICX_PROG_PATH`` (:data:`WRAPPER_VARIABLES`), and
changes no library path: the wrapped binary finds its libraries through its own patched
ELF headers, which no child inherits. A child gets neither variable, so it runs on the
machine's own loader and libraries, and an awf-mcp it starts is not taken for a wrapped one.
:func:`launched_executable` is the file the user started (``$STATICX_PROG_PATH``), not the
unpacked copy ``sys.executable`` names.

The one exception is the binary starting itself again (the Bash keeper):
:func:`reentry_environment` keeps the bootloader's variables, so the new process runs in
place from the bundle this one unpacked, instead of a second bootloader unpacking all of
it again (about 0.6 s per Bash call, measured) and standing between the server and the
keeper. That process then calls :func:`child_environment` and gets back exactly the
environment it was given for its own children.

Standard library only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

LIBRARY_PATH_VARIABLES = ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "LIBPATH")
WRAPPER_VARIABLES = ("STATICX_BUNDLE_DIR", "STATICX_PROG_PATH")
"""What staticx's bootloader tells the portable binary: where it unpacked, and what was started."""


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
    for var in [v for v in env if v.startswith("_PYI_") or v == "_MEIPASS2" or v in WRAPPER_VARIABLES]:
        del env[var]
    return env


def launched_executable(environ: Mapping[str, str] | None = None, *, frozen: bool | None = None) -> str:
    """The executable file the user started: for the frozen binary, the path a client should run.

    The portable binary runs from a copy staticx unpacked into a temporary directory, removed
    at exit; ``$STATICX_PROG_PATH`` names the file itself. Otherwise ``sys.executable``.
    """
    own = os.environ if environ is None else environ
    if (getattr(sys, "frozen", False) if frozen is None else frozen) and own.get("STATICX_PROG_PATH"):
        return own["STATICX_PROG_PATH"]
    return sys.executable


def reentry_environment(
    env: Mapping[str, str], environ: Mapping[str, str] | None = None, *, frozen: bool | None = None
) -> dict[str, str]:
    """``env`` for this frozen executable started again, in place; see the module docstring.

    ``environ`` is this process's environment (default ``os.environ``), which holds the
    bootloader's variables. In the new process, :func:`child_environment` returns ``env``.
    Outside a frozen binary: a copy of ``env``.
    """
    result = dict(env)
    if not (getattr(sys, "frozen", False) if frozen is None else frozen):
        return result
    own = os.environ if environ is None else environ
    for var in own:
        if var.startswith("_PYI_") or var == "_MEIPASS2":
            result[var] = own[var]
    for var in LIBRARY_PATH_VARIABLES:
        result.pop(var, None)
        result.pop(f"{var}_ORIG", None)
        if var in env:
            result[f"{var}_ORIG"] = env[var]
        if var in own:
            result[var] = own[var]
    return result
