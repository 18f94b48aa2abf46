"""The single executable's start-up shim: what a client runs instead of the binary's ``serve``.

The portable binary unpacks its bundle before any of its code runs, about 0.3 s at every
start, so its own ``serve`` cannot be the quick client of the shared server that
:mod:`awf_mcp.cli.shim` is for the pip install. ``native/awf-mcp-shim.c``, a static program of
about 700 KB built with the binary and carried in its bundle (:data:`SHIM_NAME`), is that
client for it: ``awf-mcp-shim /path/to/awf-mcp serve ARGS`` reaches (or starts) the binary's
shared server, which the binary's ``daemon status`` and its own ``awf-mcp serve``
find too, and hands it the session in about a millisecond. See ``docs/shared.md``.

* :func:`bundled_shim` is the shim inside the running binary's bundle; ``None`` outside one,
  or in a build made without it.
* :func:`installed_shim` copies it, once per version, to
  ``$XDG_STATE_HOME/awf-mcp/bin/awf-mcp-shim-VERSION`` (atomically, 0755, rewritten only when
  its content differs), where it outlives the bundle; ``None`` when there is none to copy or
  the copy fails (the caller then names the binary itself, which works, only slower). That is
  awf-mcp's own state directory, which no contained process can read or write
  (:func:`~awf_mcp.processes.containment.policy.deny_read`): a shim runs outside any sandbox
  at every session's start, so a Bash command whose root holds the home directory must not be
  able to replace it.
* :func:`shim_command` is the argv prefix a client should run: ``[SHIM, BINARY]``, else
  ``[BINARY]``.

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

SHIM_NAME = "awf-mcp-shim"
"""The shim's file name at the top of the binary's bundle."""


def bundled_shim() -> str | None:
    """The shim the running single executable carries, or ``None``."""
    bundle = getattr(sys, "_MEIPASS", None)
    if not bundle or not getattr(sys, "frozen", False):
        return None
    path = os.path.join(bundle, SHIM_NAME)
    return path if os.path.isfile(path) else None


def shim_directory() -> str:
    """``$XDG_STATE_HOME/awf-mcp/bin`` (default ``~/.local/state/awf-mcp/bin``)."""
    from awf_mcp.processes.containment.policy import state_directories

    return os.path.join(state_directories()[0], "bin")


def installed_shim(source: str | None = None, directory: str | None = None) -> str | None:
    """The shim copied out of the bundle (see the module docstring); its path, or ``None``."""
    from awf_mcp import __version__

    source = bundled_shim() if source is None else source
    if source is None:
        return None
    directory = shim_directory() if directory is None else directory
    target = os.path.join(directory, f"{SHIM_NAME}-{__version__}")
    try:
        with open(source, "rb") as file:
            content = file.read()
        with contextlib.suppress(OSError), open(target, "rb") as existing:
            if existing.read(len(content) + 1) == content and os.access(target, os.X_OK):
                return target
        os.makedirs(directory, 0o700, exist_ok=True)
        handle, part = tempfile.mkstemp(prefix=f".{SHIM_NAME}-", dir=directory)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(content)
            os.chmod(part, 0o755)
            os.replace(part, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(part)
            raise
    except OSError:
        return None
    return target


def shim_command(executable: str) -> list[str]:
    """``[SHIM, EXECUTABLE]`` when the running binary's shim could be installed, else
    ``[EXECUTABLE]``: the start of the command line that runs ``EXECUTABLE serve``."""
    shim = installed_shim()
    return [shim, executable] if shim else [executable]
