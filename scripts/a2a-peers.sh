#!/usr/bin/env bash
# Installs the A2A agent the tests start (scripts/a2a_agent.py, made with the official
# Python SDK), and the official Standard Webhooks library the webhook receiver verifies
# with and the OpenTelemetry protocol's messages the OTLP receiver decodes with (every
# package pinned by scripts/a2a-peers/requirements.txt), into a venv in
# the build folder, and prints the variable that points the tests at its python:
#   eval "$(scripts/a2a-peers.sh)"   # then cargo test --test a2a
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/pinned-venv.sh
venv="$(pinned_venv a2a-peers-venv scripts/a2a-peers/requirements.txt \
    'import a2a.server, uvicorn, standardwebhooks, opentelemetry.proto, aiosmtpd, stripe, slack_sdk')"
echo "export NIGHTSHIFT_TEST_A2A_PYTHON='$venv/bin/python'"
