#!/usr/bin/env bash
# The dashboard in a real headless browser: Debian's chromium (installed with apt when
# missing) driven by Playwright (pinned, in a venv under the target dir), against a real
# `nightshift run` with a channel that refuses every delivery. Every page is audited by
# axe-core (no serious or critical violation) and kept as a screenshot under
# target/ui-screenshots/ for a person to look at.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -x /usr/bin/chromium ]]; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
    else
        echo "ui-test: needs /usr/bin/chromium (apt-get install chromium)" >&2
        exit 1
    fi
fi
target="${CARGO_TARGET_DIR:-target}"
venv="$target/ui-test-venv"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import playwright' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "playwright==1.65.2"
fi
# axe-core (pinned, from npm) audits each page for accessibility.
axe="$target/ui-test-npm/node_modules/axe-core/axe.min.js"
if [[ ! -f "$axe" ]]; then
    npm install --silent --no-save --no-audit --no-fund --prefix "$target/ui-test-npm" "axe-core@4.14.1" >/dev/null
fi
screenshots="$target/ui-screenshots"
mkdir -p "$screenshots"
cargo build --locked --quiet --bin nightshift
bin="$(cd "$target" && pwd)/debug/nightshift"
work="$(mktemp -d)"
pid=""
trap '[[ -n "$pid" ]] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT
unset NIGHTSHIFT_CONFIG NIGHTSHIFT_LISTEN NIGHTSHIFT_DB
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cat > "$work/nightshift.toml" <<TOML
[database]
path = "$work/ui.db"

[server]
listen = "127.0.0.1:$port"

[notify]
max_attempts = 1

[channels.hook]
kind = "webhook"
url = "http://127.0.0.1:9/refused"

[users.alice]
default_channel = "hook"
TOML
token="$("$bin" --config "$work/nightshift.toml" --json token create --admin | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')"
"$bin" --config "$work/nightshift.toml" run >"$work/run.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
if ! "$venv/bin/python" scripts/ui_test.py "http://127.0.0.1:$port" "$token" "$bin" "$work/nightshift.toml" \
    "$axe" "$screenshots"; then
    echo "ui-test: the browser test failed (worker log below)" >&2
    tail -n 40 "$work/run.log" >&2
    exit 1
fi
