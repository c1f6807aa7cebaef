#!/usr/bin/env bash
# GPU readiness check for mxpatch_bind, from a checkout, in at most 8 minutes in all:
#   1. the NVIDIA GPUs and the CUDA version their driver supports (nvidia-smi);
#   2. a fresh virtual environment with the matching MXNet 1.9.1 GPU wheel (mxnet-cu117 for a
#      driver with CUDA >= 11.7, mxnet-cu112 for 11.2 to 11.6: the newest 1.9.1 GPU wheels),
#      numpy<1.24 and this checkout with its test extra;
#   3. python -m mxpatch_bind doctor;
#   4. tests/module/test_per_device.py on GPU contexts (MXPATCH_TEST_CONTEXTS=gpu);
#   5. the benchmarks at small size (python -m benchmarks --tiny), printing their tables;
# then a summary: each step's verdict and time.
#
# Usage: benchmarks/gpu_check.sh [--dry-run]
#   --dry-run   detect the GPUs, print the plan, install and run nothing
# Environment:
#   GPU_CHECK_BUDGET  seconds for everything (default 480)
#   GPU_CHECK_WHEELS  a folder of wheels to install from, offline (pip --no-index --find-links):
#                     the MXNet GPU wheel, numpy, wrapt, pytest, hypothesis, libcst, setuptools
#   GPU_CHECK_MXNET   the MXNet distribution to install instead of the guess, e.g. mxnet-cu112
#   GPU_CHECK_OUT     where the environment, logs and benchmark JSON go (default: a new
#                     temporary folder)
#   PYTHON            the interpreter for the environment (default python3; 3.9 to 3.11)
# Exit status: 0 when every step passed, 1 otherwise (no GPU, no wheel for the driver, a failed
# step), 124 when the budget ran out.
set -uo pipefail

budget=${GPU_CHECK_BUDGET:-480}
# One hard limit for the whole run: re-run this script under timeout(1) once.
if [ -z "${_GPU_CHECK_TIMED:-}" ]; then
    _GPU_CHECK_TIMED=1 exec timeout --kill-after=15 "$budget" bash "$0" "$@"
fi

cd "$(dirname "$0")/.." || exit 1
deadline=$((SECONDS + budget - 10))
dry_run=0
[ "${1:-}" = "--dry-run" ] && dry_run=1

say() { printf 'gpu_check: %s\n' "$*"; }
die() { printf 'gpu_check: %s\n' "$*" >&2; exit 1; }

# --- 1. GPUs and the driver's CUDA version: fail fast without them -------------------------
command -v nvidia-smi >/dev/null 2>&1 \
    || die "no NVIDIA driver here (nvidia-smi not found): this script needs a machine with" \
           "NVIDIA GPUs. On a CPU machine, .ci/run runs every check there is."
if ! gpus=$(nvidia-smi --query-gpu=index,name,driver_version,memory.total \
                       --format=csv,noheader 2>&1) || [ -z "$gpus" ]; then
    die "nvidia-smi found no usable GPU: $(printf '%s' "$gpus" | head -n 1)"
fi
cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' \
       | head -n 1)
