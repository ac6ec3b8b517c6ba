#!/usr/bin/env bash
# Installs the A2A agent the tests start (scripts/a2a_agent.py, made with the official
# Python SDK), and the official Standard Webhooks library the webhook receiver verifies
# with and the OpenTelemetry protocol's messages the OTLP receiver decodes with (every
# package pinned by scripts/a2a-peers/requirements.txt), into a venv in
# the build folder, and prints the variable that points the tests at its python:
#   eval "$(scripts/a2a-peers.sh)"   # then cargo test --test a2a
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
venv="$(cd "$target" && pwd)/a2a-peers-venv"
if ! cmp -s scripts/a2a-peers/requirements.txt "$venv/requirements.txt" 2>/dev/null \
    || ! "$venv/bin/python" -c 'import a2a.server, uvicorn, standardwebhooks, opentelemetry.proto, aiosmtpd, stripe, slack_sdk' 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        -r scripts/a2a-peers/requirements.txt >&2
    cp scripts/a2a-peers/requirements.txt "$venv/requirements.txt"
fi
echo "export NIGHTSHIFT_TEST_A2A_PYTHON='$venv/bin/python'"
