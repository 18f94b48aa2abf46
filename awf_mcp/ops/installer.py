"""Install and uninstall plugins in a plugin directory, for the frozen binary and for pip installs.

Contract
--------
:func:`install` puts a plugin and the distributions it needs into a plugin
directory (default: the first of :func:`awf_mcp.ops.plugindirs.plugin_dirs`), where
the loader finds it. ``spec`` is a requirement for the package index
(``awf-plugin-echo``, ``awf-plugin-echo==1.0``) or a local path: a source
directory (built into a wheel first) or a ``.whl`` file.

Two rules make a plugin directory safe for the single executable:

* **The target is the running interpreter, not pip's.** pip runs under
  :func:`find_python`, which may be another Python than the one frozen inside
  the binary; pip is told the running interpreter's version, implementation,
  ABI and platform tags and accepts wheels only, so nothing is built for the
  wrong interpreter.
* **What awf-mcp already has is never installed again.** Every distribution
  visible to the running awf-mcp, outside plugin directories (in the binary:
  exactly what was bundled), is pinned to its version in a constraints file and
  offered to the resolver as a metadata-only stub wheel. pip resolves
  (``install --dry-run --ignore-installed --report``) so a plugin that needs a
  different ``awf-mcp``, ``mcp`` or ``pydantic`` fails with pip's conflict
  sentence; the bundled distributions are then dropped and only the rest is
  installed (``install --no-deps --target``), so nothing in the plugin
  directory shadows or duplicates the bundle. Distributions already in the
  target for another plugin are reused the same way rather than replaced.

A resolution that needs nothing beyond local files is tried offline first; the
package index is asked only when that fails.

The target holds ``awf-mcp-manifest.json``: for each installed root
distribution, its plugin names and the distributions that install added or
reused. :func:`uninstall` (by plugin or distribution name) removes exactly
those distributions (the files listed in each ``RECORD``, then the
``.dist-info``) that no other installed plugin still needs.

Failures are :class:`~awf_mcp.errors.UserError` (bad spec, unknown name,
unsatisfiable requirements), :class:`~awf_mcp.errors.ExecutionError` (pip
failed otherwise) or :class:`~awf_mcp.errors.SystemFault` (no Python with
pip), each one sentence ending with pip's own error line where there is one.

This module uses the standard library only.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path
from typing import Any

from awf_mcp.errors import ExecutionError, SystemFault, UserError
from awf_mcp.ops.childenv import child_environment
from awf_mcp.ops.plugindirs import plugin_dirs

__all__ = [
    "MANIFEST_NAME",
    "InstallReport",
    "TargetSpec",
    "bundled_distributions",
    "find_python",
    "install",
    "installed_plugins",
    "target_spec",
    "uninstall",
]

ENV_PYTHON = "AWF_MCP_PYTHON"
MANIFEST_NAME = "awf-mcp-manifest.json"
ENTRY_POINT_GROUP = "awf_mcp"
MIN_PIP = (22, 2)
"""``pip install --report`` (and ``--dry-run``) arrived in pip 22.2."""

_PIP_TIMEOUT = 900.0
_STUB_BUILD_TAG = "99999"
_PIP_ENV = {
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_INPUT": "1",
    "PIP_NO_WARN_SCRIPT_LOCATION": "1",
    "PYTHONNOUSERSITE": "1",
}


@dataclass(slots=True)
class InstallReport:
    """What :func:`install` did."""

    plugins: list[str]
    """Entry-point names (plugin names) the installed root distribution declares."""
    installed: list[tuple[str, str]]
    """Distributions written into the target, as (name, version), sorted."""
    target: Path
    """The plugin directory."""
    skipped_bundled: list[tuple[str, str]] = field(default_factory=list)
    """Required distributions awf-mcp already has, not installed again, as (name, version)."""
    reused: list[tuple[str, str]] = field(default_factory=list)
    """Required distributions already in the target for another plugin, left as they are."""
    distribution: str = ""
    """The root distribution's name."""

    def summary(self) -> str:
        """One line for people: what was installed where."""
        names = ", ".join(self.plugins) or "(none)"
        added = ", ".join(f"{n} {v}" for n, v in self.installed) or "nothing new"
        line = f"installed plugin {names} into {self.target}: {added}"
        if self.skipped_bundled:
            line += f"; {len(self.skipped_bundled)} already bundled with awf-mcp"
        return line


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """The interpreter and platform that installed wheels must fit: the running awf-mcp's."""

    python_version: str
    implementation: str
    abi: str
    platforms: tuple[str, ...]

    def pip_options(self) -> list[str]:
        """pip's ``--python-version/--implementation/--abi/--platform`` and wheels-only options."""
        options = [
            "--python-version",
            self.python_version,
            "--implementation",
            self.implementation,
            "--abi",
            self.abi,
            "--only-binary=:all:",
        ]
        for plat in self.platforms:
            options += ["--platform", plat]
        return options

    @property
    def best_tag(self) -> str:
        """The wheel tag pip ranks highest for this target (``cp311-cp311-manylinux_2_36_x86_64``)."""
        digits = self.python_version.replace(".", "")
        return f"{self.implementation}{digits}-{self.abi}-{self.platforms[0]}"


