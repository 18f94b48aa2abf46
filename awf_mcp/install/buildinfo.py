"""What this awf-mcp was built as: the commit, the platform and C library, whether it carries them.

The single executable bundles :data:`BUILD_RECORD` at the top of its bundle, which
``build.spec`` writes: ``{"commit", "platform", "libc", "portable"}`` (the commit it was
built from, ``+dirty`` when the tree had changes; ``linux-x86_64``; the C library it was
built against, ``glibc 2.36``; whether that loader and libc come with it). A pip install
has no record. :func:`build_identity` adds what the running process says itself: the
Python and the C library it actually runs on, and the version of the ``rg`` it is
given (:func:`command_version`). Anything missing or malformed reads as ``unknown``;
nothing here raises.

Standard library only.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import sysconfig
from collections.abc import Sequence

from awf_mcp.processes.childenv import child_environment

BUILD_RECORD = "awf-mcp-build.json"
"""The file name of the build record, at the top of the single executable's bundle."""


def build_record() -> dict[str, object]:
    """The bundled build record, or ``{}`` outside the single executable (or when unreadable)."""
    bundle = getattr(sys, "_MEIPASS", None)
    if not bundle:
        return {}
    try:
        with open(os.path.join(bundle, BUILD_RECORD), "rb") as file:
            record = json.loads(file.read(64 * 1024))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def command_version(argv: Sequence[str], timeout: float = 10.0) -> tuple[str | None, str]:
    """The first line ``argv`` prints (its version), or None and why it did not run.

    It runs with the user's environment (:func:`~awf_mcp.processes.childenv.child_environment`).
    """
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env=child_environment(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"it did not answer within {timeout:g} s"
    except OSError as exc:
        return None, exc.strerror or str(exc)
    first = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    if done.returncode != 0 or not first:
        said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "nothing"
        return None, f"it exited with code {done.returncode} and said: {said}"
    return first, ""


def build_identity(rg: str | None) -> dict[str, str]:
    """``commit``, ``python``, ``libc``, ``rg``, ``built for`` as one-line strings (see the module doc).

    ``rg`` is the ripgrep executable Grep runs, or None.
    """
    record = build_record()
    libc, libc_version = platform.libc_ver()
    running = f"{libc} {libc_version}".strip() or "unknown"
    if record.get("portable") is True:
        running += " (carried by the binary)"
    elif getattr(sys, "frozen", False):
        running += " (the machine's)"
    built_for = str(record.get("platform") or sysconfig.get_platform())
    if record.get("libc"):
        built_for += f", against {record['libc']}"
    version, reason = command_version([rg, "--version"]) if rg else (None, "none found")
    return {
        "commit": str(record.get("commit") or "unknown"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "libc": running,
        "rg": version or f"does not run ({reason})",
        "built for": built_for,
    }
