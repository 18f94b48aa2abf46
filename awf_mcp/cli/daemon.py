"""``awf-mcp daemon status|stop``: the user's shared awf-mcp server (:mod:`awf_mcp.cli.shared`).

``status`` asks the server that shims of this version and install use (never starting one):
a table, or with ``--json`` an object with at least ``pid``, ``socket``, ``sessions``,
``upstreams`` (running upstream processes; ``shared_upstreams``: the hubs that run them for
sessions in common), ``version`` and ``started``; ``running`` is false
(exit code 0) when none runs. ``stop`` ends it cleanly: each session is told and ends, and its
shim exits with a message instead of hanging. ``shim`` prints the command line a client should
run for a session: with the single executable, its small start-up shim (installed first, see
:mod:`awf_mcp.processes.startshim`) followed by the binary, so that a session starts in
milliseconds instead of unpacking the bundle first.
"""

from __future__ import annotations

import json
import shlex
from typing import Annotated, Any

import typer

from awf_mcp.cli import shim

daemon_app = typer.Typer(
    help="Show or stop the shared awf-mcp server that agent sessions use.", no_args_is_help=True
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@daemon_app.command("status")
def daemon_status(json_output: JsonFlag = False) -> None:
    """Show the shared server: pid, socket, sessions, upstream processes, version, start time."""
    answer: dict[str, Any] = dict(shim.request("status") or {})
    answer["running"] = bool(answer)
    if not answer["running"]:
        answer["socket"] = shim.socket_path()
    if json_output:
        print(json.dumps(answer, indent=2, sort_keys=True))
        return
    if not answer["running"]:
        print(f"no shared awf-mcp server runs for this version and install (socket {answer['socket']})")
        return
    from awf_mcp.cli.terminal import print_table

    keys = [
        "pid",
        "version",
        "started",
        "sessions",
        "upstreams",
        "shared_upstreams",
        "idle_seconds",
        "socket",
        "log",
    ]
    print_table(
        "the shared awf-mcp server", ["field", "value"], [[key, str(answer.get(key, ""))] for key in keys]
    )


@daemon_app.command("stop")
def daemon_stop() -> None:
    """Stop the shared server: its sessions end (their shims say why), then it exits."""
    answer = shim.request("stop")
    if answer is None:
        print("no shared awf-mcp server was running")
        return
    print(f"stopped the shared awf-mcp server (pid {answer.get('pid')}, {answer.get('stopped', 0)} sessions)")


@daemon_app.command(
    "shim", help="Print the command a client runs for a session: the single executable's quick start-up shim."
)
def daemon_shim() -> None:
    """Print ``[*server_command(), "serve"]``: with the single executable, its start-up shim
    (installed in ``$XDG_STATE_HOME/awf-mcp/bin`` first), then the binary."""
    from awf_mcp.clients.clientconfig import server_command

    print(shlex.join([*server_command(), "serve"]))
