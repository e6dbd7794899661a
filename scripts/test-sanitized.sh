#!/usr/bin/env bash
# The checking build: the unit and integration tests under AddressSanitizer and
# UndefinedBehaviorSanitizer, Clang's -Wthread-safety over the ABSL_GUARDED_BY annotations (an
# error, not a warning), and a short run of every libFuzzer target (tests/fuzz), all in
# build-sanitized/ with Clang. scripts/test.sh runs it after the regular suite.
#   ./scripts/test-sanitized.sh            build, then run the C++ tests labelled unit,
#                                          integration or fuzz
#   ./scripts/test-sanitized.sh -L fuzz    narrow them with CTest arguments
# SYNCOPATE_FUZZ_SECONDS (default 10) sets how long each fuzz target runs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build-sanitized -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DSYNCOPATE_SANITIZE=address,undefined -DSYNCOPATE_THREAD_SAFETY=ON -DSYNCOPATE_BUILD_FUZZERS=ON \
  -DSYNCOPATE_FUZZ_SECONDS="${SYNCOPATE_FUZZ_SECONDS:-10}" \
  -DSYNCOPATE_BUILD_PYTHON=OFF -DSYNCOPATE_BUILD_BENCHMARKS=OFF -DSYNCOPATE_CUDA=OFF >/dev/null
cd build-sanitized
labels="unit|integration|fuzz"
# Build what those tests run, and no more (the e2e binaries are the regular build's).
mapfile -t tests < <(ctest -N -L "$labels" | sed -n 's/^ *Test *#[0-9]*: //p')
mapfile -t targets < <(ninja -t targets all | sed -n 's/: .*//p')
build=()
for t in "${tests[@]}"; do
  for known in "${targets[@]}"; do
    if [ "$t" = "$known" ]; then build+=("$t"); break; fi
  done
done
if [ ${#build[@]} -eq 0 ]; then
  echo "test-sanitized.sh: CTest lists no test to build (is build-sanitized/ configured?)" >&2
  exit 1
fi
ninja "${build[@]}"
# Only the C++ tests: the others (promtool, scripts) check no compiled code.
only="^($(IFS='|'; echo "${build[*]}"))\$"
# Every ASan and UBSan finding fails its test; leaks are findings too.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --output-on-failure --no-tests=error -j2 -R "$only" "$@"
