"""Inputs the benchmarks need, generated on demand: the Read file, 50 trivial plugins, the Grep tree."""

from __future__ import annotations

import compileall
import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

READ_LINES = 2000

_WORDS = tuple(
    [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "theta",
        "kappa",
        "lambda",
        "sigma",
        "omega",
        "request",
        "response",
        "server",
        "client",
        "tool",
        "plugin",
        "registry",
        "sandbox",
        "stream",
        "frame",
        "buffer",
        "thread",
        "event",
        "loop",
        "cancel",
        "scope",
        "result",
        "error",
        "schema",
        "handler",
        "session",
        "context",
        "progress",
        "token",
        "timeout",
        "signal",
        "process",
        "module",
        "import",
    ]
)


def read_file_text(lines: int = READ_LINES) -> str:
    """``lines`` lines of deterministic prose-like text (about 80 bytes a line)."""
    rng = random.Random(2000)
    out = []
    for number in range(lines):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14)))
        out.append(f"{number:05d} {words}\n")
    return "".join(out)


TRIVIAL_PLUGIN = '''"""Benchmark plugin {index}: one trivial tool."""

from awf_mcp import hookimpl, tool


@tool(read_only=True)
def ping(text: str = "") -> str:
    """Answer pong."""
    return "pong " + text


@hookimpl
def awf_mcp_register_tools(plugin):
    plugin.register(ping)
'''


MEMORY_PLUGIN = '''"""Benchmark plugin: the Read benchmark's text from memory, on the loop or in a thread."""

from awf_mcp import hookimpl, tool

with open({path!r}, encoding="utf-8") as source:
    TEXT = source.read()


@tool(read_only=True)
async def on_loop(path: str = "") -> str:
    """The text, from memory, on the event loop."""
    return TEXT


@tool(read_only=True)
def in_thread(path: str = "") -> str:
    """A fresh copy of the text, made in a worker thread (as a file tool makes its text)."""
    return TEXT.encode().decode()


@hookimpl
def awf_mcp_register_tools(plugin):
    plugin.register(on_loop)
    plugin.register(in_thread)
'''


def make_memory_plugin(target: Path, text_file: Path) -> Path:
    """The ``memory`` plugin (``memory_on_loop``, ``memory_in_thread``) in ``target``, as pip lays it out."""
    target.mkdir(parents=True, exist_ok=True)
    source = MEMORY_PLUGIN.format(path=str(text_file))
    _write_plugin(target, "awf_bench_memory", "awf-bench-memory", "memory", source)
    compileall.compile_dir(str(target), quiet=1, legacy=False)
    return target


def _write_plugin(target: Path, module: str, dist: str, entry: str, source: str) -> None:
    """One plugin distribution ``dist`` (module ``module``, entry point ``entry``) in ``target``."""
    version = "1.0.0"
    (target / f"{module}.py").write_text(source, encoding="utf-8")
    info = target / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[awf_mcp]\n{entry} = {module}\n", encoding="utf-8")
    (info / "RECORD").write_text(
        f"{module}.py,,\n{info.name}/METADATA,,\n{info.name}/entry_points.txt,,\n{info.name}/RECORD,,\n",
        encoding="utf-8",
    )
    (info / "INSTALLER").write_text("pip\n", encoding="utf-8")


def make_plugins(target: Path, count: int) -> Path:
    """``count`` tiny plugin distributions in ``target``, laid out as ``pip install --target`` would."""
    target.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        _write_plugin(
            target,
            f"awf_bench_plugin_{index:03d}",
            f"awf-bench-plugin-{index:03d}",
            f"bench{index:03d}",
            TRIVIAL_PLUGIN.format(index=index),
        )
    # pip byte-compiles what it installs; do the same so start-up is not charged for compiling.
    compileall.compile_dir(str(target), quiet=1, legacy=False)
    return target


@dataclass(frozen=True, slots=True)
class GrepTree:
    """A generated tree for the Grep benchmark."""

    root: Path
    files: int
    total_bytes: int
    needle_files: int
    needle_lines: int

    PATTERN = "NEEDLE_[0-9]+"


def grep_tree(cache_dir: Path, *, files: int, file_bytes: int) -> GrepTree:
    """The tree of ``files`` files of about ``file_bytes`` each, generated once into ``cache_dir``."""
    key = f"grep-tree-{files}x{file_bytes}"
    root = cache_dir / key
    marker = cache_dir / f"{key}.json"
    if marker.is_file() and root.is_dir():
        info = json.loads(marker.read_text(encoding="utf-8"))
        return GrepTree(root=root, **info)
    if root.exists():
        shutil.rmtree(root)
    rng = random.Random(files)
    pool = []
    for _ in range(512):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 16)))
        pool.append(f"{words}\n")
    per_dir = 100
    total = 0
    needle_files = 0
    needle_lines = 0
    for index in range(files):
        directory = root / f"d{index // (per_dir * 50):03d}" / f"s{(index // per_dir) % 50:02d}"
        if index % per_dir == 0:
            directory.mkdir(parents=True, exist_ok=True)
        lines = []
        size = 0
        while size < file_bytes:
            line = pool[rng.randrange(len(pool))]
            lines.append(line)
            size += len(line)
        if index % 50 == 7:
            needle_files += 1
            for spot in (3, len(lines) // 2):
                lines[spot] = f"found NEEDLE_{index} here {lines[spot]}"
                needle_lines += 1
        data = "".join(lines).encode()
        total += len(data)
        (directory / f"f{index:06d}.txt").write_bytes(data)
    info = {"files": files, "total_bytes": total, "needle_files": needle_files, "needle_lines": needle_lines}
    marker.write_text(json.dumps(info), encoding="utf-8")
    return GrepTree(root=root, **info)


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "awf-mcp-bench"
