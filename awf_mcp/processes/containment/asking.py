"""Asking the user about a host the sandbox's network list does not name.

Contract
--------
A contained Bash call whose client answers elicitations (``elicitation/create`` in form mode,
on a session: the stateless revision has no back-channel) reaches the network through awf-mcp's
proxy even when no host is named (:func:`~.plan.prepare` with ``asking=True``). A connection to
a host outside ``network`` is then put to the user by :meth:`HostQuestions.asker`, with three
choices:

* ``once``: this connection goes through;
* ``session``: every connection of this client session to the host goes through, unasked;
* ``always``: the same, and the host is added to ``[sandbox] network`` of the user's own config
  file (:func:`~.policy.own_config`: the file this server loaded when it is the user's, never a
  project's), its comments and layout kept (``tomlkit``). Offered only where there is one.

Anything else (declined, cancelled, an error, the call ended) refuses the connection, and the
command's result ends with the sandbox's note. One question per host and session is open at a
time: connections that arrive meanwhile wait for its answer. A command run in the background
outlives its call, so nothing is asked for it: its hosts are refused as without elicitation.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from collections.abc import Callable, Coroutine, Hashable, Mapping
from typing import Any

from awf_mcp.processes.containment import policy as policies

log = logging.getLogger("awf_mcp.sandbox")

Ask = Callable[[str, Mapping[str, Any]], Coroutine[Any, Any, Mapping[str, Any]]]
"""A client request and its result (``ClientChannel.ask``)."""

CHOICES = {
    "once": "Allow this connection once",
    "session": "Allow this host for this session",
    "always": "Always allow this host (adds it to your awf-mcp config)",
}


class HostQuestions:
    """What the user allowed, per client session, and the questions open; see the module docstring."""

    def __init__(self) -> None:
        self._allowed: dict[Hashable, set[str]] = {}
        self._open: dict[tuple[Hashable, str], asyncio.Future[bool]] = {}

    def asker(self, session: Hashable, ask: Ask) -> Callable[[str, int], Coroutine[Any, Any, bool]]:
        """The proxy's asker (:meth:`~.proxy.HostProxy.admit`) for one call of ``session``."""

        async def allowed(host: str, port: int) -> bool:
            name = host.lower().strip("[]")
            hosts = self._allowed.setdefault(session, set())
            if name in hosts:
                return True
            pending = self._open.get((session, name))
            if pending is not None:
                return await asyncio.shield(pending)
            pending = self._open[(session, name)] = asyncio.get_running_loop().create_future()
            answer = False
            try:
                answer = await self._ask(ask, name, port, hosts)
            finally:
                del self._open[(session, name)]
                pending.set_result(answer)
            return answer

        return allowed

    async def _ask(self, ask: Ask, host: str, port: int, hosts: set[str]) -> bool:
        own = policies.own_config()
        choices = [key for key in CHOICES if key != "always" or own is not None]
        params = {
            "mode": "form",
            "message": (
                f"A command awf-mcp runs in its sandbox wants to connect to {host}:{port}, which is not "
                "in the sandbox's network list. Allow it?"
            ),
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "allow": {
                        "type": "string",
                        "title": f"Connect to {host}",
                        "enum": choices,
                        "enumNames": [CHOICES[key] for key in choices],
                    }
                },
                "required": ["allow"],
            },
        }
        try:
            result = await ask("elicitation/create", params)
        except BaseException as exc:  # ClientCannotAnswer, InputRequired (stateless), cancellation
            if isinstance(exc, asyncio.CancelledError):
                raise
            log.info("sandbox: could not ask about %s: %s", host, exc)
            return False
        content = result.get("content") if isinstance(result, Mapping) else None
        choice = (
            content.get("allow")
            if result.get("action") == "accept" and isinstance(content, Mapping)
            else None
        )
        if choice not in choices:
            return False
        if choice in ("session", "always"):
            hosts.add(host)
        if choice == "always" and own is not None:
            try:
                await asyncio.to_thread(add_host, own, host)
            except (OSError, ValueError) as exc:
                log.warning("sandbox: could not add %s to %s: %s", host, own, exc)
        return True


def add_host(path: str, host: str) -> None:
    """Add ``host`` to ``[sandbox] network`` of the TOML file ``path``, keeping everything else as
    written; the file is replaced whole (a reader sees the old file or the new one)."""
    import tomlkit

    with open(path, encoding="utf-8") as handle:
        document = tomlkit.parse(handle.read())
    sandbox = document.get("sandbox")
    if sandbox is None:
        sandbox = tomlkit.table()
        document["sandbox"] = sandbox
    if not isinstance(sandbox, dict):
        raise ValueError("[sandbox] is not a table")
    network = sandbox.get("network")
    if network is None:
        network = tomlkit.array()
        sandbox["network"] = network
    if not isinstance(network, list):
        raise ValueError("[sandbox] network is not a list")
    if host in network or "*" in network:
        return
    network.append(host)
    directory = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o777
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, encoding="utf-8") as handle:
        temporary = handle.name
        try:
            handle.write(tomlkit.dumps(document))
        except BaseException:
            os.unlink(temporary)
            raise
    try:
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
