"""From the policy to one contained process: its paths, its network, its environment, its wrapper.

Contract
--------
:func:`prepare` is called by every path that starts a process (Bash, its jobs, stdio upstreams:
:func:`awf_mcp.processes.children.kept_command` takes what it returns). For the active policy
(:mod:`.policy`) it returns

* ``None`` when ``mode = "off"``: the process runs as before, with the user's rights;
* else a :class:`Confinement`: the :class:`Layout` (resolved paths), the backend in force and,
  when hosts are named, the port of awf-mcp's proxy (:mod:`.proxy`). Its
  :meth:`Confinement.command` gives the command line and environment the keeper runs;
* or raises :class:`SandboxUnavailable` (one sentence: the cause and the setting that accepts
  running uncontained) when no backend works here. Nothing silently runs open.

What a process may do, by kind (``shell`` for Bash and its jobs, ``server`` for an upstream):

* read everything but :func:`~.policy.deny_read`;
* write the roots, a private temporary directory (``$TMPDIR``; removed when awf-mcp exits), the
  package caches (:data:`~.policy.PACKAGE_CACHES`), ``allow_write``, and for a server its own
  state directory; inside the roots :data:`~.policy.PROTECTED_IN_ROOTS` stays read-only;
* reach the network: a shell by default not at all, a server by default everywhere; a
  ``network`` list means those hosts through the proxy, ``["*"]`` everywhere.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from awf_mcp.processes.children import CONFINE_VARIABLE
from awf_mcp.processes.containment import policy as policies
from awf_mcp.processes.containment.backends import Backend, select
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


_NETWORK_FAILURE = re.compile(
    r"/dev/(?:tcp|udp)/|connect: |Couldn't connect to server|Failed to connect|"
    r"Could not resolve|Temporary failure in name resolution|Name or service not known|"
    r"Network is unreachable|getaddrinfo|ENOTFOUND|EAI_AGAIN|Failed to establish a new connection|"
    r"Connection refused|Permission denied \(connect\)|socket: Permission denied",
    re.IGNORECASE,
)
_PATH_FAILURE = re.compile(
    r"(?P<path>[^\s:]*/[^\s:]*)['\"`\u2019]?: (?:Read-only file system|Permission denied|"
    r"Operation not permitted|Device or resource busy)|(?:Read-only file system|Permission denied|"
    r"Operation not permitted|Device or resource busy)"
    r"[^\n]*?(?P<path2>/[^\s'\"]+)"
)


class SandboxUnavailable(OSError):
    """No backend can contain a process here; the message says why and what to set."""


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


def private_tmp(name: str) -> str:
    """A directory of this process's own for one kind of child (0700; gone when awf-mcp exits)."""
    path = os.path.join(_private_base(), name)
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


def layout(kind: Kind, policy: SandboxPolicy, roots: Sequence[str], server: str = "") -> Layout:
    """The :class:`Layout` of a ``kind`` process under ``policy`` with ``roots``."""
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
    network: Literal["none", "proxy", "open"] = "open" if "*" in hosts else "proxy" if hosts else "none"
    return Layout(
        hidden=_existing(policies.deny_read(policy)),
        writable=_existing(writable),
        read_only=_existing(read_only),
        private_tmp=tmp,
        network=network,
        hosts=tuple(hosts),
    )


@dataclass(frozen=True)
class Confinement:
    """How one process is contained; see the module docstring."""

    backend: Backend
    layout: Layout
    policy: SandboxPolicy
    proxy_port: int | None = None

    def command(
        self, argv: Sequence[str], env: Mapping[str, str], named: Sequence[str] = ()
    ) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that run ``argv`` contained (``named``: see
        :func:`~.policy.contained_environment`)."""
        command, spec = self.backend.wrap(argv, self.layout, self.proxy_port)
        environment = policies.contained_environment(env, self.policy, named)
        environment["TMPDIR"] = self.layout.private_tmp
        if self.proxy_port is not None:
            address = f"http://127.0.0.1:{self.proxy_port}"
            for variable in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
                environment[variable] = address
        environment[CONFINE_VARIABLE] = spec
        return command, environment

    def refusal_note(self, stderr: str, since: float) -> str | None:
        """The note ending a failed command's result when the sandbox refused it something.

        ``stderr``: what the command said; ``since``: when it started (``time.monotonic()``).
        Judged from the proxy's refusals and from the errors a refused write, read or
        connection gives; ``None`` when nothing points at the sandbox.
        """
        from awf_mcp.processes.containment import proxy

        refused_hosts = proxy.refused_since(since) if self.layout.network == "proxy" else []
        if refused_hosts:
            hosts = ", ".join(refused_hosts)
            return (
                f"[awf-mcp: the sandbox refused a connection to {hosts}; the user can allow it with "
                f'[sandbox] network = ["{refused_hosts[0].rpartition(":")[0]}"] in their awf-mcp config]'
            )
        if self.layout.network == "none" and _NETWORK_FAILURE.search(stderr):
            return (
                "[awf-mcp: the sandbox refused network access (it is off for Bash); the user can allow "
                'hosts with [sandbox] network = ["HOST", ...] in their awf-mcp config]'
            )
        refused = _PATH_FAILURE.search(stderr)
        if refused:
            path = (refused["path"] or refused["path2"]).strip("'\"`\u2018\u2019")
            return (
                f"[awf-mcp: the sandbox refused access to {path} (writable: the roots, $TMPDIR and the "
                "package caches; credential stores unreadable); the user can allow writes with "
                '[sandbox] allow_write = ["DIR"] in their awf-mcp config]'
            )
        return None


def unavailable_message(reason: str) -> str:
    """The one sentence a refused start says: the cause and the setting that accepts running open."""
    return (
        f"the sandbox cannot contain this process: {reason}. Nothing was run. To run Bash and the "
        'upstream servers with your full rights instead, set mode = "off" in the [sandbox] table of '
        "your config (awf-mcp doctor shows what this machine supports)"
    )


def prepare(
    kind: Kind, roots: Sequence[str] = (), *, server: str = "", table: Mapping[str, object] | None = None
) -> Confinement | None:
    """The :class:`Confinement` of a new ``kind`` process (``table``: a server's own
    ``[servers.NAME.sandbox]``); ``None`` when the policy is off. Raises :class:`SandboxUnavailable`."""
    policy = policies.active().for_server(table) if table else policies.active()
    if not policy.contained:
        return None
    selection = select()
    if selection.backend is None:
        raise SandboxUnavailable(unavailable_message(selection.unavailable()))
    plan = layout(kind, policy, roots or policies.active_roots() or (os.getcwd(),), server)
    port = None
    if plan.network == "proxy":
        from awf_mcp.processes.containment.proxy import proxy_for

        port = proxy_for(plan.hosts).port
    return Confinement(selection.backend, plan, policy, port)
