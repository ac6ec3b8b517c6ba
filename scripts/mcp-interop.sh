#!/usr/bin/env bash
# The official Python MCP SDK (pinned) against a real `nightshift run` over streamable
# HTTP with a user token, and against `nightshift mcp` over stdio: every tool, every
# resource, each structured result checked against its outputSchema by the SDK.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
venv="$target/mcp-interop-venv"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==2.3.0"
fi
cargo build --locked --quiet --bin nightshift
bin="$(cd "$target" && pwd)/debug/nightshift"
work="$(mktemp -d)"
pid=""
trap '[[ -n "$pid" ]] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT
unset NIGHTSHIFT_CONFIG NIGHTSHIFT_LISTEN
export NIGHTSHIFT_DB="$work/interop.db"
token="$("$bin" --json token create --user interop | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$bin" --listen "127.0.0.1:$port" run >"$work/run.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
if ! "$venv/bin/python" scripts/mcp_interop.py "http://127.0.0.1:$port/mcp" "$token" "$bin" "$NIGHTSHIFT_DB"; then
    echo "mcp-interop: the Python SDK client failed (worker log below)" >&2
    tail -n 40 "$work/run.log" >&2
    exit 1
fi
