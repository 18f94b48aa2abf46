"""The interpreter that runs pip, and running it: one sentence for every failure.

Contract
--------
:func:`find_python` picks the Python that runs pip (``$AWF_MCP_PYTHON``; else, when
not frozen, this interpreter; else ``python3``/``python`` on ``PATH``) and insists on
pip >= 22.2 (``install --report``/``--dry-run``). :func:`run_pip` runs
``python -m pip ARGS`` with no input, in an environment without what a PyInstaller
bootloader or the user's pip settings would add, within 15 minutes. A failure is a
:class:`~awf_mcp.errors.UserError` when pip's own error line says the request cannot
be met (no such distribution, conflicting requirements, a bad wheel or path), an
:class:`~awf_mcp.errors.ExecutionError` otherwise, and a
:class:`~awf_mcp.errors.SystemFault` when there is no usable Python; each one is
``WHAT: pip's line`` (:func:`pip_error`).

This module uses the standard library only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence

from awf_mcp.errors import ExecutionError, SystemFault, UserError
from awf_mcp.processes.childenv import child_environment

ENV_PYTHON = "AWF_MCP_PYTHON"
MIN_PIP = (22, 2)
"""``pip install --report`` (and ``--dry-run``) arrived in pip 22.2."""

_PIP_TIMEOUT = 900.0
_PIP_ENV = {
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_INPUT": "1",
    "PIP_NO_WARN_SCRIPT_LOCATION": "1",
    "PYTHONNOUSERSITE": "1",
}


def _child_env() -> dict[str, str]:
    """The environment for pip: this one, without what a PyInstaller bootloader set for itself."""
    env = child_environment()
    for var in ("PYTHONPATH", "PYTHONHOME", "PIP_TARGET", "PIP_PREFIX", "PIP_USER", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(var, None)
    env.update(_PIP_ENV)
    return env


def _pip_version(python: str) -> tuple[int, ...] | None:
    try:
        done = subprocess.run(
            [python, "-m", "pip", "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env=_child_env(),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.match(r"pip (\d+)\.(\d+)", done.stdout.strip())
    if done.returncode != 0 or match is None:
        return None
    return int(match.group(1)), int(match.group(2))


def find_python() -> str:
    """The Python interpreter that will run pip.

    ``$AWF_MCP_PYTHON`` when set; else, when not frozen, ``sys.executable``;
    else the first ``python3``/``python`` on ``PATH`` whose ``-m pip --version``
    works. Raises :class:`SystemFault` when there is none, or when its pip is
    older than 22.2.
    """
    explicit = os.environ.get(ENV_PYTHON, "").strip()
    if explicit:
        candidates = [explicit]
    elif not getattr(sys, "frozen", False) and sys.executable:
        candidates = [sys.executable]
    else:
        candidates = [found for name in ("python3", "python") if (found := shutil.which(name))]
    old: list[str] = []
    for python in candidates:
        version = _pip_version(python)
        if version is None:
            continue
        if version < MIN_PIP:
            old.append(f"{python} has pip {version[0]}.{version[1]}")
            continue
        return python
    if explicit:
        problem = (
            old[0] if old else f"{ENV_PYTHON}={explicit} cannot run pip ({explicit} -m pip --version failed)"
        )
    elif old:
        problem = old[0]
    else:
        problem = "found no Python with pip (tried python3 and python on PATH)"
    raise SystemFault(
        f"plugin installation needs Python 3 with pip >= {MIN_PIP[0]}.{MIN_PIP[1]}, but {problem}: "
        f"install Python 3 with pip, or set {ENV_PYTHON} to an interpreter that has it"
    )


def pip_error(stderr: str) -> str:
    """The line of pip's output that says what went wrong."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if "conflict is caused by" in line:
            detail: list[str] = []
            for item in lines[index + 1 :]:
                if not item.startswith(" "):
                    break
                detail.append(item.strip().replace("The user requested (constraint)", "awf-mcp has"))
            return "conflicting requirements: " + "; ".join(detail)
    errors = [line.removeprefix("ERROR: ").strip() for line in lines if line.startswith("ERROR:")]
    errors = [line for line in errors if not line.startswith("ResolutionImpossible")]
    if errors:
        return errors[-1]
    return lines[-1].strip() if lines else "pip printed nothing"


_USER_FAULTS = (
    "No matching distribution",
    "Could not find a version",
    "conflicting requirements",
    "conflicting dependencies",
    "is not a supported wheel",
    "Invalid requirement",
    "does not exist",
    "has an invalid wheel",
    "Does not appear to be a Python project",
)


def run_pip(python: str, args: Sequence[str], what: str) -> subprocess.CompletedProcess[str]:
    """``python -m pip ARGS``; a failure raises an error that starts with WHAT."""
    command = [python, "-m", "pip", *args]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=_PIP_TIMEOUT,
            env=_child_env(),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise ExecutionError(f"{what}: pip did not finish within {_PIP_TIMEOUT:.0f} s") from exc
    except OSError as exc:
        raise SystemFault(f"{what}: cannot run {python}: {exc.strerror or exc}") from exc
    if done.returncode != 0:
        reason = pip_error(f"{done.stdout}\n{done.stderr}")
        error = UserError if any(marker in reason for marker in _USER_FAULTS) else ExecutionError
        raise error(f"{what}: {reason}")
    return done
