# Sourced by the peer scripts: `pinned_venv NAME REQUIREMENTS CHECK` makes (or keeps) the
# venv NAME in the build folder with every package REQUIREMENTS pins, rebuilt whenever
# the file changes or the python statement CHECK fails in it, and prints its path.
pinned_venv() {
    local name="$1" requirements="$2" check="$3"
    local target="${CARGO_TARGET_DIR:-target}"
    mkdir -p "$target"
    local venv
    venv="$(cd "$target" && pwd)/$name"
    if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null \
        || ! "$venv/bin/python" -c "$check" 2>/dev/null; then
        rm -rf "$venv"
        python3 -m venv "$venv" >&2
        "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
        cp "$requirements" "$venv/requirements.txt"
    fi
    echo "$venv"
}
