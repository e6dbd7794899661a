#!/usr/bin/env bash
# Model-checks tests/model/round_protocol.pml with spin: every variant must be verified completely
# (exit 1 on any error, an incomplete search, or a missing spin/gcc), and the variants known to
# have counterexamples (the code before a fix; the loss window) must still show exactly those.
#
# Usage: check_model.sh [model.pml]   (default: round_protocol.pml next to this script)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model="${1:-${here}/round_protocol.pml}"
case "${model}" in /*) ;; *) model="$(pwd)/${model}" ;; esac

die() { echo "check_model: $*" >&2; exit 1; }

command -v spin >/dev/null 2>&1 ||
  die "spin is not installed (Debian/Ubuntu: apt-get install spin; scripts/install-deps.sh)"
command -v gcc >/dev/null 2>&1 || die "gcc is not installed (needed to compile spin's pan.c)"
[[ -f "${model}" ]] || die "no model at ${model}"

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
cp "${model}" "${work}/model.pml"

failures=0

# verify NAME EXPECT PAN_FLAGS SPIN_FLAGS...
#   EXPECT: "pass"  - no error, search complete;
#           anything else - a regex the counterexample's report must match (a known result).
verify() {
  local name="$1" expect="$2" pan_flags="$3"
  shift 3
  local dir="${work}/${name}"
  mkdir -p "${dir}"
  cp "${work}/model.pml" "${dir}/"
  local start=${SECONDS}
  if ! (cd "${dir}" && spin -a "$@" model.pml >spin.log 2>&1); then
    echo "FAIL ${name}: spin -a $* failed:"; cat "${dir}/spin.log"; failures=$((failures + 1))
    return
  fi
  if ! (cd "${dir}" && gcc -w -O2 -DSAFETY -DCOLLAPSE -o pan pan.c >gcc.log 2>&1); then
    echo "FAIL ${name}: gcc could not compile pan.c:"; cat "${dir}/gcc.log"
    failures=$((failures + 1))
    return
  fi
  # -m: search depth limit far beyond the model's (~500); -n: no unreached-code listing.
  local rc=0
  # shellcheck disable=SC2086  # pan_flags is a list of flags
  (cd "${dir}" && ./pan -m200000 -n ${pan_flags} >pan.log 2>&1) || rc=$?
  local log="${dir}/pan.log"
  local states
  states="$(grep -Eo "[0-9]+ states, stored" "${log}" | sed "s/,//" | head -1 || true)"
  local summary="${states:-? states stored}, $((SECONDS - start))s, spin -a ${*:-(no -D)}${pan_flags:+, pan ${pan_flags}}"
  if [[ "${expect}" == pass ]]; then
    if [[ ${rc} -ne 0 ]] || ! grep -q 'errors: 0' "${log}" ||
      grep -Eq 'max search depth too small|[Ss]earch not completed|out of memory' "${log}"; then
      echo "FAIL ${name} (${summary}):"
      cat "${log}"
      if ls "${dir}"/*.trail >/dev/null 2>&1; then
        echo "--- counterexample (spin -t -p):"
        (cd "${dir}" && spin -t -p "$@" model.pml 2>&1 | tail -80)
      fi
      failures=$((failures + 1))
    else
      echo "ok   ${name}: verified (${summary})"
    fi
  else
    if grep -Eq "${expect}" "${log}"; then
      echo "ok   ${name}: the expected counterexample is found (${summary})"
    else
      echo "FAIL ${name}: expected a counterexample matching '${expect}' (${summary});"
      echo "     if the code was fixed, update the model and this script:"
      cat "${log}"
      failures=$((failures + 1))
    fi
  fi
}

# BSP (round pushes, s = 0): deadlock freedom, staleness, exactly once (retried pushes and closes
# included), with no crash.
verify bsp pass ""
# BSP with one shard crash/restart: deadlock freedom, staleness, at most once, and a loss only in
# the loss window.
verify bsp_crash pass "" -DCRASH
# Sanity: the code before its fix (a close the restored shard is past was FAILED_PRECONDITION)
# stalls: a close applied and checkpointed, whose reply the crash lost, is retried forever.
verify bsp_crash_stall_before_fix 'invalid end state' "" -DCRASH -DNO_CLOSE_PAST
# BSP with pipelined grants (a round's grants before its close, pulls of it parked until it
# closes): deadlock freedom, staleness (the pull of round g served with g closed on the shard),
# exactly once, and no FAILED_PRECONDITION (a pull past the window included).
verify bsp_pipeline pass "" -DPIPELINE
# ... and with one shard crash/restart: at most once, a loss only in the loss window.
verify bsp_pipeline_crash pass "" -DPIPELINE -DCRASH
# Sanity: pipelined grants really go out before their round's close is acknowledged.
verify bsp_pipeline_grants_before_close 'assertion violated \(last_round>=g\)' "" -DPIPELINE \
  -DCLOSED_BEFORE_GRANT
# SSP (immediate pushes, bound s = 1): deadlock freedom, staleness bound, exactly once.
verify ssp pass "" -DSSP
# SSP with one shard crash/restart: deadlock freedom, staleness, at most once, loss only in window.
verify ssp_crash pass "" -DSSP -DCRASH
# Sanity: a crash really loses pushes (the loss window is reachable): exactly once must fail.
verify bsp_crash_loses_pushes 'assertion violated \(model' "-E" -DCRASH -DSTRICT_EXACTLY_ONCE
verify ssp_crash_loses_pushes 'assertion violated \(model' "" -DSSP -DCRASH -DSTRICT_EXACTLY_ONCE

if [[ ${failures} -gt 0 ]]; then
  echo "check_model: ${failures} variant(s) failed"
  exit 1
fi
echo "check_model: all variants as expected"
