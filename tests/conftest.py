"""Shared fixtures: the anyio backend, a sandbox root, the test-only plugin's presence."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from importlib import metadata
from pathlib import Path

import pytest

from awf_mcp.builtins import BuiltinTools, Sandbox


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty directory to serve as the sandbox root."""
    directory = tmp_path / "root"
    directory.mkdir()
    return directory


@pytest.fixture
async def tools(root: Path) -> AsyncIterator[BuiltinTools]:
    """The built-in tools confined to ``root``, closed in the test's own event loop (Bash keeps a
    keeper waiting for its next command, as a server does until it stops)."""
    provider = BuiltinTools(Sandbox([str(root)]))
    yield provider
    await provider.close()


def testkit_installed() -> bool:
    """True when tests/fixtures/awf-plugin-testkit is installed (CI installs it)."""
    return any(ep.name == "testkit" for ep in metadata.entry_points(group="awf_mcp"))


@pytest.fixture
def testkit() -> None:
    """Require the test-only plugin; its absence is an installation error, not a skip."""
    if not testkit_installed():
        pytest.fail("awf-plugin-testkit is not installed: pip install -e tests/fixtures/awf-plugin-testkit")


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """An empty project directory and an empty home directory: ``(project, home)``."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, home


@pytest.fixture(autouse=True, scope="session")
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user's state directory (approvals, pins, ledgers) is the test session's own.

    Every server the tests start inherits it, so no test reads or changes the real
    user's approvals or sign-ins, and none depends on what an earlier run recorded.
    """
    saved = os.environ.get("XDG_STATE_HOME")
    saved_store = os.environ.get("AWF_MCP_TOKEN_STORE")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    # OAuth tokens the tests obtain stay in that directory too, never in the user's keyring.
    os.environ["AWF_MCP_TOKEN_STORE"] = "file"
    yield
    for name, value in (("XDG_STATE_HOME", saved), ("AWF_MCP_TOKEN_STORE", saved_store)):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def _fresh_state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """And each test's own, inside it: what one test pinned or approved is not another's first use.

    (An upstream may list more tools to an agent that supports more: a test that met it first
    without sampling would otherwise leave the tool it adds for one that samples held back.)
    """
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture(autouse=True)
def _sys_path_restored() -> Iterator[None]:
    """Undo what a test's in-process plugin load appended to ``sys.path`` (plugin directories).

    The loader extends ``sys.path`` once per process, as a server should; in one test
    process, a plugin directory left behind by one test would load its plugins in the next.
    """
    saved = list(sys.path)
    yield
    sys.path[:] = saved
