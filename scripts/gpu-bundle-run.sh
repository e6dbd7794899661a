#!/usr/bin/env bash
# run.sh of a folder that scripts/gpu-bundle.sh made: on a GPU machine, from a checkout of the
# commit the folder names in `commit`, runs compute_test, the gpu tests (cuda_backend_test,
# gpu_e2e_test) and bench/cnn_bench.sh cuda (against PyTorch eager, then PyTorch as a CUDA graph;
# ROUNDS and STEPS pass through), each with its log in LOG_DIR (default: the bundle's
# log/). Uses the machine's CUDA libraries (from /usr/local/cuda or Python's nvidia-* wheels) and
# PyTorch (python3). Meant for a GPU machine: a GPU is required (SYNCOPATE_REQUIRE_GPU=1, so the
# gpu tests fail rather than skip when theirs cannot be used). Exits 1 when any of them failed, or
# when no gpu test ran a test (every one skipped).
#   DIR/run.sh [LOG_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
logs=${1:-$here/log}
mkdir -p "$logs"
tar -xJf "$here/debian-lib.tar.xz" -C "$here" || exit 1

# CUDA's libraries: the toolkit's, or those of the nvidia-* Python wheels PyTorch uses.
roots=(/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu)
mapfile -t -O "${#roots[@]}" roots < <(python3 -c 'import nvidia; print(*nvidia.__path__, sep="\n")' 2>/dev/null)
cuda_dirs=$(find "${roots[@]}" \( -name 'libcudart.so.13' -o -name 'libcublas.so.13' \
  -o -name 'libcudnn.so.9' \) -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export LD_LIBRARY_PATH="$here/debian-lib:$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SYNCOPATE_CUDA_PLUGIN="$here/lib/libsyncopate-cuda.so" SYNCOPATE_BIN_DIR="$here/bin"
export SYNCOPATE_REQUIRE_GPU=1
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" | tee "$logs/environment.txt"
ldd "$SYNCOPATE_CUDA_PLUGIN" | tee -a "$logs/environment.txt"
nvidia-smi -L 2>&1 | tee -a "$logs/environment.txt"

# The tests read Fashion-MNIST where Debian's dataset-fashion-mnist puts it.
data=/usr/share/datasets/fashion-mnist
if [[ ! -f $data/train-images-idx3-ubyte.gz ]]; then
  mkdir -p "$data" && cp "$here"/data/*.gz "$data/"
fi

status=0
gpu_tests_passed=0
for test in compute_test cuda_backend_test gpu_e2e_test; do
  echo "== $test"
  "$here/tests/$test" 2>&1 | tee "$logs/$test.log" || status=1
  # gtest's summary: "[  PASSED  ] N tests." (N counts no skipped test).
  if [[ $test != compute_test ]] && grep -Eq '^\[  PASSED  \] [1-9][0-9]* tests?\.' "$logs/$test.log"; then
    gpu_tests_passed=$((gpu_tests_passed + 1))
  fi
done
if [[ $gpu_tests_passed -eq 0 ]]; then
  echo "FAIL: no gpu test passed a single test (all skipped or failed): see $logs" >&2
  status=1
fi
# Against PyTorch eager, then against PyTorch with its step replayed as a CUDA graph (PyTorch's
# standard remedy for launch overhead; bench/README.md).
echo "== bench/cnn_bench.sh cuda"
BIN_DIR="$here/bin" PYTHON=python3 PYTORCH_ARGS= bench/cnn_bench.sh cuda "${ROUNDS:-3}" 2>&1 |
  tee "$logs/cnn_bench_cuda.txt" || status=1
echo "== bench/cnn_bench.sh cuda, PyTorch as a CUDA graph"
BIN_DIR="$here/bin" PYTHON=python3 PYTORCH_ARGS=--cuda-graph bench/cnn_bench.sh cuda "${ROUNDS:-3}" \
  2>&1 | tee "$logs/cnn_bench_cuda_graph.txt" || status=1
exit $status
