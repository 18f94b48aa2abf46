"""What this awf-mcp was built as: the commit, the platform and C library, whether it carries them.

The single executable bundles :data:`BUILD_RECORD` at the top of its bundle, which
``build.spec`` writes: ``{"commit", "platform", "libc", "portable"}`` (the commit it was
built from, ``+dirty`` when the tree had changes; ``linux-x86_64``; the C library it was
built against, ``glibc 2.36``; whether that loader and libc come with it). A pip install
has no record. :func:`build_identity` adds what the running process says itself: the
Python and the C library it actually runs on. Anything missing or malformed reads as
``unknown``; nothing here raises.

Standard library only.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import sysconfig

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


def build_identity() -> dict[str, str]:
    """``commit``, ``python``, ``libc``, ``built for`` as one-line strings (see the module doc)."""
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
    return {
        "commit": str(record.get("commit") or "unknown"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "libc": running,
        "built for": built_for,
    }
