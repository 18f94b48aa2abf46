"""Whose configuration is this: the user's own, approved by the user, or inert.

A cloned repository controls the directory an agent starts awf-mcp in. A configuration
file found there (``./awf-mcp.toml``), or named from there (a project's ``.mcp.json``
entry ``awf-mcp serve --config .cache/x.toml``), was written by whoever wrote the
repository, so it may not start a command, widen a root or set an environment variable
until the user has approved its exact content — as ``direnv allow`` does for ``.envrc``.

Contract
--------
* :func:`project_of` is the project around a working directory: the nearest ancestor
  that holds ``.git``, else the working directory itself.
* :func:`is_users_own` decides by where a file comes from and lies, never by what it says:
  a file under the user's own awf-mcp configuration directory
  (``$XDG_CONFIG_HOME/awf-mcp``, default ``~/.config/awf-mcp``) is the user's; so is a
  file named with ``--config`` that lies outside the project, both as named and once
  its links are followed. ``./awf-mcp.toml``, found rather than named, never is.
* Anything else is approved only while :func:`verdict` finds its absolute path recorded
  with the SHA-256 of the very bytes about to be used. A changed byte is a new file.
  Approvals live in the user's state directory (:mod:`awf_mcp.state.statestore`, record
  ``approvals``), which nothing in a project can name.
* An approval also records the SHA-256 of each file inside the project that the config's
  servers run (``command = "./scripts/run.sh"``, ``args = ["./srv.py"]``): one that changed
  later (a ``git pull``) makes the verdict ``changed`` and names it. What that file imports
  or runs in turn is not covered.
* :func:`approve` records bytes the user has seen (``awf-mcp trust``) or that awf-mcp
  itself wrote at the user's command (``config --write``, ``servers import --write``);
  :func:`forget` removes a record.
* :func:`read_bounded` reads a configuration file once, up to :data:`MAX_CONFIG_BYTES`,
  so the bytes that are hashed are the bytes that are parsed.

Standard library only, plus :mod:`awf_mcp.state.statestore`.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from awf_mcp.errors import ConfigError
from awf_mcp.state import statestore

MAX_CONFIG_BYTES = 1024 * 1024
"""A configuration file larger than this is refused: real ones are a few KiB."""

APPROVALS = "approvals"
"""The state record that holds approvals: ``{"files": {ABSOLUTE_PATH: {"sha256", "approved_at"}}}``."""

State = Literal["own", "approved", "new", "changed"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a file's content may be used, and why."""

    path: Path
    state: State
    sha256: str
    changed_files: tuple[str, ...] = ()
    """Files inside the project that its servers run, changed since the approval (``changed``)."""

    @property
    def trusted(self) -> bool:
        return self.state in ("own", "approved")

    @property
    def reason(self) -> str:
        """Why an untrusted file is inert, as the end of a sentence."""
        if self.state == "changed" and self.changed_files:
            return f"{', '.join(self.changed_files)}, which its servers run, changed since you approved it"
        if self.state == "changed":
            return "it changed since you approved it"
        return "it belongs to the project and you have not approved it"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_bounded(path: Path) -> bytes:
    """PATH's bytes, read once; :class:`ConfigError` when it is unreadable or over the bound."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is over {MAX_CONFIG_BYTES:,} bytes; that is not a config file")
    return data


def project_of(cwd: Path) -> Path:
    """The nearest ancestor of CWD (itself included) that holds ``.git``; else CWD."""
    cwd = Path(os.path.abspath(cwd))
    for directory in (cwd, *cwd.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    return cwd


def users_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/awf-mcp``, or ``~/.config/awf-mcp``."""
    env = os.environ if env is None else env
    base = os.path.expanduser(env.get("XDG_CONFIG_HOME") or "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "awf-mcp"


def _within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def is_users_own(path: Path, *, named: bool, cwd: Path, env: Mapping[str, str] | None = None) -> bool:
    """True when PATH is the user's own file (see the module contract); NAMED: given with ``--config``."""
    absolute = Path(os.path.abspath(path))
    resolved = absolute.resolve()
    own_dir = users_config_dir(env)
    if _within(absolute, own_dir) and _within(resolved, own_dir.resolve()):
        return True
    if not named:
        return False
    project = project_of(cwd)
    return not any(_within(p, project) or _within(p, project.resolve()) for p in (absolute, resolved))


def _key(path: Path) -> str:
    return os.path.abspath(path)


def verdict(
    path: Path,
    data: bytes,
    *,
    named: bool,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    executed: Mapping[str, str] | None = None,
) -> Verdict:
    """Whether DATA, read from PATH, may be used (see the module contract).

    EXECUTED: the files inside the project that the file's servers run, with their SHA-256 now
    (:func:`awf_mcp.core.config.executed_files`); one that differs from what the approval
    recorded makes the verdict ``changed``, naming it (a ``git pull`` changed what would run).
    """
    sha = digest(data)
    if is_users_own(path, named=named, cwd=cwd, env=env):
        return Verdict(Path(_key(path)), "own", sha)
    record = statestore.load(APPROVALS, env).get("files", {})
    entry = record.get(_key(path)) if isinstance(record, dict) else None
    if isinstance(entry, dict) and "sha256" in entry:
        if entry["sha256"] != sha:
            return Verdict(Path(_key(path)), "changed", sha)
        pinned = entry.get("executed")
        if isinstance(pinned, dict) and executed is not None:
            changed = sorted(name for name in {*pinned, *executed} if pinned.get(name) != executed.get(name))
            if changed:
                return Verdict(Path(_key(path)), "changed", sha, tuple(changed))
        return Verdict(Path(_key(path)), "approved", sha)
    return Verdict(Path(_key(path)), "new", sha)


def approve(
    path: Path, data: bytes, env: Mapping[str, str] | None = None, executed: Mapping[str, str] | None = None
) -> None:
    """Record that the user approved exactly DATA as the content of PATH, and EXECUTED (see
    :func:`verdict`) as the files its servers run."""
    with statestore.updating(APPROVALS, env) as record:
        files = record.setdefault("files", {})
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        files[_key(path)] = {"sha256": digest(data), "approved_at": stamp, "executed": dict(executed or {})}


MAX_EXECUTED_BYTES = 64 * 1024 * 1024
"""How much of a file a server runs is hashed: past it, the digest also covers the size and the
modification time (a ``git pull`` that changes the file changes either)."""


def file_digest(path: Path) -> str | None:
    """The SHA-256 of the regular file PATH (links followed), or ``None`` when it is not one.

    At most :data:`MAX_EXECUTED_BYTES` are read: a project's huge file costs no more than that."""
    try:
        # O_NONBLOCK: a FIFO named by a cloned repository's config must not hang the open.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with open(fd, "rb", closefd=False) as handle:
            info = os.fstat(fd)
            if (info.st_mode & 0o170000) != 0o100000:
                return None
            sha = hashlib.sha256()
            left = MAX_EXECUTED_BYTES
            while left > 0 and (chunk := handle.read(min(left, 1 << 20))):
                sha.update(chunk)
                left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    if info.st_size > MAX_EXECUTED_BYTES:
        return f"{sha.hexdigest()}+{info.st_size}+{info.st_mtime_ns}"
    return sha.hexdigest()


def forget(path: Path, env: Mapping[str, str] | None = None) -> bool:
    """Remove PATH's approval; True when there was one."""
    with statestore.updating(APPROVALS, env) as record:
        files = record.setdefault("files", {})
        return files.pop(_key(path), None) is not None


def approvals(env: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Every approval: absolute path -> ``{"sha256", "approved_at"}``."""
    files = statestore.load(APPROVALS, env).get("files", {})
    if not isinstance(files, dict):
        return {}
    return {key: value for key, value in files.items() if isinstance(value, dict)}