# ------------------------------------------------------------------ names and metadata


def normalize(name: str) -> str:
    """PEP 503 name normalization: ``Awf_Plugin.Echo`` -> ``awf-plugin-echo``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_name(name: str) -> str:
    return normalize(name).replace("-", "_")


def _parse_metadata(text: str) -> tuple[str, str, list[str]]:
    headers = HeaderParser().parsestr(text)
    return headers.get("Name", ""), headers.get("Version", ""), headers.get_all("Requires-Dist") or []


def _search_path() -> list[str]:
    """``sys.path`` without the plugin directories: where the running awf-mcp's own packages are."""

    excluded = {os.path.realpath(p) for p in plugin_dirs()}
    return [p for p in sys.path if os.path.realpath(p or os.curdir) not in excluded]


_VERSION = re.compile(r"^[A-Za-z0-9.+!_-]+$")


def bundled_distributions() -> dict[str, str]:
    """Distributions the running awf-mcp has outside plugin directories: normalized name -> version.

    In the frozen binary these are exactly the bundled ones; in a pip install,
    everything in its environment.
    """
    found: dict[str, str] = {}
    for dist in metadata.distributions(path=_search_path()):
        name, version = dist.metadata["Name"], dist.version
        if name and version and _VERSION.match(version):
            found.setdefault(normalize(name), version)
    return found


# ------------------------------------------------------------------ the interpreter that runs pip


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


def _platforms() -> tuple[str, ...]:
    plat = sysconfig.get_platform()
    if plat.startswith("linux-"):
        arch = plat.split("-", 1)[1]
        libc, libc_version = platform.libc_ver()
        match = re.match(r"(\d+)\.(\d+)", libc_version)
        if libc == "glibc" and match:
            major, minor = int(match.group(1)), int(match.group(2))
            tags = [f"manylinux_{major}_{m}_{arch}" for m in range(minor, 16, -1)]
            if (major, minor) >= (2, 17):
                tags.append(f"manylinux2014_{arch}")
                if arch in ("x86_64", "i686"):
                    tags += [f"manylinux_2_12_{arch}", f"manylinux2010_{arch}"]
                    tags += [f"manylinux_2_5_{arch}", f"manylinux1_{arch}"]
            return (*tags, f"linux_{arch}")
        return (f"linux_{arch}",)
    return (re.sub(r"[-.]", "_", plat),)


def target_spec() -> TargetSpec:
    """The running interpreter's version, implementation, ABI and platform tags, for pip."""
    major, minor = sys.version_info[:2]
    impl = {"cpython": "cp", "pypy": "pp"}.get(sys.implementation.name, sys.implementation.name[:2])
    abi = f"{impl}{major}{minor}"
    if sys.implementation.name == "cpython" and sysconfig.get_config_var("Py_GIL_DISABLED"):
        abi += "t"
    return TargetSpec(python_version=f"{major}.{minor}", implementation=impl, abi=abi, platforms=_platforms())


# ------------------------------------------------------------------ running pip


def _pip_error(stderr: str) -> str:
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


