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

What a process may read, write and reach is its :class:`Layout` (:mod:`.layout`): a shell by
default reaches no network, a server every host; a ``network`` list means those hosts through
the proxy, ``["*"]`` everywhere.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from awf_mcp.processes.children import CONFINE_VARIABLE
from awf_mcp.processes.containment import kernel
from awf_mcp.processes.containment import policy as policies
from awf_mcp.processes.containment.backends import Backend, select
from awf_mcp.processes.containment.layout import Kind, Layout, layout
from awf_mcp.processes.containment.policy import SandboxPolicy

if TYPE_CHECKING:
    from awf_mcp.processes.containment.proxy import HostProxy

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
class Confinement:
    """How one process is contained; see the module docstring."""

    backend: Backend
    layout: Layout
    policy: SandboxPolicy
    proxy_port: int | None = None
    proxy: HostProxy | None = field(default=None, compare=False)

    def command(
        self, argv: Sequence[str], env: Mapping[str, str], named: Sequence[str] = (), proxy_token: str = ""
    ) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that run ``argv`` contained (``named``: see
        :func:`~.policy.contained_environment`; ``proxy_token``: see :meth:`environment`)."""
        command, spec = self.backend.wrap(argv, self.layout, self.proxy_port)
        environment = self.environment(env, named, proxy_token)
        environment[CONFINE_VARIABLE] = spec
        return command, environment

    def environment(
        self, env: Mapping[str, str], named: Sequence[str] = (), proxy_token: str = ""
    ) -> dict[str, str]:
        """What a contained process's environment keeps of ``env``, with its ``$TMPDIR`` and proxy
        (``proxy_token``: the call's, from :meth:`HostProxy.admit`, in the proxy's URL)."""
        environment = policies.contained_environment(env, self.policy, named)
        environment["TMPDIR"] = self.layout.private_tmp
        if self.proxy_port is not None:
            credentials = f"call:{proxy_token}@" if proxy_token else ""
            address = f"http://{credentials}127.0.0.1:{self.proxy_port}"
            for variable in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
                environment[variable] = address
        return environment

    @property
    def key(self) -> tuple[object, ...]:
        """What the sandbox built for this process is made of (the wrapper's arguments, the rules
        the keeper applies): equal keys, the same sandbox. A sandbox set up ahead of its command
        (:func:`~awf_mcp.processes.children.warm_sandbox`) runs a command only when its key is the
        command's own, so a ``.git`` made, a root added or a policy changed in between is heeded."""
        command, spec = self.backend.wrap((), self.layout, self.proxy_port)
        return (self.backend.name, tuple(command), spec, self.proxy_port)

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
    kind: Kind,
    roots: Sequence[str] = (),
    *,
    server: str = "",
    table: Mapping[str, object] | None = None,
    asking: bool = False,
) -> Confinement | None:
    """The :class:`Confinement` of a new ``kind`` process (``table``: a server's own
    ``[servers.NAME.sandbox]``; ``asking``: its caller can put a host outside the list to the
    user, so the network goes through the proxy, where the kernel can hold TCP to it: Landlock
    ABI 4); ``None`` when the policy is off. Raises :class:`SandboxUnavailable`."""
    policy = policies.active().for_server(table) if table else policies.active()
    if not policy.contained:
        return None
    selection = select()
    if selection.backend is None:
        raise SandboxUnavailable(unavailable_message(selection.unavailable()))
    asking = asking and kernel.landlock_abi() >= kernel.LANDLOCK_NET_ABI
    plan = layout(kind, policy, roots or policies.active_roots() or (os.getcwd(),), server, asking=asking)
    if plan.network != "proxy":
        return Confinement(selection.backend, plan, policy)
    from awf_mcp.processes.containment.proxy import proxy_for

    proxy = proxy_for(plan.hosts)
    return Confinement(selection.backend, plan, policy, proxy.port, proxy)
