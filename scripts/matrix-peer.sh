#!/usr/bin/env bash
# Installs Synapse, the reference Matrix homeserver (every package pinned by
# scripts/matrix-peer/requirements.txt), into a venv in the build folder, and prints the
# variable that points the Matrix channel's tests at its python:
#   eval "$(scripts/matrix-peer.sh)"   # then cargo test --test matrix
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
venv="$(cd "$target" && pwd)/matrix-venv"
if ! cmp -s scripts/matrix-peer/requirements.txt "$venv/requirements.txt" 2>/dev/null \
    || ! "$venv/bin/python" -c 'import synapse.app.homeserver' 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        -r scripts/matrix-peer/requirements.txt >&2
    cp scripts/matrix-peer/requirements.txt "$venv/requirements.txt"
fi
echo "export NIGHTSHIFT_TEST_SYNAPSE_PYTHON='$venv/bin/python'"
