#!/usr/bin/env bash
# scripts/gpu-bundle-run.sh (a GPU bundle's run.sh) must not pass where no gpu test ran: a bundle
# whose gpu tests all skip exits non-zero and says so; one where a gpu test passed does not say so.
# The bundle here is a stand-in (the tests are scripts printing gtest's summary lines), so that the
# judgment is checked on any machine. Its CNN benchmark fails (no binary), so run.sh's exit status
# is non-zero in both cases: what tells them apart is the judgment's message.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="$(mktemp -d /tmp/syncopate-bundle-test-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# make_bundle DIR CUDA_BACKEND_SUMMARY GPU_E2E_SUMMARY
make_bundle() {
  local dir=$1
  mkdir -p "$dir"/{bin,lib,tests,data,debian-lib}
  tar -cJf "$dir/debian-lib.tar.xz" -C "$dir" debian-lib
  cp "$ROOT/scripts/gpu-bundle-run.sh" "$dir/run.sh"
  printf '#!/bin/sh\necho "[  PASSED  ] 12 tests."\n' >"$dir/tests/compute_test"
  printf '#!/bin/sh\necho "%s"\n' "$2" >"$dir/tests/cuda_backend_test"
  printf '#!/bin/sh\necho "%s"\n' "$3" >"$dir/tests/gpu_e2e_test"
  chmod +x "$dir"/tests/*
}

make_bundle "$WORK/skipped" "[  PASSED  ] 0 tests." "[  PASSED  ] 0 tests."
status=0
(cd "$ROOT" && "$WORK/skipped/run.sh" "$WORK/skipped-log") >"$WORK/skipped.out" 2>&1 || status=$?
grep -q "^== gpu_e2e_test" "$WORK/skipped.out" ||
  fail "run.sh stopped before its tests: $(tail -5 "$WORK/skipped.out")"
[ "$status" -ne 0 ] || fail "run.sh exited 0 although every gpu test skipped"
grep -q "no gpu test passed a single test" "$WORK/skipped.out" ||
  fail "run.sh did not say that no gpu test ran: $(tail -5 "$WORK/skipped.out")"

make_bundle "$WORK/ran" "[  PASSED  ] 9 tests." "[  PASSED  ] 0 tests."
(cd "$ROOT" && "$WORK/ran/run.sh" "$WORK/ran-log") >"$WORK/ran.out" 2>&1 || true
grep -q "^== gpu_e2e_test" "$WORK/ran.out" ||
  fail "run.sh stopped before its tests: $(tail -5 "$WORK/ran.out")"
if grep -q "no gpu test passed" "$WORK/ran.out"; then
  fail "run.sh says no gpu test passed although cuda_backend_test passed 9"
fi
echo "PASS"
