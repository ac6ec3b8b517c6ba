#!/usr/bin/env bash
# Installs the MCP reference servers the tests call (scripts/mcp-peers/, every package
# pinned by its lock file) into the build folder, and prints the variable that points the
# tests at them:
#   eval "$(scripts/mcp-peers.sh)"   # then cargo test --test mcp_tools
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
dest="$(cd "$target" && pwd)/mcp-peers"
everything="$dest/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if ! cmp -s scripts/mcp-peers/package-lock.json "$dest/package-lock.json" 2>/dev/null || [[ ! -f "$everything" ]]; then
    if ! command -v npm >/dev/null; then
        if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm >/dev/null
        else
            echo "mcp-peers.sh: npm is needed (apt-get install nodejs npm)" >&2
            exit 1
        fi
    fi
    rm -rf "$dest"
    mkdir -p "$dest"
    cp scripts/mcp-peers/package.json scripts/mcp-peers/package-lock.json "$dest/"
    npm ci --prefix "$dest" --no-audit --no-fund --loglevel=error >&2
fi
echo "export NIGHTSHIFT_TEST_MCP_EVERYTHING='$everything'"
