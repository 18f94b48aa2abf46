"""awf_mcp.processes.startshim: the single executable's start-up shim, installed once per version."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import awf_mcp
from awf_mcp.processes import startshim
from awf_mcp.processes.containment.policy import SandboxPolicy, deny_read


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "bundle" / startshim.SHIM_NAME
    path.parent.mkdir()
    path.write_bytes(b"\x7fELF the shim")
    return path


def test_it_is_copied_executable_and_only_once(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "state" / "bin"
    first = startshim.installed_shim(str(source), str(directory))
    assert first == str(directory / f"awf-mcp-shim-{awf_mcp.__version__}")
    assert Path(first).read_bytes() == source.read_bytes() and os.access(first, os.X_OK)
    inode = os.stat(first).st_ino
    assert startshim.installed_shim(str(source), str(directory)) == first
    assert os.stat(first).st_ino == inode  # the same file: not rewritten
    assert sorted(os.listdir(directory)) == [Path(first).name]  # no temporary file left


def test_a_changed_or_damaged_copy_is_replaced(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "state" / "bin"
    target = Path(startshim.installed_shim(str(source), str(directory)) or "")
    target.write_bytes(b"\x7fELF the shim, and more")
    assert startshim.installed_shim(str(source), str(directory)) == str(target)
    assert target.read_bytes() == source.read_bytes()


def test_nothing_to_copy_or_nowhere_to_put_it_is_none(source: Path, tmp_path: Path) -> None:
    assert startshim.installed_shim(str(tmp_path / "missing"), str(tmp_path / "bin")) is None
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert startshim.installed_shim(str(source), str(blocked / "bin")) is None


def test_outside_the_single_executable_a_client_runs_the_executable_itself() -> None:
    assert startshim.bundled_shim() is None
    assert startshim.shim_command("/usr/local/bin/awf-mcp") == ["/usr/local/bin/awf-mcp"]


def test_its_directory_is_one_no_contained_process_can_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    directory = startshim.shim_directory()
    assert directory == str(tmp_path / "state" / "awf-mcp" / "bin")
    denied = deny_read.__wrapped__(SandboxPolicy())  # not a list cached for another test's home
    assert any(directory.startswith(path.rstrip("/") + "/") for path in denied), denied
