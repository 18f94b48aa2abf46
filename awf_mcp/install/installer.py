"""Install and uninstall plugins in a plugin directory, for the frozen binary and for pip installs.

Contract
--------
:func:`install` puts a plugin and the distributions it needs into a plugin
directory (default: the first of :func:`awf_mcp.install.plugindirs.plugin_dirs`), where
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

The parts live beside this module: :mod:`~awf_mcp.install.piprunner` (the Python that
runs pip), :mod:`~awf_mcp.install.fetch` (specs, local builds, the staging install),
:mod:`~awf_mcp.install.resolve` (wheel tags, what awf-mcp has, pip's resolver) and
:mod:`~awf_mcp.install.manifest` (the plugin directory). This module is the sequence.
It uses the standard library only.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awf_mcp.errors import SystemFault, UserError
from awf_mcp.hookspecs import ENTRY_POINT_GROUP
from awf_mcp.install.fetch import plugin_request, stage
from awf_mcp.install.manifest import (
    MANIFEST_NAME,
    TargetDist,
    merge_tree,
    normalize,
    read_manifest,
    remove_distribution,
    target_dists,
    write_manifest,
)
from awf_mcp.install.piprunner import find_python
from awf_mcp.install.plugindirs import plugin_dirs
from awf_mcp.install.resolve import Resolved, bundled_distributions, resolve, target_spec

__all__ = ["MANIFEST_NAME", "InstallReport", "install", "installed_plugins", "uninstall"]


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
            bundled = ", ".join(f"{name} {version}" for name, version in self.skipped_bundled)
            line += f"; already bundled with awf-mcp, so not installed again: {bundled}"
        return line


def _default_target(target: Path | None) -> Path:
    return Path(target).expanduser() if target is not None else plugin_dirs()[0]


def _needed_by_others(installs: Mapping[str, Any], root: str) -> set[str]:
    """Distributions the manifest records for every install but ROOT's."""
    return {dist for key, entry in installs.items() if key != root for dist in entry.get("distributions", {})}


@dataclass(slots=True)
class _Split:
    """The resolver's answer sorted by where each distribution comes from."""

    bundled: list[Resolved] = field(default_factory=list)
    reused: list[Resolved] = field(default_factory=list)
    fresh: list[Resolved] = field(default_factory=list)

    @classmethod
    def of(
        cls, resolved: Iterable[Resolved], bundled: Mapping[str, str], provided: Mapping[str, Any]
    ) -> _Split:
        split = cls()
        for item in resolved:
            key = normalize(item.name)
            group = split.bundled if key in bundled else split.reused if key in provided else split.fresh
            group.append(item)
        return split


def _pairs(items: Iterable[Resolved]) -> list[tuple[str, str]]:
    return sorted((item.name, item.version) for item in items)


def install(
    spec: str,
    *,
    target: Path | None = None,
    find_links: Sequence[str | Path] = (),
    progress: Callable[[str], None] = lambda step: None,
) -> InstallReport:
    """Install plugin ``spec`` (index requirement, source directory or wheel) into ``target``.

    ``target`` defaults to the first plugin directory (created when missing).
    ``find_links`` are extra directories or URLs of wheels for pip. ``progress`` is told
    each step that takes seconds (resolving, downloading) before it starts. Reinstalling
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
    interpreter = target_spec()
    what = f"cannot install {spec}"

    with tempfile.TemporaryDirectory(prefix="awf-mcp-install-") as scratch:
        work = Path(scratch)
        request = plugin_request(python, spec, work, [str(link) for link in find_links])
        root = request.root
        manifest = read_manifest(directory)
        installs: dict[str, Any] = manifest["installs"]
        present = target_dists(directory)
        own_before = set(installs.get(root, {}).get("distributions", {})) | {root}
        needed_by_others = _needed_by_others(installs, root)
        bundled = bundled_distributions()
        bundled.pop(root, None)
        provided = _provided(bundled, present, own_before - needed_by_others)

        progress(f"resolving {spec} with {python} -m pip ...")
        resolved = resolve(
            python,
            request.requirement,
            work=work,
            provided=provided,
            spec=interpreter,
            find_links=request.find_links,
            offline_first=request.local,
            what=what,
        )
        split = _Split.of(resolved, bundled, provided)
        staging = work / "staging"
        if split.fresh:
            progress(f"downloading and unpacking {len(split.fresh)} distribution(s) ...")
        stage(python, split.fresh, staging, spec=interpreter, find_links=request.find_links, what=what)
        staged = target_dists(staging)

        root_dist = staged.get(root) or present.get(root)
        plugins = root_dist.plugins if root_dist else []
        if not plugins:
            raise UserError(
                f"{spec} declares no '{ENTRY_POINT_GROUP}' entry point, so it is not an awf-mcp plugin; "
                "nothing was installed"
            )
        # Replace what is staged; drop what the previous install of this plugin alone needed.
        no_longer_needed = own_before - {normalize(item.name) for item in resolved} - needed_by_others
        for name, dist in present.items():
            if name in staged or name in no_longer_needed:
                remove_distribution(dist, directory)
        if staging.is_dir():
            merge_tree(staging, directory)

    distribution = root_dist.name if root_dist else root
    installs[root] = {
        "spec": spec,
        "distribution": distribution,
        "plugins": plugins,
        "distributions": {normalize(n): v for n, v in _pairs([*split.fresh, *split.reused])},
    }
    write_manifest(directory, manifest)
    return InstallReport(
        plugins=plugins,
        installed=_pairs(split.fresh),
        target=directory,
        skipped_bundled=_pairs(split.bundled),
        reused=_pairs(split.reused),
        distribution=distribution,
    )


def _provided(
    bundled: Mapping[str, str], present: Mapping[str, TargetDist], replaceable: set[str]
) -> dict[str, tuple[str, str, list[str]]]:
    """What the target already has for the resolver: the bundle, and what is present and stays.

    REPLACEABLE: present distributions only this plugin's previous install needed.
    """
    provided: dict[str, tuple[str, str, list[str]]] = {
        name: (name, version, []) for name, version in bundled.items()
    }
    for name, dist in present.items():
        if name not in bundled and name not in replaceable:
            provided[name] = (dist.name, dist.version, dist.requires)
    return provided


# ------------------------------------------------------------------ uninstall and listing


def uninstall(name: str, *, target: Path | None = None) -> list[str]:
    """Remove plugin ``name`` (entry-point or distribution name) from ``target``.

    Removes the distributions its install added, except those another installed
    plugin still needs, and returns their names, sorted. Raises
    :class:`UserError` when ``target`` holds no such plugin.
    """
    directory = _default_target(target)
    manifest = read_manifest(directory)
    installs: dict[str, Any] = manifest["installs"]
    present = target_dists(directory)
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
    removed: list[str] = []
    for dist_name in sorted(own - _needed_by_others(installs, root)):
        dist = present.get(dist_name)
        if dist is not None:
            remove_distribution(dist, directory)
            removed.append(dist.name)
    if installs.pop(root, None) is not None or (directory / MANIFEST_NAME).exists():
        write_manifest(directory, manifest)
    return sorted(removed)


def installed_plugins(target: Path | None = None) -> dict[str, list[str]]:
    """Plugins in ``target`` by the manifest: root distribution -> plugin names."""
    installs: dict[str, Any] = read_manifest(_default_target(target))["installs"]
    return {key: list(entry.get("plugins", [])) for key, entry in sorted(installs.items())}
