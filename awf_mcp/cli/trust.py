"""``awf-mcp trust [FILE]``: show what a project's config file would do, and approve it.

Contract
--------
* FILE (default ``./awf-mcp.toml``) is read once; what is shown is computed from those
  bytes and, once approved, those bytes are what is recorded
  (:func:`awf_mcp.core.trust.approve`). A file changed between the showing and the
  approval is therefore never approved unseen: its next use finds another hash.
* What is shown: the commands it would start (as written, ``${VAR}`` not expanded), the
  environment variables it would read into them, the hosts it would connect to, the
  roots, plugin settings and tool selection (:func:`awf_mcp.core.config.describe`).
* Approving asks on a terminal; ``--yes`` approves without asking; with neither a
  terminal nor ``--yes`` nothing is approved and the command exits 1.
* ``--list`` shows every approval and whether its file still matches; ``--forget FILE``
  withdraws one. The user's own files (:func:`awf_mcp.core.trust.is_users_own`) need no
  approval and are said to be so.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from awf_mcp.errors import UserError
from awf_mcp.ports import inert_text

SHOWN_BYTES = 8192
"""How much of a file that is not an awf-mcp config is shown before approving it."""


def _show_list() -> None:
    from awf_mcp.core import trust

    approvals = trust.approvals()
    if not approvals:
        print("no approved config files")
        return
    for path, entry in sorted(approvals.items()):
        try:
            matches = trust.digest(trust.read_bounded(Path(path))) == entry["sha256"]
            state = "matches" if matches else "changed"
        except UserError:
            state = "gone"
        print(f"{path}  approved {entry.get('approved_at', '?')}  ({state})")


def trust_command(
    file: Annotated[
        str | None, typer.Argument(help="The config file to review and approve (default: ./awf-mcp.toml).")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve without asking.")] = False,
    list_all: Annotated[
        bool, typer.Option("--list", help="List every approval and whether it matches.")
    ] = False,
    forget: Annotated[bool, typer.Option("--forget", help="Withdraw the approval of FILE.")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print what FILE would do as JSON.")] = False,
) -> None:
    """Show what a project's config file would start and change; approve exactly that content.

    A config file found in the working directory (./awf-mcp.toml), or named from inside the
    project, may come with a cloned repository: until approved it starts nothing, widens no
    root and sets nothing. A changed file needs approving again.
    """
    from awf_mcp.core import config, trust
    from awf_mcp.core.servers import variables_in

    if list_all:
        _show_list()
        return
    cwd = Path.cwd()
    path = Path(os.path.abspath(os.path.expanduser(file))) if file else cwd / config.DEFAULT_CONFIG_NAME
    if forget:
        removed = trust.forget(path)
        print(f"{'withdrew the approval of' if removed else 'there was no approval of'} {path}")
        return
    if not path.is_file():
        raise UserError(f"{path} is not a file; name the config file to approve: awf-mcp trust FILE")
    raw = trust.read_bounded(path)
    executed: dict[str, str] = {}
    try:
        fields = config.parse_file(path, raw)
        executed = config.executed_files(fields, path)
        would = config.describe(fields)
    except UserError as exc:  # not an awf-mcp config (an agent's file, say): show its text instead
        text = raw[:SHOWN_BYTES].decode("utf-8", errors="replace")
        would = [f"not an awf-mcp config file ({exc}); its text:", *text.splitlines()]
    verdict = trust.verdict(path, raw, named=file is not None, cwd=cwd, executed=executed)
    variables = variables_in(raw.decode("utf-8", errors="replace"))
    if json_output:
        shown = {"path": str(path), "sha256": verdict.sha256, "state": verdict.state}
        print(json.dumps({**shown, "would": would, "reads_env": variables}, indent=2))
        return
    print(f"{path}  (sha256 {verdict.sha256[:16]})")
    if verdict.state == "own":
        print("this is your own config file (outside the project); it needs no approval")
        return
    print("it would:" if would else "it would change nothing but defaults")
    for line in would:
        print(f"  {inert_text(line)}")
    if variables:
        print(f"  read these environment variables into them: {', '.join(variables)}")
    for name in sorted(executed):
        print(f"  run {name} (sha256 {executed[name][:16]}), a file of the project: review it too")
    if verdict.state == "approved":
        print("you approved exactly this content already")
        return
    if verdict.state == "changed":
        print(verdict.reason)
    if not yes:
        if not sys.stdin.isatty():
            raise UserError(
                f"not approved: no terminal to ask on; to approve it as shown: awf-mcp trust --yes {path}"
            )
        if not typer.confirm("Approve this exact content?", default=False):
            raise UserError(f"not approved: {path} stays ignored")
    trust.approve(path, raw, executed=executed)
    print(f"approved {path}; a change to it (or to a file it runs) will need approving again")
    print("an awf-mcp serve already running reads it at its next start: restart the agent's MCP server")


def approve_at_users_command(path: Path) -> None:
    """Approve PATH as it is now, because the user's own command named or wrote it; say so on stderr.

    ``config CLIENT --write --config FILE`` names FILE for the agent to serve, and
    ``servers import --write`` writes the config file: the README's steps never ask twice.
    What the file would do is said, so that the approval is not silent.
    """
    from awf_mcp.core import config, trust

    raw = trust.read_bounded(path)
    executed: dict[str, str] = {}
    try:
        fields = config.parse_file(path, raw)
        executed = config.executed_files(fields, path)
        would = "; ".join(config.describe(fields)) or "change nothing but defaults"
    except UserError as exc:
        would = f"not load ({exc})"
    if trust.verdict(path, raw, named=True, cwd=Path.cwd(), executed=executed).state in ("own", "approved"):
        return
    trust.approve(path, raw, executed=executed)
    print(
        f"awf-mcp: approved {path} as it is now (it would {inert_text(would)}); "
        f"a change needs `awf-mcp trust` again; `awf-mcp trust --forget {path}` withdraws it",
        file=sys.stderr,
    )
