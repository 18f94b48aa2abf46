"""Where one contained process may read and write, resolved to concrete paths: its :class:`Layout`.

Contract
--------
:func:`layout` turns the policy (:mod:`.policy`), the roots and the kind of process (``shell``
for Bash and its jobs, ``server`` for an upstream) into a :class:`Layout`: the denied paths that
exist, the writable ones (roots, a private ``$TMPDIR`` removed when awf-mcp exits, the package
caches, ``allow_write``, a server's own state directory), the read-only ones inside the roots,
and the network (``none``, ``proxy`` or ``open``). Every backend (:mod:`.backends`) reads it:
bubblewrap as mounts, Landlock as the rule lists :attr:`Layout.readable_rules` and
:attr:`Layout.writable_rules`, carved around the denied paths (:func:`carve`) and carved again
only when a directory on the way changes (:func:`carved`).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from awf_mcp.processes.containment import policy as policies
from awf_mcp.processes.containment.policy import SandboxPolicy, within

Kind = Literal["shell", "server"]

DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
)
"""What a contained process may write under ``/dev`` (Landlock; bwrap makes a ``/dev`` of its own)."""


@dataclass(frozen=True)
class Layout:
    """The concrete, resolved paths and network of one kind of contained process."""

    hidden: tuple[str, ...]
    """Denied paths that exist: hidden from every read."""
    writable: tuple[str, ...]
    """Existing paths writable beneath (roots, private tmp, caches, ``allow_write``)."""
    read_only: tuple[str, ...]
    """Existing paths inside a writable one that stay read-only."""
    private_tmp: str
    network: Literal["none", "proxy", "open"]
    hosts: tuple[str, ...]

    @functools.cached_property
    def readable_rules(self) -> tuple[str, ...]:
        """Landlock's read rules: hierarchies that cover everything but the hidden paths."""
        return carved("/", self.hidden)

    @functools.cached_property
    def listable_rules(self) -> tuple[str, ...]:
        """Directories on the way to a hidden path: listable (``ls ~``), though not granted whole."""
        return tuple(_ancestors("/", self.hidden))

    @functools.cached_property
    def writable_rules(self) -> tuple[str, ...]:
        """Landlock's write rules: the writable paths less the hidden ones.

        The read-only paths inside a root are not carved out: Landlock grants a right on a whole
        hierarchy, so a root where files can be created at all (``git commit`` creates
        ``.git/index.lock``) cannot keep ``.git/config`` read-only. The file tools still do.
        """
        rules = [rule for path in self.writable for rule in carved(path, self.hidden)]
        return (*rules, *(device for device in DEVICES if os.path.exists(device)))


def carve(top: str, excluded: Sequence[str]) -> list[str]:
    """Paths whose hierarchies together cover ``top`` less every ``excluded`` one (and nothing else).

    Landlock only grants, so "all but ``~/.ssh``" becomes the siblings of each directory on the
    way down to it. Symbolic links are left out: what they lead to is judged on its own.
    """
    if any(within(top, path) for path in excluded):
        return []
    inside = [path for path in excluded if within(path, top)]
    if not inside:
        return [top]
    try:
        entries = list(os.scandir(top))
    except OSError:
        return []
    found: list[str] = []
    for entry in entries:
        if not entry.is_symlink():
            found += carve(entry.path, inside)
    return found


def _ancestors(top: str, excluded: Sequence[str]) -> list[str]:
    """The directories :func:`carve` lists: from ``top`` down to the parent of each excluded path."""
    found: list[str] = []
    for path in excluded:
        if within(path, top) and path != top:
            parent = os.path.dirname(path)
            while within(parent, top):
                found.append(parent)
                if parent == top:
                    break
                parent = os.path.dirname(parent)
    return sorted(set(found))


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


@functools.lru_cache(maxsize=64)
def _carved(top: str, excluded: tuple[str, ...], _stamp: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(carve(top, excluded))


def carved(top: str, excluded: Sequence[str]) -> tuple[str, ...]:
    """:func:`carve`, done again only when an entry was added to or removed from a directory it
    lists (their modification times are the key): a few ``stat`` calls a process, not a walk."""
    excluded = tuple(excluded)
    return _carved(top, excluded, tuple(_mtime(path) for path in _ancestors(top, excluded)))


@functools.cache
def _private_base() -> str:
    base = tempfile.mkdtemp(prefix=f"awf-mcp-{os.getpid()}-sandbox-")  # swept like Bash's outputs
    atexit.register(shutil.rmtree, base, True)
    return base


_shared_base: list[str] = []


def share_server_directories(base: str) -> None:
    """In a session of the shared server: the upstream servers' private directories live under
    ``base`` (the shared server's, 0700, removed when it exits), so that sessions that start the
    same server compute the same launch and can share its process."""
    _shared_base[:] = [base]


def private_tmp(name: str) -> str:
    """A directory of this process's own for one kind of child (0700; gone when awf-mcp exits);
    an upstream server's (``server-NAME``) is the shared server's, see :func:`share_server_directories`."""
    base = _shared_base[0] if _shared_base and name.startswith("server-") else _private_base()
    path = os.path.join(base, name)
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def server_state(name: str) -> str:
    """An upstream server's own writable state directory (under awf-mcp's state, yet not denied)."""
    state = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    path = os.path.join(state, "awf-mcp", "servers", name)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        return ""  # a home that cannot hold one (nobody's /nonexistent): the server goes without
    return path


def _existing(paths: Sequence[str]) -> tuple[str, ...]:
    return tuple(path for path in dict.fromkeys(paths) if os.path.lexists(path))


def layout(
    kind: Kind, policy: SandboxPolicy, roots: Sequence[str], server: str = "", *, asking: bool = False
) -> Layout:
    """The :class:`Layout` of a ``kind`` process under ``policy`` with ``roots``; ``asking``: a
    network that is not open goes through the proxy even with no host named, so that a host
    outside the list can be put to the user (:mod:`.asking`)."""
    real_roots = policies.expand(roots)
    tmp = private_tmp("bash" if kind == "shell" else f"server-{server}")
    writable = [
        *real_roots,
        tmp,
        *policies.expand(policies.PACKAGE_CACHES),
        *policies.expand(policy.allow_write),
    ]
    state = server_state(server) if kind == "server" else ""
    if state:
        writable.append(state)
    read_only = [
        os.path.join(root, protected) for root in real_roots for protected in policies.PROTECTED_IN_ROOTS
    ]
    default: tuple[str, ...] = () if kind == "shell" else ("*",)
    hosts = policy.network if policy.network is not None else default
    network: Literal["none", "proxy", "open"] = (
        "open" if "*" in hosts else "proxy" if hosts or asking else "none"
    )
    with contextlib.suppress(OSError):  # hidden from the first process on: launches compare equal
        os.makedirs(policies.state_directories()[0], mode=0o700, exist_ok=True)
    return Layout(
        hidden=_existing(policies.deny_read(policy)),
        writable=_existing(writable),
        read_only=_existing(read_only),
        private_tmp=tmp,
        network=network,
        hosts=tuple(hosts),
    )
