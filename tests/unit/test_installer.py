"""``awf_mcp.install.installer``: installing local plugins into a plugin directory,
keeping what awf-mcp already has out of it, uninstalling exactly what was added, clear errors.

The plugins are small source projects written per test (a plugin installed in
the test venv would be found there first), built into wheels through pip like
any other; their own dependency is a local wheel, so no test needs the package
index. ``awf-mcp`` runs as a subprocess with ``AWF_MCP_PLUGIN_PATH`` pointing
at the target, as the frozen binary would see it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.errors import ExecutionError, UserError
from awf_mcp.install import installer
from awf_mcp.install.manifest import normalize
from tests.helpers.harness import server_command, server_env

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]
BUNDLED = ("awf-mcp", "mcp", "pydantic")


def write_project(
    where: Path,
    dist: str,
    *,
    version: str = "1.0",
    dependencies: tuple[str, ...] = (),
    plugin: str | None = None,
    source: str = "",
) -> Path:
    """A setuptools project for distribution ``dist`` (module ``dist`` with dashes as underscores)."""
    module = dist.replace("-", "_")
    project = where / dist
    (project / module).mkdir(parents=True)
    entry = f'[project.entry-points.awf_mcp]\n{plugin} = "{module}"\n' if plugin else ""
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["setuptools>=68"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "{dist}"
            version = "{version}"
            requires-python = ">=3.11"
            dependencies = {json.dumps(list(dependencies))}

            [tool.setuptools]
            packages = ["{module}"]
            """
        )
        + entry,
        encoding="utf-8",
    )
    (project / module / "__init__.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return project


GREET = """
    from awf_mcp import hookimpl, tool
    from awf_greet_words import WORD


    @tool(read_only=True)
    def hello(name: str) -> str:
        \"\"\"Greet someone.\"\"\"
        return f"{WORD} {name}"


    @hookimpl
    def awf_mcp_register_tools(plugin):
        plugin.register(hello)
"""

SHOUT = """
    from awf_mcp import hookimpl, tool
    from awf_greet_words import WORD


    @tool()
    def loud(text: str) -> str:
        \"\"\"Shout.\"\"\"
        return WORD.upper() + " " + text.upper()


    @hookimpl
    def awf_mcp_register_tools(plugin):
        plugin.register(loud)
"""


def build_wheel(project: Path, out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(project)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return next(out.glob(f"{project.name.replace('-', '_')}-*.whl"))


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two plugins sharing a helper distribution (available as a local wheel only)."""
    base = tmp_path_factory.mktemp("projects")
    words = write_project(base, "awf-greet-words", version="2.0", source='WORD = "hello"\n')
    wheels = base / "wheels"
    build_wheel(words, wheels)
    greet = write_project(
        base,
        "awf-plugin-greet",
        dependencies=("awf-mcp>=0.1", "mcp>=2", "pydantic>=2", "awf-greet-words>=1"),
        plugin="greet",
        source=GREET,
    )
    shout = write_project(
        base, "awf-plugin-shout", dependencies=("awf-mcp", "awf-greet-words"), plugin="shout", source=SHOUT
    )
    return {"wheels": wheels, "greet": greet, "shout": shout, "base": base}


def cli(*args: str, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        server_command(*args),
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env({"AWF_MCP_PLUGIN_PATH": str(target)}),
        stdin=subprocess.DEVNULL,
    )


def plugin_rows(target: Path) -> dict[str, dict[str, Any]]:
    listed = cli("plugins", "list", "--json", target=target)
    assert listed.returncode == 0, listed.stderr
    return {row["name"]: row for row in json.loads(listed.stdout)["plugins"]}


def tool_names(target: Path) -> list[str]:
    listed = cli("tools", "list", "--json", "--no-builtins", target=target)
    assert listed.returncode == 0, listed.stderr
    return [tool["name"] for tool in json.loads(listed.stdout)["tools"]]


def dist_infos(target: Path) -> list[str]:
    return sorted(p.name for p in target.glob("*.dist-info"))


# ---------------------------------------------------------------- install, list, uninstall


def test_install_a_local_plugin_directory_serves_its_tools_from_the_target(
    projects: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "plugins"
    report = installer.install(str(projects["greet"]), target=target, find_links=[projects["wheels"]])
    assert report.plugins == ["greet"] and report.target == target
    assert report.installed == [("awf-greet-words", "2.0"), ("awf-plugin-greet", "1.0")]
    skipped = {name for name, _ in report.skipped_bundled}
    assert set(BUNDLED) <= {normalize(name) for name in skipped}

    # What awf-mcp already has was not put into the plugin directory.
    assert dist_infos(target) == ["awf_greet_words-2.0.dist-info", "awf_plugin_greet-1.0.dist-info"]
    for bundled in ("awf_mcp", "mcp", "pydantic", "pydantic_core", "anyio"):
        assert not (target / bundled).exists()

    assert "greet_hello" in tool_names(target)
    row = plugin_rows(target)["greet"]
    assert row["status"] == "ok" and Path(row["location"]) == target and row["tools"] == ["greet_hello"]
    called = cli("tools", "call", "greet_hello", '{"name": "you"}', "--json", "--no-builtins", target=target)
    assert called.returncode == 0 and json.loads(called.stdout)["content"][0]["text"] == "hello you"

    manifest = json.loads((target / installer.MANIFEST_NAME).read_text())
    assert manifest["installs"]["awf-plugin-greet"]["plugins"] == ["greet"]
    assert set(manifest["installs"]["awf-plugin-greet"]["distributions"]) == {
        "awf-plugin-greet",
        "awf-greet-words",
    }

    removed = installer.uninstall("greet", target=target)
    assert removed == ["awf-greet-words", "awf-plugin-greet"]
    assert dist_infos(target) == []
    assert sorted(p.name for p in target.iterdir()) == [installer.MANIFEST_NAME]
    assert "greet_hello" not in tool_names(target)


def test_a_shared_dependency_stays_until_its_last_plugin_goes(
    projects: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "plugins"
    links = [projects["wheels"]]
    installer.install(str(projects["greet"]), target=target, find_links=links)
    wheel = build_wheel(projects["shout"], tmp_path / "shout-wheel")
    second = installer.install(str(wheel), target=target, find_links=links)
    assert second.installed == [("awf-plugin-shout", "1.0")]
    assert second.reused == [("awf-greet-words", "2.0")]
    assert installer.installed_plugins(target) == {
        "awf-plugin-greet": ["greet"],
        "awf-plugin-shout": ["shout"],
    }

    assert installer.uninstall("awf-plugin-greet", target=target) == ["awf-plugin-greet"]
    assert dist_infos(target) == ["awf_greet_words-2.0.dist-info", "awf_plugin_shout-1.0.dist-info"]
    names = tool_names(target)
    assert "shout_loud" in names and "greet_hello" not in names
    assert installer.uninstall("shout", target=target) == ["awf-greet-words", "awf-plugin-shout"]
    assert dist_infos(target) == []


def test_reinstalling_replaces_the_previous_version(projects: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "plugins"
    installer.install(str(projects["greet"]), target=target, find_links=[projects["wheels"]])
    newer = write_project(
        tmp_path / "v2",
        "awf-plugin-greet",
        version="2.0",
        dependencies=("awf-mcp",),
        plugin="greet",
        source=GREET.replace("from awf_greet_words import WORD", 'WORD = "hey"'),
    )
    report = installer.install(str(newer), target=target)
    assert report.installed == [("awf-plugin-greet", "2.0")]
    # The old version and the dependency only it needed are gone.
    assert dist_infos(target) == ["awf_plugin_greet-2.0.dist-info"]
    called = cli("tools", "call", "greet_hello", '{"name": "x"}', "--json", "--no-builtins", target=target)
    assert json.loads(called.stdout)["content"][0]["text"] == "hey x"


def test_default_target_is_the_first_plugin_directory(
    projects: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = tmp_path / "first" / "plugins"
    monkeypatch.setenv("AWF_MCP_PLUGIN_PATH", os.pathsep.join([str(first), str(tmp_path / "second")]))
    report = installer.install(str(projects["greet"]), find_links=[projects["wheels"]])
    assert report.target == first and (first / "awf_plugin_greet").is_dir()
    assert installer.uninstall("greet") == ["awf-greet-words", "awf-plugin-greet"]


def test_a_plugin_that_needs_another_awf_mcp_fails_naming_the_conflict(tmp_path: Path) -> None:
    project = write_project(
        tmp_path, "awf-plugin-future", dependencies=("awf-mcp>=99",), plugin="future", source=""
    )
    target = tmp_path / "plugins"
    with pytest.raises(UserError) as caught:
        installer.install(str(project), target=target)
    message = str(caught.value)
    assert message.startswith(f"cannot install {project}: conflicting requirements")
    assert "awf-mcp>=99" in message and "awf-mcp==" in message and "\n" not in message
    assert dist_infos(target) == []


def test_a_distribution_without_an_entry_point_is_refused(tmp_path: Path) -> None:
    project = write_project(tmp_path, "not-a-plugin", source="")
    target = tmp_path / "plugins"
    with pytest.raises(UserError, match="declares no 'awf_mcp' entry point"):
        installer.install(str(project), target=target)
    assert dist_infos(target) == []


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        ("./no/such/dir", r"no such file or directory: \./no/such/dir"),
        ("", r"no plugin given"),
        ("not a spec!", r"is not a package requirement or an existing path"),
    ],
)
def test_bad_specs_are_one_clear_sentence(spec: str, pattern: str, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=pattern) as caught:
        installer.install(spec, target=tmp_path / "plugins")
    assert "\n" not in str(caught.value)


def test_a_directory_that_is_not_a_project_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=r"is not a Python project \(no pyproject.toml or setup.py\)"):
        installer.install(str(tmp_path / "empty"), target=tmp_path / "plugins")


def test_a_project_that_fails_to_build_reports_pips_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "pyproject.toml").write_text("[project\nname = ", encoding="utf-8")
    with pytest.raises((UserError, ExecutionError), match=rf"cannot build a wheel from {broken}: \S"):
        installer.install(str(broken), target=tmp_path / "plugins")


def test_uninstall_of_an_unknown_name_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"no plugin 'nope' in .*: it holds no plugins|no plugin 'nope'"):
        installer.uninstall("nope", target=tmp_path / "plugins")


def test_uninstall_removes_a_plugin_installed_without_the_manifest(tmp_path: Path) -> None:
    """A plain ``pip install --target`` (as CI does for the testkit) is removed via its RECORD."""
    target = tmp_path / "plugins"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         str(REPO / "tests" / "fixtures" / "awf-plugin-testkit")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    assert installer.uninstall("testkit", target=target) == ["awf-plugin-testkit"]
    assert dist_infos(target) == [] and not (target / "awf_plugin_testkit").exists()


# ---------------------------------------------------------------- a mismatched compiled plugin


def test_a_compiled_extension_that_cannot_load_is_one_line_at_start_up(tmp_path: Path) -> None:
    """A plugin whose ``.so`` does not fit this interpreter is skipped with one line, not a crash."""
    from tests.helpers.distributions import make_distribution

    target = tmp_path / "plugins"
    make_distribution(
        target,
        dist="awf-plugin-native",
        plugin="native",
        module="awf_native_plugin",
        source="from awf_native_ext import speed  # a compiled extension\n",
    )
    suffix = ".cpython-311-x86_64-linux-gnu.so" if sys.platform == "linux" else ".so"
    (target / f"awf_native_ext{suffix}").write_bytes(b"\x7fELF this is not a shared object for this machine")
    (target / "awf_native_ext.so").write_bytes(b"not an ELF file at all")
    listed = cli("tools", "list", "--json", target=target)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["tools"], "the other tools are still served"
    lines = [line for line in listed.stderr.splitlines() if "native" in line]
    assert len(lines) == 1 and "ImportError" in lines[0], listed.stderr
    assert "Traceback" not in listed.stderr
    row = plugin_rows(target)["native"]
    assert row["status"].startswith("failed: ImportError")
    strict = cli("tools", "list", "--json", "--strict", target=target)
    assert strict.returncode == 1 and "Traceback" not in strict.stderr
    assert "plugin 'native'" in strict.stderr and len(strict.stderr.strip().splitlines()) == 1


def test_install_tells_each_slow_step_before_it_starts(projects: dict[str, Path], tmp_path: Path) -> None:
    steps: list[str] = []
    installer.install(
        str(projects["greet"]),
        target=tmp_path / "plugins",
        find_links=[projects["wheels"]],
        progress=steps.append,
    )
    assert steps[0].startswith(f"resolving {projects['greet']} with ") and " -m pip" in steps[0]
    assert steps[1] == "downloading and unpacking 2 distribution(s) ..."
