"""A plugin directory as the installer sees it: its manifest, its distributions, their removal.

Contract
--------
The directory holds ``awf-mcp-manifest.json`` (:data:`MANIFEST_NAME`): ``{"version": 1,
"installs": {root: {"spec", "distribution", "plugins", "distributions"}}}``, one entry per
installed root distribution, with its plugin names and every distribution that install
added or reused (normalized name -> version). :func:`read_manifest` refuses, with one
sentence, a file that is not such a manifest; :func:`write_manifest` replaces it
atomically.

:func:`target_dists` lists the ``*.dist-info`` directories there with their metadata and
the plugin names each declares in the entry-point group :data:`ENTRY_POINT_GROUP`
(``awf_mcp.hookspecs.ENTRY_POINT_GROUP``, the group the loader reads).
:func:`remove_distribution` deletes the files a distribution's ``RECORD`` lists, inside
the directory only, then its ``.dist-info`` and the directories left empty.

This module uses the standard library only (plus the project name from hookspecs).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from awf_mcp.errors import UserError
from awf_mcp.hookspecs import ENTRY_POINT_GROUP

MANIFEST_NAME = "awf-mcp-manifest.json"


def normalize(name: str) -> str:
    """PEP 503 name normalization: ``Awf_Plugin.Echo`` -> ``awf-plugin-echo``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_metadata(text: str) -> tuple[str, str, list[str]]:
    """A ``METADATA`` file's name, version and ``Requires-Dist`` lines."""
    headers = HeaderParser().parsestr(text)
    return headers.get("Name", ""), headers.get("Version", ""), headers.get_all("Requires-Dist") or []


# ------------------------------------------------------------------ the manifest


def read_manifest(target: Path) -> dict[str, Any]:
    """The manifest of TARGET (an empty one when there is none)."""
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


def write_manifest(target: Path, data: Mapping[str, Any]) -> None:
    """Replace TARGET's manifest with DATA, atomically."""
    path = target / MANIFEST_NAME
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)


# ------------------------------------------------------------------ distributions in the directory


@dataclass(slots=True)
class TargetDist:
    """One distribution in a plugin directory."""

    name: str
    version: str
    info: Path
    """Its ``.dist-info`` directory."""
    requires: list[str]
    plugins: list[str]
    """The entry-point names it declares in :data:`ENTRY_POINT_GROUP`."""


def target_dists(target: Path) -> dict[str, TargetDist]:
    """The distributions in TARGET by normalized name (none when TARGET is not a directory)."""
    found: dict[str, TargetDist] = {}
    if not target.is_dir():
        return found
    for info in sorted(target.glob("*.dist-info")):
        meta = info / "METADATA"
        if not meta.is_file():
            continue
        name, version, requires = parse_metadata(meta.read_text(encoding="utf-8", errors="replace"))
        if not name:
            continue
        found[normalize(name)] = TargetDist(name, version, info, requires, entry_point_names(info))
    return found


def entry_point_names(info: Path) -> list[str]:
    """The names in the :data:`ENTRY_POINT_GROUP` section of ``INFO/entry_points.txt``, sorted."""
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


def record_paths(info: Path, target: Path) -> list[Path]:
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


def remove_distribution(dist: TargetDist, target: Path) -> None:
    """Delete DIST's files (and their bytecode) from TARGET, its ``.dist-info``, and emptied directories."""
    root = target.resolve()
    parents: set[Path] = set()
    for path in record_paths(dist.info, target):
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


def merge_tree(source: Path, target: Path) -> None:
    """Move every file of ``source`` into ``target``, keeping directories other plugins share."""
    for directory, _dirs, files in os.walk(source):
        relative = Path(directory).relative_to(source)
        destination = target / relative
        destination.mkdir(parents=True, exist_ok=True)
        for name in files:
            os.replace(Path(directory) / name, destination / name)
