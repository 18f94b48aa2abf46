"""``python -m awf_mcp``: the same command line as ``awf-mcp``; the one-file binary's entry.

The one-file binary also runs each Bash keeper (``awf_mcp.processes.children``) as itself with
the hidden first argument ``__awf_mcp_keeper__`` (``children.KEEPER_COMMAND``). That is
dispatched here, before the CLI is imported: a keeper starts once per command and needs
nothing but its own module.

``python -m`` puts the working directory first on ``sys.path``, and the working directory is
the project's: it is taken off before anything else is imported, so that a repository's
``anyio/`` or ``typer.py`` is never imported in place of the real one.
"""

import os
import sys

if not getattr(sys, "frozen", False) and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

if sys.argv[1:2] == ["__awf_mcp_keeper__"]:
    from awf_mcp.processes.children import run_frozen_keeper

    run_frozen_keeper(sys.argv[2:])

if sys.argv[1:2] == ["__awf_mcp_shared__"] and len(sys.argv) == 3:
    from awf_mcp.cli.shared import main as run_shared_server

    run_shared_server(sys.argv[2])

from awf_mcp.cli.main import main

if __name__ == "__main__":
    main()
