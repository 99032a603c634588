#!/usr/bin/env bash
# The whole GPU check in one command, for a lent GPU machine (docs/GPU.md): no network, no jitdtypes installed,
# the working tree copied there. Within 8 minutes it writes, under $OUT (at most 8 files, as the device tool
# brings back):
#   summary.txt       environment, each step's exit status and time, then every table below
#   gpu_check.txt     correctness of every family against complex64, speed against complex64 and copy
#                     bandwidth, first-call and warm latencies (benchmarks.gpu_check)
#   gpu_discovery.txt CUDA and CPU discovery side by side: time, overrides, crashed overloads
#   compile.txt       torch.compile on CUDA: compiled jitdtypes against eager and complex64 (benchmarks.compile)
#   logs.tar.gz       every step's full output, the CSV rows and the discovery records
#
#   OUT=/tmp/out benchmarks/gpu_session.sh          # or: benchmarks/gpu_session.sh OUTDIR
#   SIMULATE=sm_90 benchmarks/gpu_session.sh OUTDIR  # no GPU: every step against a simulated one (CI does this)
#
# Each step has its own time limit, so a step that hangs costs only its share; the exit status is the number
# of steps that failed. The cache is $JITDTYPES_CACHE_DIR when set, else a fresh one.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-benchmarks/results/gpu_session}}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/jitdtypes-gpu-session-XXXXXX)
export JITDTYPES_CACHE_DIR="${JITDTYPES_CACHE_DIR:-$WORK/cache}" PYTHONUNBUFFERED=1
export SIMULATE=${SIMULATE:-}
# The check's limit: on a GPU its kernels compile on the machine's many cores; simulated (CPU tensors, kernels
# compiled for the arch, nothing launched: benchmarks.host_time) every ptxas run shares a CI machine's 2 cores
# with the test suite's other workers
if [ -n "$SIMULATE" ]; then
  DEVICES=(--devices cpu) CHECK=(--simulate "$SIMULATE") CHECK_LIMIT=900
  unset TRITON_INTERPRET
else
  DEVICES=() CHECK=() CHECK_LIMIT=240
fi
PYTHON=${PYTHON:-python3}
SUMMARY="$OUT/summary.txt"
STARTED=$SECONDS
: > "$SUMMARY"

# Offline: no build isolation (it would fetch setuptools); a checkout runs as it is where pip cannot install it.
if "$PYTHON" -m pip install -q --no-deps --no-build-isolation -e . > "$WORK/install.log" 2>&1; then
  INSTALLED="pip install --no-deps --no-build-isolation -e ."
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
  INSTALLED="PYTHONPATH=$PWD (pip install failed: $(grep -m 1 -i error "$WORK/install.log" || tail -n 1 "$WORK/install.log"))"
fi

{
  echo "# jitdtypes GPU session, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD 2>/dev/null || echo 'no git')${SIMULATE:+, simulated $SIMULATE}"
  echo "install: $INSTALLED"
  "$PYTHON" - <<'EOF'
import os, platform, sys, time
import torch, triton
print(f"python {platform.python_version()}, torch {torch.__version__}, triton {triton.__version__}, "
      f"{os.cpu_count()} cores")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"GPU {p.name}, sm_{p.major}{p.minor}, {p.multi_processor_count} SMs, {p.total_memory / 2**30:.0f} GiB")
elif os.environ.get("SIMULATE"):
    print(f"no CUDA device: a simulated {os.environ['SIMULATE']} (host code up to each kernel launch, no values, no times)")
else:
    print("no CUDA device: the steps below say so and measure nothing on a GPU")
EOF
  nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null \
    | sed 's/^/driver, max SM clock, power limit: /'
} >> "$SUMMARY" 2>&1

# step NAME SECONDS COMMAND...: run with a time limit, output to $WORK/NAME.log, status and time to the summary
step() {
  local name=$1 limit=$2 begun=$SECONDS status
  shift 2
  timeout --kill-after=10 "$limit" "$@" > "$WORK/$name.log" 2>&1
  status=$?
  local verdict="ok"
  [ "$status" -eq 124 ] && verdict="TIMED OUT after ${limit} s"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] && verdict="FAILED (exit $status)"
  printf '%-14s %-28s %4d s\n' "$name" "$verdict" $((SECONDS - begun)) >> "$SUMMARY"
}

echo >> "$SUMMARY"
echo "step           result                       time" >> "$SUMMARY"
# A first import's two long parts side by side, as an import runs them: the compiled guard's build (one core)
# and discovery (the other cores); every later step starts from their results.
step guard 180 env JITDTYPES_DISABLE=1 "$PYTHON" -c "from jitdtypes.native_guard import build; print(build.ensure())" &
step discovery 120 "$PYTHON" -m benchmarks.gpu_discovery "${DEVICES[@]}" --out "$WORK/discovery"
wait
mkdir -p -m 700 "$JITDTYPES_CACHE_DIR/discovery"
cp -n "$WORK"/discovery/records/*.json "$JITDTYPES_CACHE_DIR/discovery/" 2>/dev/null
step import 60 "$PYTHON" -c "import time; t = time.perf_counter(); import jitdtypes; print(f'import, discovery and guard cached: {time.perf_counter() - t:.1f} s, guard {jitdtypes.guard()}')"
step gpu_check "$CHECK_LIMIT" "$PYTHON" -m benchmarks.gpu_check "${CHECK[@]}" --out "$WORK" --seeded-first-import
step compile 60 "$PYTHON" -m benchmarks.compile --devices cuda --rounds 3 --calls 3 \
  --programs "elementwise chain,reduction chain,spectral conv fwd+bwd"

cp "$WORK/discovery/gpu_discovery.txt" "$OUT/" 2>/dev/null || cp "$WORK/discovery.log" "$OUT/gpu_discovery.txt"
cp "$WORK/gpu_check.txt" "$OUT/" 2>/dev/null || cp "$WORK/gpu_check.log" "$OUT/gpu_check.txt"
cp "$WORK/compile.log" "$OUT/compile.txt"
FAILED=$(grep -c -e ' FAILED (exit' -e ' TIMED OUT after' "$SUMMARY")
{
  echo "total          $((SECONDS - STARTED)) s, $FAILED failed step(s)"
  for name in guard discovery import gpu_check compile; do
    echo
    echo "## $name (last lines of its output)"
    tail -n 60 "$WORK/$name.log"
  done
} >> "$SUMMARY"
cp -r benchmarks/results "$WORK/csv" 2>/dev/null
tar -czf "$OUT/logs.tar.gz" -C "$WORK" --exclude=./cache . 2>/dev/null
rm -rf "$WORK"
cat "$SUMMARY"
exit "$FAILED"