def _run_pip(python: str, args: Sequence[str], what: str) -> subprocess.CompletedProcess[str]:
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
        reason = _pip_error(f"{done.stdout}\n{done.stderr}")
        error = UserError if any(marker in reason for marker in _USER_FAULTS) else ExecutionError
        raise error(f"{what}: {reason}")
    return done


# ------------------------------------------------------------------ stubs, constraints, resolution


def _stub_wheel(directory: Path, name: str, version: str, tag: str, requires: Iterable[str] = ()) -> None:
    """A metadata-only wheel that stands for a distribution the target already has."""
    base = _wheel_name(name)
    info = f"{base}-{version}.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {req}" for req in requires]
    files = {
        f"{info}/METADATA": "\n".join(lines) + "\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: awf-mcp\nRoot-Is-Purelib: true\n"
        f"Tag: {tag}\nBuild: {_STUB_BUILD_TAG}\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    path = directory / f"{base}-{version}-{_STUB_BUILD_TAG}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)


@dataclass(slots=True)
class _Resolved:
    name: str
    version: str
    url: str

    @property
    def local_file(self) -> Path | None:
        if self.url.startswith("file://"):
            from urllib.parse import unquote, urlparse

            return Path(unquote(urlparse(self.url).path))
        return None


def _resolve(
    python: str,
    requirement: str,
    *,
    work: Path,
    provided: Mapping[str, tuple[str, str, list[str]]],
    spec: TargetSpec,
    find_links: Sequence[str],
    offline: bool,
    what: str,
) -> list[_Resolved]:
    """Run pip's resolver for ``requirement``.

    ``provided`` maps normalized name -> (name, version, requires): what the target has already.
    """
    stubs = work / "provided"
    stubs.mkdir(exist_ok=True)
    constraints = work / "constraints.txt"
    if not any(stubs.iterdir()):
        for display, version, requires in provided.values():
            _stub_wheel(stubs, display, version, spec.best_tag, requires)
        constraints.write_text(
            "".join(f"{display}=={version}\n" for display, version, _ in provided.values()), encoding="utf-8"
        )
    report = work / ("report-offline.json" if offline else "report.json")
    # --target (never written to) because pip < 23.3 allows platform options only with it.
    args = ["install", "--dry-run", "--ignore-installed", "--report", str(report)]
    args += ["--target", str(work / "dry-run-target")]
    args += spec.pip_options()
    args += ["--constraint", str(constraints), "--find-links", str(stubs)]
    for link in find_links:
        args += ["--find-links", link]
    if offline:
        args.append("--no-index")
    args.append(requirement)
    _run_pip(python, args, what)
    data = json.loads(report.read_text(encoding="utf-8"))
    resolved: list[_Resolved] = []
    for item in data.get("install", []):
        meta = item.get("metadata", {})
        resolved.append(
            _Resolved(
                name=str(meta.get("name", "")),
                version=str(meta.get("version", "")),
                url=str(item.get("download_info", {}).get("url", "")),
            )
        )
    return resolved


# ------------------------------------------------------------------ the target directory


def _manifest(target: Path) -> dict[str, Any]:
    path = target / MANIFEST_NAME
    if not path.is_file():
        return {"version": 1, "installs": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read {path}: {exc}; delete it to start the plugin directory afresh") from exc
    if not isinstance(data, dict) or not isinstance(data.get("installs"), dict):
        raise UserError(f"{path} is not an awf-mcp manifest; delete it to start the plugin directory afresh")
    return data


def _write_manifest(target: Path, data: Mapping[str, Any]) -> None:
    path = target / MANIFEST_NAME
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)


@dataclass(slots=True)
class _TargetDist:
    name: str
    version: str
    info: Path
    requires: list[str]
    plugins: list[str]


def _target_dists(target: Path) -> dict[str, _TargetDist]:
    found: dict[str, _TargetDist] = {}
    if not target.is_dir():
        return found
    for info in sorted(target.glob("*.dist-info")):
        meta = info / "METADATA"
        if not meta.is_file():
            continue
        name, version, requires = _parse_metadata(meta.read_text(encoding="utf-8", errors="replace"))
        if not name:
            continue
        found[normalize(name)] = _TargetDist(name, version, info, requires, _entry_point_names(info))
    return found


