"""Reading a secret the user keeps in a file: a token file, a state key file.

Contract
--------
:func:`read_private_file` returns the bytes of ``path`` only when it is a regular file (a
symbolic link to one is followed: orchestrators mount secrets that way) on which nobody but
its owner has any permission, and of at most ``limit`` bytes; a file that grows while it is
read stops at the bound. Every other case is a :class:`~awf_mcp.errors.UserError`: one
sentence naming the file and what to do, never any of its content. The checks are made on
what was opened (``fstat``), so a rename between the check and the read changes nothing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from awf_mcp.errors import UserError


def read_private_file(path: str | Path, what: str, limit: int) -> bytes:
    """The bytes of ``what`` (``"token file"``) at ``path``; see the module docstring."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise UserError(f"{what} {path} is not a regular file")
        if status.st_mode & 0o077:
            raise UserError(
                f"{what} {path} is open to other users (mode {stat.S_IMODE(status.st_mode):04o}): "
                f"chmod 600 {path}"
            )
        data = b""
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UserError(f"{what} {path} is larger than {limit:,} bytes")
    return data
