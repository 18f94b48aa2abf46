"""Where plugins live outside ``sys.path``: the directories the loader searches and the installer fills.

The frozen single executable sees no site-packages, so its plugins are installed
into (and loaded from) plugin directories: ``AWF_MCP_PLUGIN_PATH``
(``os.pathsep``-separated), then ``$XDG_DATA_HOME/awf-mcp/plugins``.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_PLUGIN_PATH = "AWF_MCP_PLUGIN_PATH"


def plugin_dirs() -> list[Path]:
    """The extra directories searched for plugin distributions, in order."""
    dirs = [Path(p) for p in os.environ.get(ENV_PLUGIN_PATH, "").split(os.pathsep) if p]
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    dirs.append(Path(data_home) / "awf-mcp" / "plugins")
    return dirs
