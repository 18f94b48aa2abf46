"""What a plugin needs, for this interpreter: wheel tags, what awf-mcp already has, pip's resolver.

Contract
--------
:func:`target_spec` describes the running interpreter (version, implementation, ABI,
platform tags) so that pip, run by another Python, accepts only wheels this one can
load. :func:`bundled_distributions` lists what the running awf-mcp has outside plugin
directories (in the frozen binary: exactly what was bundled).

:func:`resolve` runs pip's resolver (``install --dry-run --ignore-installed --report``)
for one requirement. Every distribution the target already provides is pinned in a
constraints file and offered as a metadata-only stub wheel, so a plugin that needs a
different ``awf-mcp``, ``mcp`` or ``pydantic`` fails with pip's conflict sentence.
With ``offline_first`` the resolution is tried without the package index first, and
the index is asked only when that fails. Failures are those of
:func:`awf_mcp.install.piprunner.run_pip`.

This module uses the standard library only.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import sysconfig
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from awf_mcp.errors import ExecutionError, UserError
from awf_mcp.install.manifest import normalize
from awf_mcp.install.piprunner import run_pip
from awf_mcp.install.plugindirs import plugin_dirs

_STUB_BUILD_TAG = "99999"
_VERSION = re.compile(r"^[A-Za-z0-9.+!_-]+$")

#: normalized name -> (name, version, requires): what the target has already.
Provided = Mapping[str, tuple[str, str, list[str]]]


# ------------------------------------------------------------------ the target interpreter


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


def _search_path() -> list[str]:
    """``sys.path`` without the plugin directories: where the running awf-mcp's own packages are."""
    excluded = {os.path.realpath(p) for p in plugin_dirs()}
    return [p for p in sys.path if os.path.realpath(p or os.curdir) not in excluded]


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


# ------------------------------------------------------------------ resolution


def _stub_wheel(directory: Path, name: str, version: str, tag: str, requires: Iterable[str] = ()) -> None:
    """A metadata-only wheel that stands for a distribution the target already has."""
    base = normalize(name).replace("-", "_")
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
class Resolved:
    """One distribution pip's resolver chose, and where it would come from."""

    name: str
    version: str
    url: str

    @property
    def local_file(self) -> Path | None:
        """The wheel on this machine, when ``url`` is a ``file://`` URL."""
        if self.url.startswith("file://"):
            from urllib.parse import unquote, urlparse

            return Path(unquote(urlparse(self.url).path))
        return None


def resolve(
    python: str,
    requirement: str,
    *,
    work: Path,
    provided: Provided,
    spec: TargetSpec,
    find_links: Sequence[str],
    offline_first: bool,
    what: str,
) -> list[Resolved]:
    """What installing REQUIREMENT into a target that has PROVIDED takes, by pip's resolver.

    WORK is a scratch directory; failures start with WHAT.
    """
    _offer_provided(work, provided, spec)
    if offline_first:
        try:
            return _resolve_once(python, requirement, work, spec, find_links, offline=True, what=what)
        except (UserError, ExecutionError):
            pass
    return _resolve_once(python, requirement, work, spec, find_links, offline=False, what=what)


def _offer_provided(work: Path, provided: Provided, spec: TargetSpec) -> None:
    """Stub wheels in ``WORK/provided`` and pins in ``WORK/constraints.txt`` for PROVIDED."""
    stubs = work / "provided"
    stubs.mkdir(exist_ok=True)
    for display, version, requires in provided.values():
        _stub_wheel(stubs, display, version, spec.best_tag, requires)
    (work / "constraints.txt").write_text(
        "".join(f"{display}=={version}\n" for display, version, _ in provided.values()), encoding="utf-8"
    )


def _resolve_once(
    python: str,
    requirement: str,
    work: Path,
    spec: TargetSpec,
    find_links: Sequence[str],
    *,
    offline: bool,
    what: str,
) -> list[Resolved]:
    report = work / ("report-offline.json" if offline else "report.json")
    # --target (never written to) because pip < 23.3 allows platform options only with it.
    args = ["install", "--dry-run", "--ignore-installed", "--report", str(report)]
    args += ["--target", str(work / "dry-run-target")]
    args += spec.pip_options()
    args += ["--constraint", str(work / "constraints.txt"), "--find-links", str(work / "provided")]
    for link in find_links:
        args += ["--find-links", link]
    if offline:
        args.append("--no-index")
    args.append(requirement)
    run_pip(python, args, what)
    data = json.loads(report.read_text(encoding="utf-8"))
    return [
        Resolved(
            name=str(item.get("metadata", {}).get("name", "")),
            version=str(item.get("metadata", {}).get("version", "")),
            url=str(item.get("download_info", {}).get("url", "")),
        )
        for item in data.get("install", [])
    ]
