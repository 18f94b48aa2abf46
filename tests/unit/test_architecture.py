"""The layering the README describes (Layout), enforced: import-linter contracts and a lean ``serve``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.harness import server_env

PROJECT = Path(__file__).resolve().parents[2]


def test_import_linter_contracts_hold() -> None:
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint_imports, "import-linter is not installed (pip install -e '.[test]')"
    result = subprocess.run([lint_imports], cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


@pytest.mark.e2e
def test_serve_never_imports_typer_or_rich(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "awf_mcp", "serve", "--root", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env({"AWF_MCP_SHARED": "0"}),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    imported = {
        line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
    }
    assert "awf_mcp.wire.server" in imported, "the serve path was not exercised"
    # (click is imported anyway: the SDK's own import pulls in uvicorn, which needs it.)
    banned = ("rich", "typer", "awf_mcp.cli.commands")
    assert not {name for name in imported if name.split(".")[0] in banned or name in banned}


def test_every_module_is_under_the_sdk_contract() -> None:
    import tomllib

    contracts = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    sdk = next(c for c in contracts if c["name"].startswith("only the SDK adapter"))
    named = set(sdk["source_modules"])
    top_level = {
        "awf_mcp." + (path.stem if path.suffix == ".py" else path.name)
        for path in (PROJECT / "awf_mcp").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    }
    top_level.discard("awf_mcp.wire")
    assert top_level <= named, f"add to the contract in pyproject.toml: {sorted(top_level - named)}"
    sdk_adapters = {
        f"awf_mcp.wire.{name}"
        for name in (
            "server",
            "mapping",
            "channel",
            "changes",
            "offerings",
            "stdio",
            "http",
            "httpauth",
            "httptokens",
            "served",
            "client",
            "clientsession",
            "clientmapping",
            "clientstdio",
            "clienthttp",
            "oauthsignin",
            "replay",
        )
    }
    wire = {f"awf_mcp.wire.{path.stem}" for path in (PROJECT / "awf_mcp" / "wire").glob("*.py")}
    wire -= {"awf_mcp.wire.__init__", "awf_mcp.wire.oauth", *sdk_adapters}  # oauth: the SDK's OAuth client
    assert wire <= named, f"only {sorted(sdk_adapters)} may import the SDK; add {sorted(wire - named)}"


def _import_circles(package: str) -> list[list[str]]:
    """Every strongly connected set of two or more modules in ``package``'s import graph (Tarjan),
    counting imports made inside functions too: a lazy import still ties the two modules together."""
    import grimp

    graph = grimp.build_graph(package)
    modules = sorted(graph.modules)
    edges = {m: sorted(set(graph.find_modules_directly_imported_by(m)) & set(modules)) for m in modules}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in edges[module]:
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in modules:
        if module not in order:
            visit(module)
    return circles


def test_no_module_imports_itself_back_through_others() -> None:
    circles = _import_circles("awf_mcp")
    assert not circles, (
        "import circles (move the shared name down to a module both sides import):\n"
        + "\n".join(" <-> ".join(circle) for circle in circles)
    )


def test_the_circle_check_finds_a_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "circular"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circular import b\n")
    (package / "b.py").write_text("def f():\n    from circular import a\n")
    (package / "c.py").write_text("from circular import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _import_circles("circular") == [["circular.a", "circular.b"]]


MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    sources = [*(PROJECT / "awf_mcp").rglob("*.py"), *(PROJECT / "bench").rglob("*.py")]
    long = {
        str(path.relative_to(PROJECT)): lines
        for path in sources
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split by concern: {long}"
