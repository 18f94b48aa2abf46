#!/usr/bin/env bash
# Build the single executable dist/awf-mcp with PyInstaller and smoke-test it.
#
#   bash scripts/build-binary.sh [pyinstaller args...]
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
start=$(date +%s)
"$python" -m PyInstaller --noconfirm --clean --distpath "$dist" --workpath "$work" "$@" build.spec
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
