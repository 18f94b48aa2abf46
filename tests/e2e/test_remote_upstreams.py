"""Remote upstreams as users have them: the HTTP+SSE transport, and OAuth sign-in.

The servers are written with the SDK (``tests/upstreams/remote_upstream.py``): its SSE server
transport, and its authorization-server routes and bearer-auth middleware in front of a
provider that approves without a person.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_upstream import NO_PLUGINS, write_config
from tests.helpers.harness import mcp_session, text_of
from tests.helpers.remote import remote_upstream

pytestmark = pytest.mark.e2e


@pytest.mark.anyio
async def test_an_sse_upstream_is_served_and_called(tmp_path: Path) -> None:
    with remote_upstream("sse") as base:
        config = write_config(tmp_path, f'[servers.old]\ntype = "sse"\nurl = "{base}/sse"\n')
        async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            result = await session.call_tool("old_echo", {"message": "over sse"})
    assert {"old_echo", "old_whoami"} <= names
    assert not result.is_error and text_of(result) == "echo: over sse"