[ -n "$cuda" ] || die "nvidia-smi does not report the driver's CUDA version; set GPU_CHECK_MXNET"
cuda_number=$(( ${cuda%%.*} * 100 + ${cuda#*.} ))
if [ -n "${GPU_CHECK_MXNET:-}" ]; then
    mxnet_dist=$GPU_CHECK_MXNET
elif [ "$cuda_number" -ge 1107 ]; then
    mxnet_dist=mxnet-cu117
elif [ "$cuda_number" -ge 1102 ]; then
    mxnet_dist=mxnet-cu112
else
    die "the driver supports CUDA $cuda; the MXNet 1.9.1 GPU wheels need CUDA 11.2 or later" \
        "(mxnet-cu112, mxnet-cu117): update the NVIDIA driver"
fi
gpu_count=$(printf '%s\n' "$gpus" | grep -c .)

python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(not (3, 9) <= sys.version_info[:2] <= (3, 11))' 2>/dev/null \
    || die "$python is not Python 3.9 to 3.11 (numpy<1.24, which MXNet 1.x needs, has no" \
           "wheels past 3.11): set PYTHON to such an interpreter"
pip_source=()
[ -n "${GPU_CHECK_WHEELS:-}" ] && pip_source=(--no-index --find-links "$GPU_CHECK_WHEELS")

say "$gpu_count GPU(s), driver CUDA $cuda -> $mxnet_dist==1.9.1, $("$python" --version 2>&1)"
printf '%s\n' "$gpus" | sed 's/^/    /'
if [ "$dry_run" = 1 ]; then
    say "plan: venv, pip install ${pip_source[*]} \"$mxnet_dist==1.9.1\" \"numpy<1.24\"" \
        "-e \".[test]\"; doctor; MXPATCH_TEST_CONTEXTS=gpu pytest tests/module/test_per_device.py;" \
        "MXPATCH_BENCH_CONTEXTS=gpu python -m benchmarks --tiny"
    exit 0
fi

out=${GPU_CHECK_OUT:-$(mktemp -d)}
mkdir -p "$out"
summary=()
failed=0

# Run one step under the time that is left; record its verdict and duration.
step() {
    local name=$1; shift
    local left=$((deadline - SECONDS)) start=$SECONDS status
    if [ "$left" -le 5 ]; then
        summary+=("SKIP  $name: out of time (GPU_CHECK_BUDGET=$budget)")
        failed=1
        return 1
    fi
    say "== $name (at most ${left}s)"
    timeout --kill-after=5 "$left" "$@"
    status=$?
    if [ "$status" = 0 ]; then
        summary+=("ok    $name ($((SECONDS - start))s)")
    else
        summary+=("FAIL  $name: exit status $status ($((SECONDS - start))s)")
        failed=1
    fi
    return "$status"
}

# Deterministic cuDNN: the per-device tests compare with stock one-context modules exactly.
export MXNET_CUDNN_AUTOTUNE_DEFAULT=0 MXNET_ENFORCE_DETERMINISM=1 MXNET_SUBGRAPH_VERBOSE=0

py=$out/venv/bin/python
if step "a fresh virtual environment in $out/venv" "$python" -m venv "$out/venv" \
    && step "pip, setuptools>=77, wheel" "$py" -m pip install --quiet "${pip_source[@]}" \
        --upgrade pip "setuptools>=77" wheel \
    && step "install $mxnet_dist==1.9.1, numpy<1.24, -e .[test]" "$py" -m pip install \
        --quiet "${pip_source[@]}" --no-build-isolation "$mxnet_dist==1.9.1" "numpy<1.24" \
        -e ".[test]"; then
    step "mxnet sees the GPUs" "$py" -c "import mxnet as mx; n = mx.context.num_gpus(); \
print('mxnet', mx.__version__, 'CUDA' if mx.runtime.Features().is_enabled('CUDA') else 'no CUDA', \
n, 'GPU(s)'); raise SystemExit(0 if n else 1)"
    step "python -m mxpatch_bind doctor" "$py" -m mxpatch_bind doctor
    if grep -q MXPATCH_TEST_CONTEXTS tests/conftest.py; then
        MXPATCH_TEST_CONTEXTS=gpu step "per-device tests on GPU contexts" \
            "$py" -m pytest -q -p no:cacheprovider tests/module/test_per_device.py
    else
        summary+=("FAIL  per-device tests on GPU contexts: tests/conftest.py does not read \
MXPATCH_TEST_CONTEXTS, so they would run on CPU contexts")
        failed=1
    fi
    grep -q MXPATCH_BENCH_CONTEXTS benchmarks/common.py \
        || say "note: benchmarks/common.py does not read MXPATCH_BENCH_CONTEXTS: the" \
               "benchmarks below run on CPU contexts, with the GPU build of MXNet"
    MXPATCH_BENCH_CONTEXTS=gpu step "python -m benchmarks --tiny" \
        "$py" -m benchmarks --tiny --out "$out/bench"
fi

say "summary ($gpu_count GPU(s), driver CUDA $cuda, $mxnet_dist; results in $out):"
printf '    %s\n' "${summary[@]}"
exit "$failed"