def _entry_point_names(info: Path) -> list[str]:
    path = info / "entry_points.txt"
    if not path.is_file():
        return []
    names: list[str] = []
    section = ""
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == ENTRY_POINT_GROUP and "=" in line and not line.startswith(("#", ";")):
            names.append(line.split("=", 1)[0].strip())
    return sorted(names)


def _record_paths(info: Path, target: Path) -> list[Path]:
    """The files a distribution installed, inside ``target`` (RECORD paths, mapped back from pip's layout)."""
    root = target.resolve()
    paths: list[Path] = []
    record = info / "RECORD"
    if record.is_file():
        with record.open(encoding="utf-8", errors="replace", newline="") as handle:
            for row in csv.reader(handle):
                if not row or not row[0]:
                    continue
                candidate = (info.parent / row[0]).resolve()
                if not candidate.is_relative_to(root):
                    # pip --target lays scripts and data out as ../../bin/x relative to the
                    # library dir, then moves them to the target: drop the leading "..".
                    parts = [part for part in Path(row[0]).parts if part != ".."]
                    candidate = root.joinpath(*parts) if parts else root
                if candidate != root and candidate.is_relative_to(root):
                    paths.append(candidate)
    return paths


def _remove_distribution(dist: _TargetDist, target: Path) -> None:
    root = target.resolve()
    parents: set[Path] = set()
    for path in _record_paths(dist.info, target):
        if path.suffix == ".py":
            for compiled in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
                compiled.unlink(missing_ok=True)
            parents.add(path.parent / "__pycache__")
        if path.is_file() or path.is_symlink():
            path.unlink()
        parents.add(path.parent)
    shutil.rmtree(dist.info, ignore_errors=True)
    for directory in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        current = directory
        while current != root and current.is_relative_to(root):
            if current.is_dir() and all(child.name == "__pycache__" for child in current.iterdir()):
                for child in current.iterdir():
                    shutil.rmtree(child, ignore_errors=True)
                current.rmdir()
            elif current.is_dir():
                break
            current = current.parent


def _merge_tree(source: Path, target: Path) -> None:
    """Move every file of ``source`` into ``target``, keeping directories other plugins share."""
    for directory, _dirs, files in os.walk(source):
        relative = Path(directory).relative_to(source)
        destination = target / relative
        destination.mkdir(parents=True, exist_ok=True)
        for name in files:
            os.replace(Path(directory) / name, destination / name)


def _default_target(target: Path | None) -> Path:
    if target is not None:
        return Path(target).expanduser()

    return plugin_dirs()[0]


# ------------------------------------------------------------------ install


_PATH_LIKE = re.compile(r"^(\.|~|/)|\.whl$", re.IGNORECASE)
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*(.*)$")


def _is_local(spec: str) -> bool:
    if "://" in spec or "@" in spec:
        return False
    return bool(_PATH_LIKE.search(spec)) or os.sep in spec or "/" in spec or Path(spec).exists()


def _build_wheel(python: str, source: Path, out: Path) -> Path:
    if not ((source / "pyproject.toml").is_file() or (source / "setup.py").is_file()):
        raise UserError(
            f"{source} is not a Python project (no pyproject.toml or setup.py): "
            "pass a plugin's source directory, a .whl file or a package name"
        )
    out.mkdir(parents=True, exist_ok=True)
    _run_pip(
        python,
        ["wheel", "--no-deps", "--wheel-dir", str(out), str(source)],
        f"cannot build a wheel from {source}",
    )
    wheels = sorted(out.glob("*.whl"))
    if not wheels:
        raise ExecutionError(f"cannot build a wheel from {source}: pip wheel produced no .whl file")
    return wheels[0]


def _wheel_root_name(wheel: Path) -> str:
    return normalize(wheel.name.split("-", 1)[0])


