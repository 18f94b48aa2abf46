"""``awf_mcp.install.manifest``: the plugin directory's manifest, its distributions and their removal."""

from __future__ import annotations

from pathlib import Path

import pytest

from awf_mcp import hookspecs
from awf_mcp.errors import UserError
from awf_mcp.install import manifest


def dist_info(target: Path, name: str, entry_points: str = "", record: str = "") -> Path:
    info = target / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\nRequires-Dist: x>=1\n"
    )
    if entry_points:
        (info / "entry_points.txt").write_text(entry_points)
    if record:
        (info / "RECORD").write_text(record)
    return info


def test_entry_point_names_come_from_the_plugin_group_only(tmp_path: Path) -> None:
    group = hookspecs.ENTRY_POINT_GROUP
    points = f"[console_scripts]\ntool = m:main\n\n[ {group} ]\n# off = m\nzeta = m.z\nalpha=m.a\n"
    dist_info(tmp_path, "awf-plugin-two", points)
    found = manifest.target_dists(tmp_path)
    assert list(found) == ["awf-plugin-two"]
    assert found["awf-plugin-two"].plugins == ["alpha", "zeta"]
    assert found["awf-plugin-two"].requires == ["x>=1"]


def test_removal_follows_record_inside_the_target_only(tmp_path: Path) -> None:
    target = tmp_path / "plugins"
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (target / "pkg").mkdir(parents=True)
    (target / "pkg" / "__init__.py").write_text("")
    (target / "shared").mkdir()
    (target / "shared" / "other.py").write_text("")
    info = dist_info(target, "awf-plugin-one", record="pkg/__init__.py,,\n../outside.txt,,\n")
    manifest.remove_distribution(manifest.target_dists(target)["awf-plugin-one"], target)
    assert not info.exists() and not (target / "pkg").exists()
    assert outside.read_text() == "keep" and (target / "shared" / "other.py").exists()


def test_a_broken_manifest_is_refused_with_what_to_do(tmp_path: Path) -> None:
    assert manifest.read_manifest(tmp_path) == {"version": 1, "installs": {}}
    (tmp_path / manifest.MANIFEST_NAME).write_text('{"installs": []}')
    with pytest.raises(UserError, match="is not an awf-mcp manifest; delete it"):
        manifest.read_manifest(tmp_path)
    manifest.write_manifest(tmp_path, {"version": 1, "installs": {"a": {}}})
    assert manifest.read_manifest(tmp_path)["installs"] == {"a": {}}
