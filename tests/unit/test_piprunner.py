"""``awf_mcp.install.piprunner``: which Python runs pip, and pip's failures as one sentence."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from awf_mcp.errors import ExecutionError, SystemFault, UserError
from awf_mcp.install import piprunner


def test_find_python_prefers_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWF_MCP_PYTHON", sys.executable)
    assert piprunner.find_python() == sys.executable


def test_find_python_is_this_interpreter_when_not_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWF_MCP_PYTHON", raising=False)
    assert piprunner.find_python() == sys.executable


def test_find_python_frozen_searches_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AWF_MCP_PYTHON", raising=False)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert piprunner.find_python() == str(bin_dir / "python3")


def test_find_python_without_pip_is_a_system_fault(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.delenv("AWF_MCP_PYTHON", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemFault, match=r"install Python 3 with pip, or set AWF_MCP_PYTHON"):
        piprunner.find_python()
    fake = tmp_path / "nopip"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("AWF_MCP_PYTHON", str(fake))
    with pytest.raises(SystemFault, match=r"AWF_MCP_PYTHON=.*nopip cannot run pip"):
        piprunner.find_python()


def test_pip_error_lines_are_condensed() -> None:
    conflict = textwrap.dedent(
        """\
        ERROR: Cannot install x==1.0 because these package versions have conflicting dependencies.

        The conflict is caused by:
            x 1.0 depends on awf-mcp>=9
            The user requested (constraint) awf-mcp==0.1.0

        To fix this you could try to:
        ERROR: ResolutionImpossible: for help visit https://pip.pypa.io
        """
    )
    assert piprunner.pip_error(conflict) == (
        "conflicting requirements: x 1.0 depends on awf-mcp>=9; awf-mcp has awf-mcp==0.1.0"
    )
    missing = "ERROR: Could not find a version\nERROR: No matching distribution found for y\n"
    assert piprunner.pip_error(missing) == "No matching distribution found for y"
    assert piprunner.pip_error("") == "pip printed nothing"


def test_a_failed_pip_run_is_a_user_error_or_an_execution_error_naming_what_failed() -> None:
    with pytest.raises(
        UserError, match=r"^cannot fetch: No matching distribution found for awf-no-such-dist"
    ):
        piprunner.run_pip(
            sys.executable,
            ["download", "--no-index", "--dest", "/nonexistent", "awf-no-such-dist"],
            "cannot fetch",
        )
    with pytest.raises(ExecutionError, match=r"^cannot run it: "):
        piprunner.run_pip(sys.executable, ["no-such-pip-command"], "cannot run it")
