"""``python -m awf_mcp``: the same command line as ``awf-mcp``; the one-file binary's entry.

The one-file binary also runs each Bash keeper (``awf_mcp.ops.children``) as itself with
the hidden first argument ``__awf_mcp_keeper__`` (``children.KEEPER_COMMAND``). That is
dispatched here, before the CLI is imported: a keeper starts once per command and needs
nothing but its own module.
"""

import sys

if sys.argv[1:2] == ["__awf_mcp_keeper__"]:
    from awf_mcp.ops.children import run_frozen_keeper

    run_frozen_keeper(sys.argv[2:])

from awf_mcp.cli.main import main

if __name__ == "__main__":
    main()
