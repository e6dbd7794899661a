# What bench/advise_check.sh and bench/syncswitch_check.sh share (sourced, not run): the cluster
# profiles they measure, the choice of profiles from the first argument, and reading a compare
# report.

# trainers | slowdowns | emulated step | learning rate | target accuracy
profiles=(
  "4|1,2,4,6|100ms|0.4|0.80"
  "8|1,1,1,1,1,1,1,8|50ms|0.1|0.80"
  "16|1,1,1,1,1.5,1.5,1.5,1.5,2,2,2,2,3,3,3,3|50ms|0.1|0.80"
  "4|1,1,1,1|50ms|0.2|0.80"
  "8|1,1.15,1.3,1.45,1.6,1.75,1.9,2|50ms|0.2|0.80"
  "4|1,1,1,3|100ms|0.2|0.80"
  "8|1,1,1,1,1,1,4,4|50ms|0.2|0.80"
  "6|1,1,2,2,4,4|50ms|0.2|0.80"
)

# Sets `chosen` to the profile numbers in $1 (e.g. 1,2,5; default: all); exits 2 on a bad one.
choose_profiles() {
  IFS=, read -r -a chosen <<<"${1:-$(seq -s, 1 ${#profiles[@]})}"
  for n in "${chosen[@]}"; do
    [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= ${#profiles[@]})) ||
      { echo "no profile '$n': give numbers from 1 to ${#profiles[@]}" >&2; exit 2; }
  done
}

# The median time to target of `mode` in a compare report, or "-" when it did not reach it (or
# has no row, or the report is missing).
time_of() {
  [[ -f $1/compare.csv ]] || { echo -; return; }
  awk -F, -v m="$2" 'NR > 1 && $1 == m && $5 == "true" { t = $6 } END { print (t == "" ? "-" : t) }' \
    "$1/compare.csv"
}
