"""The scripts install only into the Python they were told to use.

``scripts/build-binary.sh`` picks the Python the user named and checks it from outside the
checkout; ``tests/run.sh`` installs into a venv of the tests' own, never the product's
``.venv``. Each runs on a copy of the checkout's files, with a stand-in interpreter that
writes down every call (its arguments and working directory) and then runs the real
interpreter without site-packages (``-S``), where ``awf_mcp`` is importable only from the
working directory. ``-m pip``, ``-m pytest`` and ``-m PyInstaller`` are written down and
not run (the build itself is CI's, ``.ci/run``); ``-m venv DIR`` puts a stand-in in DIR.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

STAND_IN = """#!/bin/sh
echo "$0|$PWD|$*" >> "{log}"
case "$1 $2" in
  "-m pip" | "-m pytest") exit 0 ;;
  "-m venv") mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0 ;;
  "-m PyInstaller") exit 9 ;;
esac
exec "{python}" -S "$@"
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    copy = tmp_path / "checkout"
    (copy / "scripts").mkdir(parents=True)
    (copy / "tests").mkdir()
    shutil.copy(REPO / "scripts" / "build-binary.sh", copy / "scripts")
    shutil.copy(REPO / "tests" / "run.sh", copy / "tests")
    shutil.copytree(REPO / "awf_mcp", copy / "awf_mcp", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "native", copy / "native")
    return copy


def stand_in(path: Path, log: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(STAND_IN.format(log=log, python=sys.executable))
    path.chmod(0o755)
    return path


def script(path: str | Path, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a bash script with nothing activated: no PYTHON, VIRTUAL_ENV, PYTHONPATH or AWF_MCP_VENV."""
    unset = {"PYTHON", "VIRTUAL_ENV", "PYTHONPATH", "AWF_MCP_VENV"}
    environ = {k: v for k, v in os.environ.items() if k not in unset} | env
    return subprocess.run(
        ["bash", str(path), *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=60
    )


def build(checkout: Path, path_dir: Path) -> subprocess.CompletedProcess[str]:
    return script(
        "scripts/build-binary.sh", cwd=checkout, PATH=f"{path_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"
    )


def calls(log: Path) -> list[list[str]]:
    return [line.split("|") for line in log.read_text().splitlines()] if log.exists() else []


def test_without_a_named_python_or_a_venv_it_says_what_to_do_and_installs_nothing(
    checkout: Path, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    stand_in(tmp_path / "bin" / "python3", log)
    stand_in(tmp_path / "bin" / "python", log)
    result = build(checkout, tmp_path / "bin")
    assert result.returncode == 1
    assert "python3 -m venv .venv && .venv/bin/pip install ." in result.stderr
    assert "PYTHON=" in result.stderr
    assert calls(log) == []  # not one call, let alone a pip install, to the python3 on PATH


def test_the_checkouts_venv_is_used_and_awf_mcp_is_checked_from_outside_the_checkout(
    checkout: Path, tmp_path: Path
) -> None:
    on_path, in_venv = tmp_path / "path.log", tmp_path / "venv.log"
    stand_in(tmp_path / "bin" / "python3", on_path)
    venv_python = stand_in(checkout / ".venv" / "bin" / "python", in_venv)
    result = build(checkout, tmp_path / "bin")
    assert result.returncode == 9, result.stderr  # the stand-in's PyInstaller
    assert calls(on_path) == []
    made = calls(in_venv)
    assert {program for program, _, _ in made} == {str(venv_python)}
    pip_installs = [args for _, _, args in made if args.startswith("-m pip install")]
    # awf_mcp is importable from the checkout's directory only: that does not count as installed.
    assert any(args.endswith(" -e .") for args in pip_installs), made
    imports = [cwd for _, cwd, args in made if args.startswith("-c import awf_mcp")]
    assert imports and all(cwd == "/" for cwd in imports)
    assert f"building with {venv_python}" in result.stdout


def test_a_relative_python_named_by_the_user_is_taken_from_where_they_stand(
    checkout: Path, tmp_path: Path
) -> None:
    log = tmp_path / "named.log"
    named = stand_in(tmp_path / "elsewhere" / "py", log)
    result = script(checkout / "scripts" / "build-binary.sh", cwd=tmp_path, PYTHON="elsewhere/py")
    assert result.returncode == 9, result.stderr
    assert {program for program, _, _ in calls(log)} == {str(named)}


def test_the_test_command_installs_into_a_venv_of_its_own_and_leaves_the_products_alone(
    checkout: Path, tmp_path: Path
) -> None:
    product, tests = tmp_path / "product.log", tmp_path / "tests.log"
    stand_in(checkout / ".venv" / "bin" / "python", product)
    base = stand_in(tmp_path / "bin" / "python3", tests)
    tools = tmp_path / "tools"  # what the script runs, but no npm: the Node.js tools are skipped
    tools.mkdir()
    for tool in ("bash", "sh", "dirname", "mkdir", "cp"):
        (tools / tool).symlink_to(shutil.which(tool) or tool)
    result = script("tests/run.sh", "-k", "x", cwd=checkout, PATH=f"{tmp_path / 'bin'}{os.pathsep}{tools}")
    assert result.returncode == 0, result.stderr
    assert calls(product) == []
    made = calls(tests)
    venv_python = checkout / ".venv-test" / "bin" / "python"
    assert made[0][0] == str(base) and made[0][2] == "-m venv .venv-test"
    assert {program for program, _, _ in made[1:]} == {".venv-test/bin/python"}
    assert venv_python.exists()
    assert made[-1][2] == "-m pytest -k x"
