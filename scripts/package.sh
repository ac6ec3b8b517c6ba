#!/usr/bin/env bash
# Builds the Debian package with cargo-deb: target/debian/nightshift_<version>-1_<arch>.deb
# holding the binary, the unit (enabled and started on install) and its system user,
# /etc/nightshift/nightshift.toml (a conffile), a man page for every command, bash, zsh and fish completions, the docs,
# and nightshift-fetch-model (the semantic model is fetched separately, on the machine).
#
#   scripts/package.sh           a release build (what to install)
#   scripts/package.sh --check   the debug binary the tests built, quickly (what CI checks)
#
# cargo-deb (pinned) is installed under the target dir on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="release"
if [[ "${1:-}" == "--check" ]]; then mode="check"; fi
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
tools="$target/tools"
if [[ ! -x "$tools/bin/cargo-deb" ]] || [[ "$("$tools/bin/cargo-deb" --version 2>/dev/null)" != *"3.8.0"* ]]; then
    cargo install --quiet --locked --version 3.8.0 --root "$tools" cargo-deb
fi

if [[ "$mode" == "release" ]]; then
    cargo build --locked --release --bin nightshift
    profile_dir="$target/release"
    profile_args=()
else
    cargo build --locked --quiet --bin nightshift
    # cargo-deb refuses the dev profile: the debug binary is packaged as the
    # `package-check` profile's (which inherits dev), without building again.
    profile_dir="$target/package-check"
    mkdir -p "$profile_dir"
    cp "$target/debug/nightshift" "$profile_dir/nightshift"
    profile_args=(--profile package-check --fast)
fi

assets="$profile_dir/assets"
rm -rf "$assets"
"$profile_dir/nightshift" generate man "$assets/man"
# Compressed here: cargo-deb leaves files from the target dir as they are.
gzip -9n "$assets"/man/*.1
# The configuration as installed: the example, with the database where the unit keeps it,
# so the CLI run as the service's user finds it with --config alone.
sed 's#^path = "data/nightshift.db"#path = "/var/lib/nightshift/nightshift.db"#' \
    config/nightshift.toml > "$assets/nightshift.toml"
grep -q '^path = "/var/lib/nightshift/nightshift.db"' "$assets/nightshift.toml" ||
    { echo "package: config/nightshift.toml has no [database] path line to set" >&2; exit 1; }
"$profile_dir/nightshift" generate completions "$assets/completions"

CARGO_TARGET_DIR="$target" "$tools/bin/cargo-deb" --no-build --locked \
    "${profile_args[@]}" --output "$target/debian/"
ls -1 "$target"/debian/nightshift_*.deb | tail -n 1
