#!/usr/bin/env bash
# Install awf-mcp with its test extra, the test-only and example plugins, into a venv of the
# tests' own, .venv-test; run pytest. The product's .venv (the quick start) is left as it was:
# the test plugins never reach the tools an agent gets.
# Usage: bash tests/run.sh [pytest args...]     (AWF_MCP_VENV overrides the venv location)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${AWF_MCP_VENV:-.venv-test}"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
"${pip[@]}" install --upgrade pip setuptools wheel
"${pip[@]}" install -e ".[test]"
for plugin in tests/fixtures/awf-plugin-* plugins/awf-plugin-*; do
  [ -f "$plugin/pyproject.toml" ] && "${pip[@]}" install --no-deps -e "$plugin"
done
# Node.js test tools (the MCP conformance suite; the agent CLIs Claude Code, Gemini CLI and Codex;
# the upstream MCP servers), pinned by their package-lock.json files.
if command -v npm >/dev/null 2>&1; then
  for node_dir in tests/conformance tests/agents tests/upstreams; do
    if [ ! -d "$node_dir/node_modules" ]; then
      npm ci --prefix "$node_dir" --no-audit --no-fund --loglevel=error
    fi
  done
else
  echo "tests/run.sh: npm not found: the Node.js-based tests will be skipped (AWF_MCP_SKIP_NODE=1)" >&2
  export AWF_MCP_SKIP_NODE=1
fi
# Debian packages some tests run: HAProxy, the load balancer the replica tests put in front of
# two servers, and a static busybox, the only shell of the single executable's empty-root test.
# Installed when missing; without root to install them, stop here rather than skip those tests.
need_debian_package() {  # PACKAGE PROGRAM TEST-FILE
  if command -v "$2" >/dev/null 2>&1 || [ -x "/usr/sbin/$2" ] || [ -x "/bin/$2" ]; then
    return
  fi
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "$1" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$1"; }
  else
    echo "tests/run.sh: $1 is not installed and cannot be installed here (needs root and apt-get):" \
      "run 'sudo apt-get install $1' first; $3 needs it" >&2
    exit 1
  fi
}
need_debian_package haproxy haproxy tests/e2e/test_gateway_replicas.py
need_debian_package busybox-static busybox tests/e2e/test_frozen.py
set +e
"$venv/bin/python" -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "tests/run.sh: pytest collected no tests; that is a failure" >&2
  exit 1
fi
exit "$status"
