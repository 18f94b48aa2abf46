"""``awf-mcp daemon status|stop``: the user's shared awf-mcp server (:mod:`awf_mcp.cli.shared`).

``status`` asks the server that shims of this version and install use (never starting one):
a table, or with ``--json`` an object with at least ``pid``, ``socket``, ``sessions``,
``upstreams`` (running upstream processes; ``shared_upstreams``: the hubs that run them for
sessions in common), ``version`` and ``started``; ``running`` is false
(exit code 0) when none runs. ``stop`` ends it cleanly: each session is told and ends, and its
shim exits with a message instead of hanging.
"""

from __future__ import annotations

import json
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
