"""``plugin init``: the scaffolded distribution installs, serves its tool and passes its own tests.

The round trip installs the new plugin with ``pip install --no-deps
--no-build-isolation --target DIR`` and puts ``DIR`` on ``PYTHONPATH`` (and
``AWF_MCP_PLUGIN_PATH``, for the frozen binary) of the child processes only,
so the test venv is left as it was and no network is needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from awf_mcp.install.scaffold import ScaffoldError, check_plugin_name, scaffold_plugin, suggested_name
from tests.helpers.harness import server_command, server_env

NAME = "demo_kit"


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scaffold_plugin(NAME, tmp_path_factory.mktemp("scaffold"))


@pytest.fixture(scope="module")
def installed(scaffolded: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment in which the scaffolded plugin is installed (and is the only plugin)."""
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(scaffolded),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    paths = {"PYTHONPATH": str(target), "AWF_MCP_PLUGIN_PATH": str(target)}
    return server_env({**paths, "AWF_MCP_PLUGINS": NAME})


def test_layout_and_entry_point(scaffolded: Path) -> None:
    assert scaffolded.name == f"awf-plugin-{NAME}"
    files = sorted(str(p.relative_to(scaffolded)) for p in scaffolded.rglob("*") if p.is_file())
    assert files == [
        ".gitignore",
        "README.md",
        f"awf_plugin_{NAME}/__init__.py",
        "pyproject.toml",
        f"tests/test_{NAME}.py",
    ]
    pyproject = (scaffolded / "pyproject.toml").read_text(encoding="utf-8")
    assert f'name = "awf-plugin-{NAME}"' in pyproject
    assert f'[project.entry-points.awf_mcp]\n{NAME} = "awf_plugin_{NAME}"' in pyproject
    assert "{{" not in "".join(p.read_text(encoding="utf-8") for p in scaffolded.rglob("*") if p.is_file())


def test_tools_list_shows_the_new_tool(installed: dict[str, str], tmp_path: Path) -> None:
    done = subprocess.run(
        server_command("tools", "list", "--json", "--no-builtins"),
        capture_output=True,
        text=True,
        env=installed,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)["tools"]
    assert [(t["name"], t["source"]) for t in tools] == [(f"{NAME}_hello", f"plugin:{NAME}")]
    assert tools[0]["description"] == "Greet someone by name."


def test_tools_call_runs_the_new_tool(installed: dict[str, str], tmp_path: Path) -> None:
    done = subprocess.run(
        server_command("tools", "call", f"{NAME}_hello", '{"name": "Ada"}', "--json", "--no-builtins"),
        capture_output=True,
        text=True,
        env=installed,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["content"] == [{"type": "text", "text": "Hello, Ada!"}]


def test_generated_tests_pass(scaffolded: Path, installed: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(scaffolded / "tests")],
        capture_output=True,
        text=True,
        env=installed,
        cwd=scaffolded,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("My-Tools", "use lowercase letters, digits and '_'"),
        ("9lives", "starting with a letter"),
        ("", "is invalid"),
        ("a" * 33, "too long"),
        ("builtin", "reserved"),
    ],
)
def test_bad_names_are_refused_with_a_reason(name: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match=problem):
        scaffold_plugin(name, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_good_names_pass() -> None:
    for name in ("echo", "my_tools", "db2"):
        check_plugin_name(name)


def test_an_existing_directory_is_never_overwritten(tmp_path: Path) -> None:
    existing = tmp_path / "awf-plugin-taken"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ScaffoldError, match="already exists"):
        scaffold_plugin("taken", tmp_path)
    assert [p.name for p in existing.iterdir()] == ["keep.txt"]


def test_scaffold_error_is_a_value_error() -> None:
    assert issubclass(ScaffoldError, ValueError)


def awf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(server_command(*args), capture_output=True, text=True, env=server_env(), timeout=60)


def test_plugins_init_command_writes_the_distribution(tmp_path: Path) -> None:
    done = awf("plugins", "init", "from_cli", "--dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "awf-plugin-from_cli" / "awf_plugin_from_cli" / "__init__.py").is_file()
    again = awf("plugins", "init", "from_cli", "--dir", str(tmp_path))
    assert again.returncode == 1
    assert "already exists" in again.stderr


def test_the_old_plugin_init_still_works_and_names_the_new_command(tmp_path: Path) -> None:
    done = awf("plugin", "init", "old_name", "--dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "`plugin init` is now `plugins init`" in done.stderr
    assert (tmp_path / "awf-plugin-old_name").is_dir()
    listed = awf("--help")
    assert " plugin " not in listed.stdout  # one group, plugins, in the help


def test_the_next_step_names_the_pip_of_the_python_awf_mcp_runs_on(tmp_path: Path) -> None:
    done = awf("plugins", "init", "nextstep", "--dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    created = tmp_path / "awf-plugin-nextstep"
    assert f"next: {sys.executable} -m pip install -e {created} && awf-mcp tools list" in done.stderr


@pytest.mark.parametrize(
    ("given", "meant"),
    [("awf-plugin-demo", "demo"), ("Awf-Plugin-Demo", "demo"), ("My-Tools", "my_tools")],
)
def test_an_invalid_name_comes_with_the_name_it_probably_meant(given: str, meant: str) -> None:
    assert suggested_name(given) == meant
    with pytest.raises(ScaffoldError, match=f"did you mean '{meant}'\\? awf-mcp plugins init {meant}"):
        check_plugin_name(given)


def test_no_suggestion_where_nothing_valid_is_left() -> None:
    assert suggested_name("awf-plugin-") is None and suggested_name("---") is None
    assert suggested_name("2fa") is None