def _local_requirement(python: str, spec: str, work: Path) -> tuple[str, str, list[str]]:
    """A local spec as (requirement for pip, root distribution name, extra find-links)."""
    path = Path(spec).expanduser()
    if not path.exists():
        raise UserError(
            f"no such file or directory: {spec}; pass a plugin directory, a .whl file or a package name"
        )
    path = path.resolve()
    if path.is_dir():
        wheel = _build_wheel(python, path, work / "built")
    elif path.suffix.lower() == ".whl" and path.is_file():
        wheel = path
    else:
        raise UserError(f"{spec} is neither a directory nor a .whl file; pass a plugin directory or a wheel")
    return str(wheel), _wheel_root_name(wheel), [str(wheel.parent)]


def install(
    spec: str,
    *,
    target: Path | None = None,
    find_links: Sequence[str | Path] = (),
) -> InstallReport:
    """Install plugin ``spec`` (index requirement, source directory or wheel) into ``target``.

    ``target`` defaults to the first plugin directory (created when missing).
    ``find_links`` are extra directories or URLs of wheels for pip. Reinstalling
    a plugin replaces its previous version. See the module docstring for the
    resolution rules and failures.
    """
    spec = spec.strip()
    if not spec:
        raise UserError("no plugin given: pass a package name, a plugin directory or a .whl file")
    directory = _default_target(target)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SystemFault(f"cannot create plugin directory {directory}: {exc.strerror or exc}") from exc
    python = find_python()
    spec_target = target_spec()
    links = [str(link) for link in find_links]

    with tempfile.TemporaryDirectory(prefix="awf-mcp-install-") as scratch:
        work = Path(scratch)
        local = _is_local(spec)
        if local:
            requirement, root, extra = _local_requirement(python, spec, work)
            links_all = [*extra, *links]
        else:
            match = _REQUIREMENT_NAME.match(spec)
            if match is None or (
                match.group(3) and not re.match(r"^(==|>=|<=|~=|!=|<|>|===|;|@)", match.group(3))
            ):
                raise UserError(
                    f"'{spec}' is not a package requirement or an existing path: "
                    "pass a name such as awf-plugin-echo or awf-plugin-echo==1.0, "
                    "a plugin directory or a wheel"
                )
            requirement, root = spec, normalize(match.group(1))
            links_all = links

        manifest = _manifest(directory)
        installs: dict[str, Any] = manifest["installs"]
        present = _target_dists(directory)
        own_before = set(installs.get(root, {}).get("distributions", {})) | {root}
        needed_by_others = {
            dist for key, entry in installs.items() if key != root for dist in entry.get("distributions", {})
        }
        bundled = bundled_distributions()
        bundled.pop(root, None)
        provided: dict[str, tuple[str, str, list[str]]] = {
            name: (name, version, []) for name, version in bundled.items()
        }
        for name, dist in present.items():
            if name not in bundled and (name not in own_before or name in needed_by_others):
                provided[name] = (dist.name, dist.version, dist.requires)

        what = f"cannot install {spec}"
        resolved: list[_Resolved] | None = None
        if local:
            try:
                resolved = _resolve(
                    python,
                    requirement,
                    work=work,
                    provided=provided,
                    spec=spec_target,
                    find_links=links_all,
                    offline=True,
                    what=what,
                )
            except (UserError, ExecutionError):
                resolved = None
        if resolved is None:
            resolved = _resolve(
                python,
                requirement,
                work=work,
                provided=provided,
                spec=spec_target,
                find_links=links_all,
                offline=False,
                what=what,
            )

        skipped: list[tuple[str, str]] = []
        reused: list[tuple[str, str]] = []
        fresh: list[_Resolved] = []
        for item in resolved:
            key = normalize(item.name)
            if key in bundled:
                skipped.append((item.name, item.version))
            elif key in provided:
                reused.append((item.name, item.version))
            else:
                fresh.append(item)

        staging = work / "staging"
        if fresh:
            args = ["install", "--no-deps", "--ignore-installed", "--target", str(staging)]
            args += spec_target.pip_options()
            for link in links_all:
                args += ["--find-links", str(link)]
            for item in fresh:
                local_file = item.local_file
                args.append(str(local_file) if local_file else f"{item.name}=={item.version}")
            _run_pip(python, args, what)

        staged = _target_dists(staging)
        root_dist = staged.get(root) or present.get(root)
        plugins = root_dist.plugins if root_dist else []
        if not plugins:
            raise UserError(
                f"{spec} declares no '{ENTRY_POINT_GROUP}' entry point, so it is not an awf-mcp plugin; "
                "nothing was installed"
            )
        for name in staged:
            if name in present:
                _remove_distribution(present[name], directory)
        # Distributions the previous install of this plugin had and this one no longer needs.
        kept = {normalize(item.name) for item in resolved}
        for name in own_before - kept - needed_by_others:
            if name in present and name not in staged:
                _remove_distribution(present[name], directory)
        if staging.is_dir():
            _merge_tree(staging, directory)

    installs[root] = {
        "spec": spec,
        "distribution": root_dist.name if root_dist else root,
        "plugins": plugins,
        "distributions": {
            normalize(n): v for n, v in sorted([*((i.name, i.version) for i in fresh), *reused])
        },
    }
    _write_manifest(directory, manifest)
    return InstallReport(
        plugins=plugins,
        installed=sorted((item.name, item.version) for item in fresh),
        target=directory,
        skipped_bundled=sorted(skipped),
        reused=sorted(reused),
        distribution=root_dist.name if root_dist else root,
    )


