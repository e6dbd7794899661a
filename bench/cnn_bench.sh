#!/usr/bin/env bash
# CNN training throughput, Syncopate's backend against PyTorch on the same device, back to back.
#   bench/cnn_bench.sh [cpu|cuda] [rounds]
# Each round runs build/bin/syncopate-cnn-throughput, then bench/pytorch_cnn.py (same network,
# batch 128, FP32, the same Fashion-MNIST batches), and prints samples/s and their ratio. On the
# CPU both get the same threads (THREADS, default: all cores). PyTorch comes from PYTHON (default:
# the first of python3, /usr/bin/python3 that imports torch; on Debian 12: apt-get install
# python3-torch, CPU only). BIN_DIR (default build/bin) holds syncopate-cnn-throughput.
# PYTORCH_ARGS go to bench/pytorch_cnn.py: --cuda-graph replays PyTorch's step as one CUDA graph.
set -euo pipefail
cd "$(dirname "$0")/.."
device=${1:-cpu}
rounds=${2:-3}
threads=${THREADS:-$(nproc)}
steps=${STEPS:-200}

if [[ -z ${PYTHON:-} ]]; then
  for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import torch' 2>/dev/null; then PYTHON=$candidate; break; fi
  done
fi
if [[ -z ${PYTHON:-} ]]; then
  echo "no Python with torch found (Debian 12: apt-get install python3-torch; or set PYTHON)" >&2
  exit 1
fi
bench=${BIN_DIR:-build/bin}/syncopate-cnn-throughput
[[ -x $bench ]] || { echo "build first: ./scripts/build.sh" >&2; exit 1; }

rate() { sed -n 's/.*"samples_per_second": \([0-9.]*\).*/\1/p'; }
echo "device=$device batch=128 steps=$steps threads=$threads pytorch_args=${PYTORCH_ARGS:-none} ($("$PYTHON" -c 'import torch; print("torch", torch.__version__)'))"
printf '%-6s %14s %14s %8s\n' round syncopate/s pytorch/s ratio
for round in $(seq 1 "$rounds"); do
  ours=$(OPENBLAS_NUM_THREADS=$threads "$bench" --device="$device" --steps="$steps" | rate)
  theirs=$("$PYTHON" bench/pytorch_cnn.py --device="$device" --steps="$steps" --threads="$threads" ${PYTORCH_ARGS:-} | rate)
  [[ -n $ours && -n $theirs ]] || { echo "round $round: a benchmark printed no rate" >&2; exit 1; }
  awk -v r="$round" -v a="$ours" -v b="$theirs" 'BEGIN { printf "%-6s %14s %14s %8.2f\n", r, a, b, a / b }'
done
