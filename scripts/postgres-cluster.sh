#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests and benchmarks: Debian's postgresql
# (installed with apt when missing and run as root), a fresh `initdb` in a temp folder,
# listening on 127.0.0.1 at a free port and on a unix socket in that folder, trusting
# local connections (nothing else can reach it). PostgreSQL refuses to run as root, so as
# root the cluster belongs to the `postgres` user the package makes.
#
#   eval "$(scripts/postgres-cluster.sh start)"   # sets NIGHTSHIFT_TEST_POSTGRES_URL
#   scripts/postgres-cluster.sh stop              # stops it and removes its folder
#   scripts/postgres-cluster.sh restart           # kills it (-m immediate) and starts it
#   scripts/postgres-cluster.sh down DIR / up DIR # kills it / starts it again
#
# Each test makes a database of its own on the cluster (tests/common/postgres.rs). The
# server takes TLS too, with a certificate made here (NIGHTSHIFT_TEST_POSTGRES_CA).
set -euo pipefail

bin_dir() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    [[ -n "$dir" && -x "$dir/initdb" ]] && echo "$dir"
}

as_owner() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

start() {
    local bin
    if ! bin="$(bin_dir)"; then
        if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
            bin="$(bin_dir)"
        else
            echo "postgres-cluster.sh: PostgreSQL is needed (apt-get install postgresql)" >&2
            exit 1
        fi
    fi
    local dir port
    dir="$(mktemp -d /tmp/nightshift-postgres.XXXXXX)"
    chmod 700 "$dir"
    [[ "$(id -u)" == 0 ]] && chown postgres: "$dir"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    as_owner "$bin/initdb" -D "$dir/data" -U nightshift --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    # TLS with a certificate for 127.0.0.1 and localhost, signed by a CA made here (the
    # TLS tests name the CA as the URL's sslrootcert; openssl comes with postgresql).
    {
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=nightshift test CA" \
            -keyout "$dir/ca.key" -out "$dir/ca.crt" &&
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
            -keyout "$dir/server.key" -out "$dir/server.csr" &&
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$dir/server.ext" &&
        openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
            -CAcreateserial -days 2 -extfile "$dir/server.ext" -out "$dir/server.crt"
    } >"$dir/openssl.log" 2>&1 || { cat "$dir/openssl.log" >&2; exit 1; }
    chmod 600 "$dir/server.key" "$dir/ca.key"
    [[ "$(id -u)" == 0 ]] && chown postgres: "$dir/server.key" "$dir/server.crt"
    # Settings for a disposable cluster: no fsync (only a crash of the machine could lose
    # the cluster), room for many workers' pools. Commits stay synchronous: the crash
    # loop kills the server, and with synchronous_commit=off a commit it has confirmed is
    # lost with the WAL still in its memory.
    echo "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=off -c full_page_writes=off -c max_connections=400 -c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key" >"$dir/options"
    up "$dir"
    echo "$dir" >"${TMPDIR:-/tmp}/nightshift-postgres.current"
    echo "export NIGHTSHIFT_TEST_POSTGRES_URL='postgresql://nightshift@127.0.0.1:$port/postgres'"
    echo "export NIGHTSHIFT_TEST_POSTGRES_DIR='$dir'"
    echo "export NIGHTSHIFT_TEST_POSTGRES_CA='$dir/ca.crt'"
}

# Starts the server of the cluster in DIR, with the settings `start` gave it.
up() {
    local dir="$1"
    as_owner "$(bin_dir)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
        -o "$(cat "$dir/options")" >&2 \
        || { cat "$dir/server.log" >&2; exit 1; }
}

# Stops the server as a crash would, leaving the cluster to start again with `up`.
down() {
    as_owner "$(bin_dir)/pg_ctl" -D "$1/data" -m immediate -w stop >/dev/null
}

# Stops the server as a crash would (no checkpoint: it recovers from its log on start)
# and starts it again with the same settings; for the crash loop.
restart() {
    local dir="${1:-${NIGHTSHIFT_TEST_POSTGRES_DIR:-}}"
    [[ -n "$dir" && -d "$dir/data" ]] || { echo "postgres-cluster.sh: no cluster to restart" >&2; exit 1; }
    as_owner "$(bin_dir)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m immediate -w -t 60 restart >/dev/null \
        || { tail -n 20 "$dir/server.log" >&2; exit 1; }
}

stop() {
    local dir="${1:-${NIGHTSHIFT_TEST_POSTGRES_DIR:-}}"
    if [[ -z "$dir" && -f "${TMPDIR:-/tmp}/nightshift-postgres.current" ]]; then
        dir="$(cat "${TMPDIR:-/tmp}/nightshift-postgres.current")"
    fi
    [[ -n "$dir" && -d "$dir" ]] || return 0
    local bin
    bin="$(bin_dir)"
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    if [[ "$(cat "${TMPDIR:-/tmp}/nightshift-postgres.current" 2>/dev/null)" == "$dir" ]]; then
        rm -f "${TMPDIR:-/tmp}/nightshift-postgres.current"
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop "${2:-}" ;;
    restart) restart "${2:-}" ;;
    down) down "${2:?usage: $0 down DIR}" ;;
    up) up "${2:?usage: $0 up DIR}" ;;
    *) echo "usage: $0 start | stop [DIR] | restart [DIR] | down DIR | up DIR" >&2; exit 2 ;;
esac
