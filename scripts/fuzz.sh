#!/usr/bin/env bash
# The property tests (tests/properties.rs, tests/properties_schedule.rs,
# tests/properties_memory.rs) with a large budget: PROPTEST_CASES cases a property (default
# 20000; a property that costs more a case divides it by its weight: see tests/props/mod.rs).
# `cargo test` runs the same tests with small budgets (CI's short mode, about 10 s); the
# default here takes about 16 minutes of a debug build on 2 cores (`--release` is faster
# to run, slower to build).
#
#   scripts/fuzz.sh [CASES] [--release] [-- TEST-NAME-FILTER…]
#
# Failures are shrunk and their seeds written to tests/proptest-regressions/*.txt, which
# every later run replays first: commit those files with the fix. Interesting inputs worth
# keeping in plain sight go to tests/corpus/ (format: tests/props/mod.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cases=20000
profile=()
filter=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --release) profile=(--release) ;;
        --) shift; filter=("$@"); break ;;
        ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [CASES] [--release] [-- FILTER…]" >&2; exit 2 ;;
        *) cases="$1" ;;
    esac
    shift
done
export PROPTEST_CASES="$cases"
log="$(mktemp -t nightshift-fuzz.XXXXXX)"
start=$(date +%s)
echo "fuzz: PROPTEST_CASES=$cases${profile:+ (release)}, log in $log"
status=0
cargo test "${profile[@]}" --locked --no-fail-fast --test properties --test properties_schedule \
    --test properties_memory -- "${filter[@]}" >"$log" 2>&1 || status=$?
elapsed=$(( $(date +%s) - start ))
echo
echo "fuzz: summary (${elapsed}s)"
grep -E '^test [a-z_:]+ \.\.\. ' "$log" | sed 's/^test /  /' || true
grep -E '^test result:' "$log" | sed 's/^/  /' || true
if [[ $status -ne 0 ]]; then
    echo
    echo "fuzz: failures (minimal inputs as proptest shrank them):"
    grep -E 'Test failed|minimal failing input|panicked at' "$log" | head -n 40 || true
    tail -n 5 "$log"
fi
changed="$(git status --porcelain -- tests/proptest-regressions 2>/dev/null || true)"
if [[ -n "$changed" ]]; then
    echo
    echo "fuzz: failure seeds not yet committed (commit them with the fix):"
    echo "$changed" | sed 's/^/  /'
fi
exit "$status"
