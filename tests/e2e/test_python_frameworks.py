"""awf-mcp driven by a Python agent framework, as docs/python-frameworks.md shows it.

The OpenAI Agents SDK (``openai-agents``, on the ``mcp`` 2.x SDK) starts ``awf-mcp serve`` with
its own ``MCPServerStdio``, in one session: it lists every built-in, calls each, gets an outside
path back as a tool error, and keeps a background job across calls of that session. The
docs' example is this test's code; no model is involved (the framework's MCP layer is what
reaches awf-mcp).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import agents.mcp as agents_mcp  # openai-agents, from the test extra
import anyio
import pytest

from tests.helpers.harness import server_command, server_env

pytestmark = pytest.mark.e2e


BUILTINS = {"Bash", "BashOutput", "Edit", "Glob", "Grep", "KillShell", "Read", "Write"}


def text(result: Any) -> str:
    return "".join(getattr(item, "text", "") for item in result.content)


def test_openai_agents_lists_and_calls_every_builtin_in_one_session(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    command = server_command("serve", "--root", str(tmp_path))

    async def drive() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        params = {"command": command[0], "args": command[1:], "env": server_env({"AWF_MCP_NO_PLUGINS": "1"})}
        # One session for the whole run; a generous timeout, as a Bash call may take long.
        async with agents_mcp.MCPServerStdio(
            params=params, name="awf", client_session_timeout_seconds=120, cache_tools_list=True
        ) as server:
            seen["tools"] = {tool.name for tool in await server.list_tools()}
            seen["read"] = await server.call_tool("Read", {"path": "notes.txt"})
            seen["write"] = await server.call_tool("Write", {"path": "new.txt", "content": "gamma\n"})
            seen["edit"] = await server.call_tool("Edit", {"path": "new.txt", "old": "gamma", "new": "delta"})
            seen["glob"] = await server.call_tool("Glob", {"pattern": "*.txt"})
            seen["grep"] = await server.call_tool("Grep", {"pattern": "delta"})
            seen["bash"] = await server.call_tool("Bash", {"command": "cat new.txt"})
            seen["job"] = await server.call_tool(
                "Bash", {"command": "echo from-the-job; sleep 30", "run_in_background": True}
            )
            for _ in range(100):
                seen["output"] = await server.call_tool("BashOutput", {"job_id": "bash_1"})
                if "from-the-job" in text(seen["output"]):
                    break
                await anyio.sleep(0.05)
            seen["kill"] = await server.call_tool("KillShell", {"job_id": "bash_1"})
            seen["outside"] = await server.call_tool("Read", {"path": "/etc/passwd"})
        return seen

    seen = anyio.run(drive)
    assert seen["tools"] == BUILTINS
    assert "alpha" in text(seen["read"]) and not seen["read"].is_error
    assert not seen["write"].is_error and not seen["edit"].is_error
    assert "new.txt" in text(seen["glob"]) and "notes.txt" in text(seen["glob"])
    assert "new.txt" in text(seen["grep"])
    assert "delta" in text(seen["bash"]) and not seen["bash"].is_error
    assert "bash_1" in text(seen["job"]) and "from-the-job" in text(seen["output"])
    assert "killed" in text(seen["kill"])
    assert seen["outside"].is_error and "outside" in text(seen["outside"]).lower()
    assert (tmp_path / "new.txt").read_text() == "delta\n"
