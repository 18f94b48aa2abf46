"""``python -m awf_plugin_scripts approve [DIR] [--approvals FILE]``: the user approves scripts.

Records the SHA-256 of every script the plugin would serve from ``DIR``
(default ``.awf-tools``) in the approvals file (default
:func:`~awf_plugin_scripts.default_approvals_path`), after printing each one's
name and digest. Run it after reviewing a script the plugin refused; the
running server reads approvals before every call, so no restart is needed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from awf_plugin_scripts import ApprovalStore, default_approvals_path, digest, discover


def main(argv: list[str] | None = None) -> int:
    """Approve the scripts of a directory; exit status 0, or 1 when there is nothing to approve."""
    parser = argparse.ArgumentParser(prog="python -m awf_plugin_scripts", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    approve = commands.add_parser("approve", help="approve the current content of the scripts in DIR")
    approve.add_argument("directory", nargs="?", default=".awf-tools", help="the scripts directory")
    approve.add_argument("--approvals", default=None, help="the approvals file (default: the plugin's)")
    options = parser.parse_args(argv)
    directory = Path(options.directory).expanduser().resolve()
    store = ApprovalStore(
        Path(options.approvals).expanduser() if options.approvals else default_approvals_path()
    )
    entries = {}
    for script in discover(directory):
        value = digest(script.path)
        if value is None:
            print(f"skipped {script.path}: cannot be read or is too big", file=sys.stderr)
            continue
        entries[str(script.path)] = value
        print(f"approved {script.definition.name}: {script.path} sha256:{value}")
    if not entries:
        print(f"no executable scripts in {directory}", file=sys.stderr)
        return 1
    store.approve(entries)
    print(f"recorded in {store.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
