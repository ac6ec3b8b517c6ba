#!/usr/bin/env bash
# The crash-loop harness in its full mode (tests/crashloop/): a worker and CLI writers
# under load, SIGKILLed at random moments KILLS times, the database checked after each.
#
#   scripts/crashloop.sh                 500 kills of the worker, then 500 of a writer
#                                        mid-command and the worker, on a file
#   scripts/crashloop.sh --server        500 kills of the worker against the sqld binary
#                                        NIGHTSHIFT_TEST_SQLD names (skipped without one)
#   scripts/crashloop.sh --postgres      500 kills of the worker on PostgreSQL (a throwaway
#                                        cluster, scripts/postgres-cluster.sh), the server
#                                        itself killed and restarted every third round
#   scripts/crashloop.sh --kills 50      fewer
#   scripts/crashloop.sh --seed N        replay the random moments of a run that failed
#
# CI runs the short mode (15 kills each, on a file and on PostgreSQL) as part of `cargo test`. Each run
# prints a table and `crashloop_kills=… crashloop_operations=… crashloop_violations=…`;
# a failing run keeps its database and logs in a folder it names.
set -euo pipefail
cd "$(dirname "$0")/.."
kills=500
server=0
postgres=0
while [ $# -gt 0 ]; do
    case "$1" in
        --kills) kills="${2:-}"; shift; [ $# -gt 0 ] && shift ;;
        --seed)
            case "${2:-}" in ''|*[!0-9]*) echo "crashloop.sh: --seed takes a number" >&2; exit 2 ;; esac
            export NIGHTSHIFT_CRASHLOOP_SEED="$2"; shift 2 ;;
        --server) server=1; shift ;;
        --postgres) postgres=1; shift ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "crashloop.sh: unknown argument: $1" >&2; exit 2 ;;
    esac
done
case "$kills" in ''|*[!0-9]*) echo "crashloop.sh: --kills takes a number" >&2; exit 2 ;; esac
export NIGHTSHIFT_CRASHLOOP_KILLS="$kills"
if [ "$server" = 1 ]; then
    filter=(on_a_server --ignored)
elif [ "$postgres" = 1 ]; then
    if [ -z "${NIGHTSHIFT_TEST_POSTGRES_URL:-}" ]; then
        eval "$(scripts/postgres-cluster.sh start)"
        trap 'scripts/postgres-cluster.sh stop "$NIGHTSHIFT_TEST_POSTGRES_DIR"' EXIT
    fi
    filter=(on_postgres)
else
    filter=(on_a_file)
fi
# One test at a time: each loads the machine on its own.
cargo test --locked --test crashloop -- "${filter[@]}" --nocapture --test-threads 1
