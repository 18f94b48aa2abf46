#!/usr/bin/env bash
# Install the agent CLIs driven by tests/agents/test_real_agents.py into
# tests/agents/node_modules (versions pinned in package.json / package-lock.json).
#
#   bash tests/agents/install.sh
#
# Needs Node 20+ and npm, and the npm registry. Claude Code and Codex are native
# binaries shipped inside npm packages (a platform-specific optional dependency);
# no install script downloads anything else.
set -euo pipefail
cd "$(dirname "$0")"
command -v npm >/dev/null || { echo "install.sh: npm is not installed (need Node 20+ and npm)" >&2; exit 1; }
if [ -f package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
else
  npm install --no-audit --no-fund --loglevel=error
fi
for bin in claude gemini codex; do
  node_modules/.bin/$bin --version
done
