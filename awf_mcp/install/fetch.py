"""From what the user typed to wheels on disk: plugin specs, local builds, the staging install.

Contract
--------
:func:`plugin_request` reads a spec: a requirement for the package index
(``awf-plugin-echo``, ``awf-plugin-echo==1.0``) or a local path, a source directory
(built into a wheel with ``pip wheel --no-deps``) or a ``.whl`` file. It returns the
requirement to give pip, the root distribution's normalized name and the extra
places to look for wheels. A spec that is neither is a
:class:`~awf_mcp.errors.UserError` naming what to pass instead.

:func:`stage` installs exactly the chosen distributions, without their dependencies,
into a staging directory (``pip install --no-deps --target``, wheels for the target
interpreter only), for the installer to move into the plugin directory.

This module uses the standard library only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from awf_mcp.errors import ExecutionError, UserError
from awf_mcp.install.manifest import normalize
from awf_mcp.install.piprunner import run_pip
from awf_mcp.install.resolve import Resolved, TargetSpec

_PATH_LIKE = re.compile(r"^(\.|~|/)|\.whl$", re.IGNORECASE)
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*(.*)$")
_VERSION_CLAUSE = re.compile(r"^(==|>=|<=|~=|!=|<|>|===|;|@)")


@dataclass(frozen=True, slots=True)
class PluginRequest:
    """A plugin spec made ready for pip."""

    requirement: str
    """What pip is asked for: the requirement, or the path of a local wheel."""
    root: str
    """The root distribution's normalized name."""
    find_links: list[str]
    """Where pip looks for wheels besides the index (a local wheel's directory first)."""
    local: bool
    """A local path: try to resolve it offline first."""


def plugin_request(python: str, spec: str, work: Path, find_links: Sequence[str]) -> PluginRequest:
    """SPEC (a requirement or a local path) as a :class:`PluginRequest`; builds a source directory in WORK."""
    if _is_local(spec):
        wheel = _local_wheel(python, spec, work)
        root = normalize(wheel.name.split("-", 1)[0])
        return PluginRequest(str(wheel), root, [str(wheel.parent), *find_links], local=True)
    match = _REQUIREMENT_NAME.match(spec)
    if match is None or (match.group(3) and not _VERSION_CLAUSE.match(match.group(3))):
        raise UserError(
            f"'{spec}' is not a package requirement or an existing path: "
            "pass a name such as awf-plugin-echo or awf-plugin-echo==1.0, "
            "a plugin directory or a wheel"
        )
    return PluginRequest(spec, normalize(match.group(1)), list(find_links), local=False)


def _is_local(spec: str) -> bool:
    if "://" in spec or "@" in spec:
        return False
    return bool(_PATH_LIKE.search(spec)) or os.sep in spec or "/" in spec or Path(spec).exists()


def _local_wheel(python: str, spec: str, work: Path) -> Path:
    path = Path(spec).expanduser()
    if not path.exists():
        raise UserError(
            f"no such file or directory: {spec}; pass a plugin directory, a .whl file or a package name"
        )
    path = path.resolve()
    if path.is_dir():
        return _build_wheel(python, path, work / "built")
    if path.suffix.lower() == ".whl" and path.is_file():
        return path
    raise UserError(f"{spec} is neither a directory nor a .whl file; pass a plugin directory or a wheel")


def _build_wheel(python: str, source: Path, out: Path) -> Path:
    if not ((source / "pyproject.toml").is_file() or (source / "setup.py").is_file()):
        raise UserError(
            f"{source} is not a Python project (no pyproject.toml or setup.py): "
            "pass a plugin's source directory, a .whl file or a package name"
        )
    out.mkdir(parents=True, exist_ok=True)
    run_pip(
        python,
        ["wheel", "--no-deps", "--wheel-dir", str(out), str(source)],
        f"cannot build a wheel from {source}",
    )
    wheels = sorted(out.glob("*.whl"))
    if not wheels:
        raise ExecutionError(f"cannot build a wheel from {source}: pip wheel produced no .whl file")
    return wheels[0]


def stage(
    python: str,
    items: Sequence[Resolved],
    staging: Path,
    *,
    spec: TargetSpec,
    find_links: Sequence[str],
    what: str,
) -> None:
    """Install ITEMS alone (local wheels by path, others by exact version) into STAGING."""
    if not items:
        return
    args = ["install", "--no-deps", "--ignore-installed", "--target", str(staging)]
    args += spec.pip_options()
    for link in find_links:
        args += ["--find-links", str(link)]
    for item in items:
        local_file = item.local_file
        args.append(str(local_file) if local_file else f"{item.name}=={item.version}")
    run_pip(python, args, what)
