"""``python -m awf_mcp``: the same command line as ``awf-mcp``."""

from awf_mcp.cli.main import main

if __name__ == "__main__":
    main()
