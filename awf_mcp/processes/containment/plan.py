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
from dataclasses import dataclass

from awf_mcp.processes.children import CONFINE_VARIABLE
from awf_mcp.processes.containment import policy as policies
from awf_mcp.processes.containment.backends import Backend, select
from awf_mcp.processes.containment.layout import Kind, Layout, layout
from awf_mcp.processes.containment.policy import SandboxPolicy

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

    def command(
        self, argv: Sequence[str], env: Mapping[str, str], named: Sequence[str] = ()
    ) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that run ``argv`` contained (``named``: see
        :func:`~.policy.contained_environment`)."""
        command, spec = self.backend.wrap(argv, self.layout, self.proxy_port)
        environment = self.environment(env, named)
        environment[CONFINE_VARIABLE] = spec
        return command, environment

    def environment(self, env: Mapping[str, str], named: Sequence[str] = ()) -> dict[str, str]:
        """What a contained process's environment keeps of ``env``, with its ``$TMPDIR`` and proxy."""
        environment = policies.contained_environment(env, self.policy, named)
        environment["TMPDIR"] = self.layout.private_tmp
        if self.proxy_port is not None:
            address = f"http://127.0.0.1:{self.proxy_port}"
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
