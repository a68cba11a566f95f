#!/usr/bin/env bash
# Regenerates the committed example reports (examples/reports/synthetic-12/, examples/reports/chaos/,
# examples/reports/zombie-no-fencing/; docs/reports.md lists them) with the current durasim. Each
# directory is replaced whole (it carries durasim's manifest; a directory without one is never
# replaced). The files differ from the committed ones only in summary.json's wall-clock fields
# (wallS, eventsPerWallS, simToWallRatio) unless durasim's output changed: review
# `git status examples/reports/` and commit them with the change that altered them.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
durasim=target/debug/durasim
[ -n "${CARGO_TARGET_DIR:-}" ] && durasim="$CARGO_TARGET_DIR/debug/durasim"

# A run whose scenario expects no violation exits 0; the zombie with no_fencing exits 1 (the
# violation its report shows), anything else is a failure.
run() { # run EXPECTED_EXIT ARGS...
  local expected=$1 status=0
  shift
  "$durasim" run "$@" --quiet || status=$?
  [ "$status" = "$expected" ] || { echo "durasim run $*: exit $status, expected $expected" >&2; exit 1; }
}
run 0 scenarios/synthetic-12.toml --chart --trace-format chrome --out examples/reports/synthetic-12
run 0 scenarios/chaos.toml --seed 3 --chart --out examples/reports/chaos
run 1 scenarios/zombie-worker.toml --bug no_fencing --chart --out examples/reports/zombie-no-fencing
git --no-pager status --short -- examples/reports
