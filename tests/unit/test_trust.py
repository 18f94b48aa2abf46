"""Whose config file is this: the user's own, approved, or the project's and inert."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from awf_mcp.core import trust
from awf_mcp.core.config import ServeOptions, load
from awf_mcp.errors import ConfigError


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    return repo


def test_the_project_is_the_nearest_directory_with_git(project: Path, tmp_path: Path) -> None:
    assert trust.project_of(project / "sub") == project
    assert trust.project_of(tmp_path) == tmp_path


def test_a_found_file_is_never_the_users_own(project: Path) -> None:
    assert not trust.is_users_own(project / "awf-mcp.toml", named=False, cwd=project)


def test_a_named_file_is_the_users_own_only_outside_the_project(project: Path, tmp_path: Path) -> None:
    inside, outside = project / "x.toml", tmp_path / "x.toml"
    for path in (inside, outside):
        path.write_text("")
    assert not trust.is_users_own(inside, named=True, cwd=project / "sub")  # above the cwd, still the repo's
    assert trust.is_users_own(outside, named=True, cwd=project)
    os.symlink(inside, tmp_path / "in-link.toml")
    os.symlink(outside, project / "out-link.toml")
    assert not trust.is_users_own(tmp_path / "in-link.toml", named=True, cwd=project)
    assert not trust.is_users_own(project / "out-link.toml", named=True, cwd=project)


def test_the_users_config_directory_is_theirs(project: Path, tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(project / ".config")}  # even a config home inside a repository
    path = project / ".config" / "awf-mcp" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("")
    assert trust.is_users_own(path, named=False, cwd=project, env=env)
    os.symlink(project / "x.toml", path.parent / "link.toml")  # a link out of it is not
    assert not trust.is_users_own(path.parent / "link.toml", named=False, cwd=project, env=env)


def test_a_verdict_follows_the_bytes(project: Path) -> None:
    path = project / "awf-mcp.toml"
    assert trust.verdict(path, b"a", named=False, cwd=project).state == "new"
    trust.approve(path, b"a")
    assert trust.verdict(path, b"a", named=False, cwd=project).trusted
    changed = trust.verdict(path, b"b", named=False, cwd=project)
    assert changed.state == "changed" and not changed.trusted and "changed" in changed.reason
    assert trust.forget(path) and not trust.forget(path)
    assert trust.verdict(path, b"a", named=False, cwd=project).state == "new"


def test_load_ignores_an_unapproved_file_whole_and_says_what_it_would_do(project: Path) -> None:
    path = project / "awf-mcp.toml"
    path.write_text('roots = ["/"]\nexclude = ["Bash"]\n[servers.x]\ncommand = "sh"\n[plugins.p]\nk = 1\n')
    settings = load(cwd=str(project))
    assert settings.servers == () and settings.roots == (str(project.resolve()),)
    assert settings.exclude == () and settings.plugin_settings == {} and not settings.roots_explicit
    ignored = settings.ignored_config
    assert ignored is not None and ignored.path == path
    assert ignored.would[0] == "start server x: sh" and "confine the tools to /" in ignored.would
    assert ignored.fix == f"awf-mcp trust {path}"
    trust.approve(path, path.read_bytes())
    used = load(cwd=str(project))
    assert used.ignored_config is None and [s.name for s in used.servers] == ["x"] and used.roots == ("/",)


def test_an_unapproved_file_that_does_not_parse_does_not_stop_start_up(project: Path) -> None:
    (project / "awf-mcp.toml").write_text("roots = [")
    settings = load(cwd=str(project))
    assert settings.ignored_config is not None and "not valid TOML" in settings.ignored_config.would[0]


def test_a_config_file_is_bounded_in_bytes(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_bytes(b"#" * (trust.MAX_CONFIG_BYTES + 1))
    with pytest.raises(ConfigError, match="over 1,048,576 bytes"):
        load(ServeOptions(config=str(path)), cwd=str(tmp_path / ".."))