# ------------------------------------------------------------------ uninstall and listing


def uninstall(name: str, *, target: Path | None = None) -> list[str]:
    """Remove plugin ``name`` (entry-point or distribution name) from ``target``.

    Removes the distributions its install added, except those another installed
    plugin still needs, and returns their names, sorted. Raises
    :class:`UserError` when ``target`` holds no such plugin.
    """
    directory = _default_target(target)
    manifest = _manifest(directory)
    installs: dict[str, Any] = manifest["installs"]
    present = _target_dists(directory)
    wanted = normalize(name)
    root = next(
        (
            key
            for key, entry in sorted(installs.items())
            if key == wanted
            or name in entry.get("plugins", [])
            or normalize(entry.get("distribution", "")) == wanted
        ),
        None,
    )
    if root is None:
        # Installed without a manifest entry (e.g. pip install --target): remove that one distribution.
        root = next(
            (key for key, dist in present.items() if key == wanted or name in dist.plugins),
            None,
        )
        if root is None:
            known = sorted({p for entry in installs.values() for p in entry.get("plugins", [])})
            hint = f"installed there: {', '.join(known)}" if known else "it holds no plugins"
            raise UserError(f"no plugin '{name}' in {directory}; {hint}")
        own = {root}
    else:
        own = set(installs[root].get("distributions", {})) | {root}
    still_needed = {
        dist for key, entry in installs.items() if key != root for dist in entry.get("distributions", {})
    }
    removed: list[str] = []
    for dist_name in sorted(own - still_needed):
        dist = present.get(dist_name)
        if dist is not None:
            _remove_distribution(dist, directory)
            removed.append(dist.name)
    if installs.pop(root, None) is not None or (directory / MANIFEST_NAME).exists():
        _write_manifest(directory, manifest)
    return sorted(removed)


def installed_plugins(target: Path | None = None) -> dict[str, list[str]]:
    """Plugins in ``target`` by the manifest: root distribution -> plugin names."""
    installs: dict[str, Any] = _manifest(_default_target(target))["installs"]
    return {key: list(entry.get("plugins", [])) for key, entry in sorted(installs.items())}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m awf_mcp.ops.installer install|uninstall SPEC [--target DIR]`` (for scripts and tests)."""
    parser = argparse.ArgumentParser(prog="python -m awf_mcp.ops.installer")
    parser.add_argument("action", choices=["install", "uninstall"])
    parser.add_argument("spec")
    parser.add_argument("--target", type=Path, default=None)
    parser.add_argument("--find-links", action="append", default=[])
    options = parser.parse_args(argv)
    from awf_mcp.errors import AwfError

    try:
        if options.action == "install":
            report = install(options.spec, target=options.target, find_links=options.find_links)
            print(report.summary())
        else:
            removed = uninstall(options.spec, target=options.target)
            print(f"removed {', '.join(removed) or 'nothing'}")
    except AwfError as exc:
        print(f"awf-mcp: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
