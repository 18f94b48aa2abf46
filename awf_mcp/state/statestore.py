"""The user's own state directory: small JSON records that only awf-mcp writes.

Contract
--------
* :func:`state_dir` is ``$XDG_STATE_HOME/awf-mcp`` (default ``~/.local/state/awf-mcp``).
  It belongs to the user, never to a project: nothing in the working directory can
  name or redirect it.
* :func:`updating` holds an exclusive ``flock`` on ``NAME.lock`` while a record is read,
  changed and written back, so two awf-mcp processes (two agents' servers, a ``trust``
  beside a ``serve``) never lose each other's updates.
* A record is written whole to a fresh temporary file in the same directory and renamed
  into place: a reader sees the old record or the new one, never half of one. The
  directory is made ``0700`` and each record ``0600``.
* A record that is missing, empty or not a JSON object reads as ``{}``; one larger than
  :data:`MAX_RECORD_BYTES` is refused rather than read.

Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from awf_mcp.errors import UserError

MAX_RECORD_BYTES = 16 * 1024 * 1024
"""A state record larger than this is refused: they hold hashes and paths, never content."""


def state_dir(env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """``$XDG_STATE_HOME/awf-mcp``, or ``HOME/.local/state/awf-mcp``."""
    env = os.environ if env is None else env
    state = env.get("XDG_STATE_HOME")
    if state and os.path.isabs(os.path.expanduser(state)):
        return Path(os.path.expanduser(state)) / "awf-mcp"
    base = home if home is not None else Path(os.path.expanduser("~"))
    return base / ".local" / "state" / "awf-mcp"


def _read(path: Path) -> dict[str, Any]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_RECORD_BYTES + 1)
    if len(data) > MAX_RECORD_BYTES:
        raise UserError(f"{path} is over {MAX_RECORD_BYTES:,} bytes; move it aside and rerun")
    try:
        record = json.loads(data.decode("utf-8")) if data.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise UserError(f"{path} is not valid JSON; move it aside and rerun") from None
    return record if isinstance(record, dict) else {}


def _write(path: Path, record: Mapping[str, Any]) -> None:
    text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _directory(env: Mapping[str, str] | None) -> Path:
    directory = state_dir(env)
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the state directory {directory}: {exc.strerror or exc}") from None
    return directory


def load(name: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The record ``NAME.json`` in the state directory (``{}`` when there is none)."""
    return _read(state_dir(env) / f"{name}.json")


@contextlib.contextmanager
def updating(name: str, env: Mapping[str, str] | None = None) -> Iterator[dict[str, Any]]:
    """Yield record ``NAME`` under an exclusive lock; what the caller leaves in it is written back."""
    directory = _directory(env)
    path = directory / f"{name}.json"
    try:
        lock = os.open(
            directory / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
    except OSError as exc:
        raise UserError(f"cannot lock {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = _read(path)
        before = json.dumps(record, sort_keys=True)
        yield record
        if json.dumps(record, sort_keys=True) != before:
            try:
                _write(path, record)
            except OSError as exc:
                raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        os.close(lock)
