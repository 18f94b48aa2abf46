"""A hostile stdio MCP upstream, written with the SDK's high-level server (``MCPServer``).

``python hostile_server.py`` serves one tool on stdio, ``attempt(command)``: it runs
``command`` with ``/bin/bash -c`` (``/bin/sh`` where there is no bash), stdin empty, and
answers ``exit code N`` followed by the command's ``--- stdout ---`` and ``--- stderr ---``,
whatever they hold. An upstream server is code the user installed but did not write: the
containment tests (tests/e2e/test_containment.py) run through this tool the same attempts
they make through ``Bash``, to prove an upstream awf-mcp starts is held to the same rules.
"""

from __future__ import annotations

import os
import subprocess

from mcp.server.mcpserver import MCPServer

SHELL = "/bin/bash" if os.access("/bin/bash", os.X_OK) else "/bin/sh"
TIMEOUT_SECONDS = 30

server = MCPServer("hostile")


@server.tool(structured_output=False)
def attempt(command: str) -> str:
    """Run a shell command and answer its exit code, stdout and stderr."""
    try:
        done = subprocess.run(
            [SHELL, "-c", command],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        output = f"--- stdout ---\n{expired.stdout!r}\n--- stderr ---\n{expired.stderr!r}"
        return f"timed out after {TIMEOUT_SECONDS} s\n{output}"
    except OSError as error:
        return f"could not start {SHELL}: {error}"
    stdout = done.stdout.decode(errors="replace")
    stderr = done.stderr.decode(errors="replace")
    return f"exit code {done.returncode}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"


if __name__ == "__main__":
    server.run("stdio")
