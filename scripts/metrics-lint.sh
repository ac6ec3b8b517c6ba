#!/usr/bin/env bash
# Prometheus's own linter (`promtool check metrics`, Debian's prometheus package, installed
# with apt when missing) on a real `nightshift run`'s /metrics after it served requests.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v promtool >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >/dev/null
        # The package's own server is not wanted here.
        pkill -x prometheus 2>/dev/null || true
    else
        echo "metrics-lint: needs promtool (apt-get install prometheus)" >&2
        exit 1
    fi
fi
target="${CARGO_TARGET_DIR:-target}"
cargo build --locked --quiet --bin nightshift
bin="$(cd "$target" && pwd)/debug/nightshift"
work="$(mktemp -d)"
pid=""
trap '[[ -n "$pid" ]] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT
unset NIGHTSHIFT_CONFIG NIGHTSHIFT_LISTEN
export NIGHTSHIFT_DB="$work/lint.db"
token="$("$bin" --json token create --user lint | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')"
"$bin" schedule add --user lint --goal "lint" --every 1h >/dev/null
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$bin" --listen "127.0.0.1:$port" run >"$work/run.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
api="http://127.0.0.1:$port"
curl -sf -X POST "$api/v1/notes" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"text": "metrics lint"}' >/dev/null
curl -sf -X POST "$api/v1/search" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"query": "lint"}' >/dev/null
curl -s -X BREW "$api/healthz" >/dev/null || true
curl -sf "$api/metrics" >"$work/metrics.txt"
if ! promtool check metrics <"$work/metrics.txt"; then
    echo "metrics-lint: promtool found problems in /metrics (above)" >&2
    exit 1
fi
echo "metrics-lint: promtool check metrics passed ($(grep -c '^# TYPE' "$work/metrics.txt") families)"
