#!/usr/bin/env bash
# Points schemathesis (a third-party OpenAPI fuzzer, pinned) at a real `nightshift run`
# with a user token and an admin token, with every check it has (scripts/schemathesis.toml
# names the few operations whose rules join two inputs, and which check those skip): no
# 5xx, every answer as the OpenAPI document says, what the document calls valid accepted
# and what it calls invalid refused, no answer without a valid token. `--examples N` per
# operation (default 30, what CI runs; 500 for a long run). API_FUZZ_CHECKS=a,b runs only
# those checks.
set -euo pipefail
cd "$(dirname "$0")/.."
examples=30
if [[ "${1:-}" == "--examples" ]]; then examples="$2"; fi
target="${CARGO_TARGET_DIR:-target}"
venv="$target/api-fuzz-venv"
if [[ ! -x "$venv/bin/st" ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==4.32.5"
fi
cargo build --locked --quiet --bin nightshift
bin="$target/debug/nightshift"
work="$(mktemp -d)"
pid=""
trap '[[ -n "$pid" ]] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT
unset NIGHTSHIFT_CONFIG NIGHTSHIFT_LISTEN
export NIGHTSHIFT_DB="$work/fuzz.db"
secret() { "$bin" --json token create "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])'; }
user_token="$(secret --user fuzz)"
admin_token="$(secret --admin)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$bin" --listen "127.0.0.1:$port" run >"$work/run.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
base="http://127.0.0.1:$port"
# A run's event stream, which the fuzzer reaches only when a run happens to exist: one is
# started, and its events are checked against the document by schemathesis's own check.
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
schedule="$(curl -sf -X POST -H "Authorization: Bearer $user_token" \
    -H 'content-type: application/json' -d '{"goal":"say hello","triggered":true}' \
    "$base/v1/schedules" | field 'd["schedule_id"]')"
curl -sf -X POST -H "Authorization: Bearer $user_token" -H 'content-type: application/json' \
    -d '{}' "$base/v1/schedules/$schedule/trigger" >/dev/null
run=""
for _ in $(seq 100); do
    run="$(curl -sf -H "Authorization: Bearer $user_token" "$base/v1/schedules/$schedule/runs" |
        field '(d if isinstance(d, list) else d["runs"])[0]["run_id"] if (d if isinstance(d, list) else d["runs"]) else ""')"
    [[ -n "$run" ]] && break
    sleep 0.1
done
[[ -n "$run" ]] || { echo "api-fuzz: the triggered schedule never ran" >&2; exit 1; }
"$venv/bin/python" scripts/sse_conformance.py "$base" "$user_token" "$run"
status=0
# With an admin token a user's route needs ?user=, which a document cannot make required
# for one kind of token only: that pass leaves out positive_data_acceptance, which the
# user token's pass runs.
for token in user admin; do
    if [[ $token == user ]]; then bearer="$user_token"; skip=(); else
        bearer="$admin_token"; skip=(--exclude-checks positive_data_acceptance); fi
    "$venv/bin/st" --config-file scripts/schemathesis.toml \
        run "$base/v1/openapi.json" \
        -H "Authorization: Bearer $bearer" \
        ${API_FUZZ_CHECKS:+--checks "$API_FUZZ_CHECKS"} "${skip[@]}" \
        --max-examples "$examples" --seed 1 --no-color >"$work/st.log" 2>&1 || status=$?
    tail -n 25 "$work/st.log"
    if [[ $status -ne 0 ]]; then
        echo "api-fuzz: schemathesis found failures with the $token token:" >&2
        grep -E '^_+ |^- ST|message|curl -X' "$work/st.log" | head -n 80 >&2 || true
        tail -n 40 "$work/run.log" >&2
        exit "$status"
    fi
done
echo "api-fuzz: every check passed, with a user token and an admin token"
