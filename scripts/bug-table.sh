#!/usr/bin/env bash
# Prints the bug-switch table of docs/sweeps.md ("Every bug switch, caught and shrunk"): for
# every switch `durasim bugs` lists, how many of chaos.toml's seeds 0..999 it fails and the first
# one (seeds-to-detect), and the largest
# scenario the shrinker leaves for any of its failures (every invariant it breaks, every
# signature) in a sweep of seeds 0..39, with the seed it came from and the command that
# writes that shrunk file again. Results depend only on the scenario, the seeds and the
# switch, not on the build or the machine.
#
#   bash scripts/bug-table.sh            # builds target/release/durasim first
#   DURASIM=target/debug/durasim bash scripts/bug-table.sh
#
# Writes its sweeps under a temporary directory and removes it; prints the table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DURASIM:-}" ]; then
  cargo build --release -q
  DURASIM=target/release/durasim
fi
DETECT_SEEDS=${DETECT_SEEDS:-0..1000}
SHRINK_SEEDS=${SHRINK_SEEDS:-0..40}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| bug switch | caught by | also violated | first failing seed | failing seeds of ${DETECT_SEEDS} | shrunk to (jobs, largest) | of seed | writes it again |"
echo "|---|---|---|---:|---:|---:|---:|---|"
"$DURASIM" bugs | tail -n +2 | while read -r bug caught _; do
  # Exit 1 is a failing sweep, the point here; anything else is an error.
  "$DURASIM" sweep scenarios/chaos.toml --seeds "$DETECT_SEEDS" --bug "$bug" --no-shrink --quiet \
    --out "$tmp/detect-$bug" >/dev/null || [ $? -eq 1 ]
  "$DURASIM" sweep scenarios/chaos.toml --seeds "$SHRINK_SEEDS" --bug "$bug" --quiet \
    --out "$tmp/shrink-$bug" >/dev/null || [ $? -eq 1 ]
  also=$(jq -r --arg c "$caught" '[.failures[].invariant | select(. != $c)] | if length == 0 then "—" else join(", ") end' "$tmp/detect-$bug/sweep.json")
  detect=$(jq -r '"\([.failures[].firstSeeds[0]] | min) | \(.seedsFailed)"' "$tmp/detect-$bug/sweep.json")
  # The largest shrunk scenario over every failure group and signature.
  largest=$(jq -r '[.failures[] as $g | $g.signatures[] | select(.shrunk != null)
      | {jobs: .shrunk.to.jobs, seed: .firstSeed, path: "shrunk/\($g.invariant).toml"}]
      | max_by(.jobs) | "\(.jobs) | \(.seed) | \(.path)"' "$tmp/shrink-$bug/sweep.json")
  jobs=${largest%% | *}
  rest=${largest#* | }
  seed=${rest%% | *}
  path=${rest#* | }
  command="\`durasim sweep scenarios/chaos.toml --seeds $seed..$((seed + 1)) --bug $bug\` → \`reports/chaos-sweep/$path\`"
  echo "| \`$bug\` | $caught | $also | $detect | $jobs | $seed | $command |"
done
