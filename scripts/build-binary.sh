#!/usr/bin/env bash
# Build the single executable dist/awf-mcp with PyInstaller and smoke-test it.
#
#   bash scripts/build-binary.sh [pyinstaller args...]
#
# AWF_MCP_DISTPATH / AWF_MCP_WORKPATH move the output (default dist/) and build (build/) dirs.
# Uses the Python of the active virtualenv ($PYTHON, else python3 on PATH); installs
# PyInstaller into it when missing. AWF_MCP_ONEDIR=1 builds dist/awf-mcp-onedir/awf-mcp
# (a directory: faster start-up, nothing unpacked per start) instead of the one file.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ] && [ -z "${PYTHON:-}" ]; then
  python="$VIRTUAL_ENV/bin/python"
fi

if ! "$python" -c 'import PyInstaller' >/dev/null 2>&1; then
  echo "build-binary: installing PyInstaller into $("$python" -c 'import sys; print(sys.prefix)')"
  "$python" -m pip install --disable-pip-version-check -q 'pyinstaller>=6.10,<7'
fi
if ! "$python" -c 'import awf_mcp' >/dev/null 2>&1; then
  echo "build-binary: installing awf-mcp into the build environment"
  "$python" -m pip install --disable-pip-version-check -q -e .
fi

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

version=$("$binary" --version)
expected="awf-mcp $("$python" -c 'import awf_mcp; print(awf_mcp.__version__)')"
if [ "$version" != "$expected" ]; then
  echo "build-binary: smoke test failed: '$binary --version' printed '$version', expected '$expected'" >&2
  exit 1
fi
echo "build-binary: smoke test ok: $version"
