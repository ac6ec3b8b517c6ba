#!/usr/bin/env bash
# Builds the Debian package (scripts/package.sh --check: the debug binary, quickly),
# unpacks it into a scratch root with dpkg -x, and checks what an operator relies on: the
# control data and conffile, the binary and its default configuration, the unit (it
# verifies, and its exposure stays at most 1.2), a man page for every command that
# renders without warnings, and the completions. Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "package-test: FAILED: $*" >&2; exit 1; }

deb="$(scripts/package.sh --check | tail -n 1)"
[[ -f "$deb" ]] || fail "no package built"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT

# Control data: the conffile, the unit enabled and started by the maintainer scripts.
dpkg-deb -f "$deb" Package | grep -qx nightshift || fail "package name"
dpkg-deb -f "$deb" Depends | grep -q libc6 || fail "Depends"
dpkg-deb -e "$deb" "$root/DEBIAN"
grep -qx /etc/nightshift/nightshift.toml "$root/DEBIAN/conffiles" || fail "conffile"
grep -q "deb-systemd-helper enable nightshift.service" "$root/DEBIAN/postinst" || fail "postinst enables the unit"
grep -q "deb-systemd-invoke \$_dh_action nightshift.service" "$root/DEBIAN/postinst" || fail "postinst starts the unit"

dpkg -x "$deb" "$root"
bin="$root/usr/bin/nightshift"
[[ -x "$bin" ]] || fail "no /usr/bin/nightshift"
[[ -x "$root/usr/bin/nightshift-fetch-model" ]] || fail "no nightshift-fetch-model"
"$bin" --version | grep -q "nightshift" || fail "the binary does not run"
"$bin" config check "$root/etc/nightshift/nightshift.toml" >/dev/null || fail "the default configuration is not valid"
grep -q '^path = "/var/lib/nightshift/nightshift.db"' "$root/etc/nightshift/nightshift.toml" ||
    fail "the installed configuration's database is not the unit's"
# The service's user, made by systemd-sysusers from the package's file on install.
grep -q '^u nightshift ' "$root/usr/lib/sysusers.d/nightshift.conf" || fail "no sysusers file"
grep -q "systemd-sysusers" "$root/DEBIAN/postinst" || fail "postinst creates the user"
grep -q "^User=nightshift" "$root/usr/lib/systemd/system/nightshift.service" || fail "the unit's user"

# The unit: it verifies (with ExecStart pointing into the scratch root), and stays tight.
unit="$root/usr/lib/systemd/system/nightshift.service"
[[ -f "$unit" ]] || fail "no unit"
grep -q "^ExecStart=/usr/bin/nightshift " "$unit" || fail "ExecStart is not /usr/bin/nightshift"
mkdir -p "$root/verify"
sed "s#/usr/bin/nightshift#$bin#" "$unit" > "$root/verify/nightshift.service"
verify="$(MANPATH="$root/usr/share/man" systemd-analyze verify "$root/verify/nightshift.service" 2>&1 || true)"
if [[ -n "$verify" ]]; then echo "$verify" >&2; fail "systemd-analyze verify"; fi
exposure="$(systemd-analyze security --offline=true "$unit" 2>&1 | sed -n 's/.*Overall exposure level for nightshift.service: \([0-9.]*\).*/\1/p')"
[[ -n "$exposure" ]] || fail "no exposure level"
awk -v e="$exposure" 'BEGIN { exit !(e <= 1.2) }' || fail "exposure $exposure > 1.2"

# A man page for every command, each rendering without a warning.
man1="$root/usr/share/man/man1"
for page in nightshift nightshift-run nightshift-mcp nightshift-status nightshift-memory-save \
            nightshift-schedule-add nightshift-token-create nightshift-config-check; do
    [[ -f "$man1/$page.1.gz" ]] || fail "no man page $page"
done
count=0
for page in "$man1"/*.1.gz; do
    warnings="$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null || true)"
    [[ -z "$warnings" ]] || fail "$(basename "$page"): $warnings"
    count=$((count + 1))
done
[[ $count -ge 40 ]] || fail "only $count man pages"
MANWIDTH=80 man -l "$man1/nightshift.1.gz" 2>/dev/null | grep -q "nightshift-status(1)\|status" || fail "nightshift(1) lists the commands"

# Completions where the shells look, bash's parsing.
bash -n "$root/usr/share/bash-completion/completions/nightshift" || fail "bash completion"
[[ -s "$root/usr/share/zsh/vendor-completions/_nightshift" ]] || fail "zsh completion"
[[ -s "$root/usr/share/fish/vendor_completions.d/nightshift.fish" ]] || fail "fish completion"
[[ -f "$root/usr/share/doc/nightshift/docs/operations.md" ]] || fail "docs"

echo "package-test: $(basename "$deb"): conffile, unit (exposure $exposure), $count man pages, completions"
