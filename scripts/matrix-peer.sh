#!/usr/bin/env bash
# Installs Synapse, the reference Matrix homeserver (every package pinned by
# scripts/matrix-peer/requirements.txt), into a venv in the build folder, and prints the
# variable that points the Matrix channel's tests at its python:
#   eval "$(scripts/matrix-peer.sh)"   # then cargo test --test matrix
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/pinned-venv.sh
venv="$(pinned_venv matrix-venv scripts/matrix-peer/requirements.txt \
    'import synapse.app.homeserver')"
echo "export NIGHTSHIFT_TEST_SYNAPSE_PYTHON='$venv/bin/python'"
