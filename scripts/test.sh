#!/usr/bin/env bash
# The test command: everything CI runs. Safe on a fresh machine; needs only cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked --lib --bins --tests "$@"
