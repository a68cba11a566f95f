#!/usr/bin/env bash
# The profile × fault table of docs/queues.md (§4, "The measured table"): for every queue-semantics profile (`[queue] profile`) and
# every fault of docs/queues.md §4, one `durasim sweep` of a scenario written for that cell, and
# the invariants it violated with the number of seeds that violated each (✓: every invariant held
# in every seed). Results depend only on the scenarios, the seeds and the profiles' defaults, not
# on the build, the machine or the thread count.
#
#   bash scripts/profile-table.sh                  # builds target/release/durasim first
#   DURASIM=target/debug/durasim bash scripts/profile-table.sh
#   bash scripts/profile-table.sh --check docs/queues.md   # exit 1 if a cell differs from the page's
#   PROFILES="durasim pgmq" FAULTS="zombie relay-crash" bash scripts/profile-table.sh --check docs/queues.md
#
# The check compares only the cells it computes (PROFILES × FAULTS, default all), with the seeds
# the page's table states (the table between its profile-table markers); tests/it/profile_table.rs
# runs it on a cheap subset.
# Writes the cells' scenarios and sweeps under a temporary directory and removes it; prints the
# table (or, with --check, the cells that differ) on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
check=""
if [ "${1:-}" = "--check" ]; then
  check=${2:?--check needs the file whose table to compare with (docs/queues.md)}
elif [ $# -gt 0 ]; then
  echo "usage: scripts/profile-table.sh [--check docs/queues.md]" >&2
  exit 2
fi
if [ -z "${DURASIM:-}" ]; then
  cargo build --release -q
  DURASIM=target/release/durasim
fi
ALL_PROFILES="durasim sqs bullmq river oban graphile-worker pgmq pg-boss procrastinate sidekiq temporal"
ALL_FAULTS="zombie crash-before-ack relay-crash duplicate-submit dlq-flood outage"
PROFILES=${PROFILES:-$ALL_PROFILES}
FAULTS=${FAULTS:-$ALL_FAULTS}
SEEDS=${SEEDS:-0..200}
THREADS=${THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The time from an attempt's start until each profile's store takes an abandoned job back, with
# each profile's defaults (src/profile/systems/): the zombie stalls past it by up to half a
# lease, and the next holder's extraction outlasts that overhang, so the zombie's late writes
# land while the new holder works (docs/queues.md §4). `temporal` has no default Start-To-Close:
# the table sets 60 s. `procrastinate` and `sidekiq` never take a job back: 10 minutes.
#   profile: stall_min stall_max inference (ms)
zombie_timing() {
  case $1 in
    durasim) echo "1100 1500 750" ;;                           # lease 1 s, renewed, exact timer
    sqs | pgmq) echo "31000 45000 22500" ;;                    # visibility 30 s, exact
    bullmq) echo "91000 105000 90000" ;;                       # lock 30 s + two 30 s passes; renewed
    river) echo "3631000 5400000 2700000" ;;                   # 1 h + rescuer every 30 s
    oban) echo "3661000 5400000 2700000" ;;                    # 60 min + Lifeline every 60 s
    graphile-worker) echo "15001000 21600000 10800000" ;;      # 4 h + sweep every 10 min
    pg-boss) echo "961000 1350000 675000" ;;                   # 15 min + supervisor every 60 s
    procrastinate | sidekiq) echo "600000 900000 450000" ;;    # never rescued
    temporal) echo "61000 90000 45000" ;;                      # Start-To-Close 60 s (the table's)
    *) echo "unknown profile $1" >&2; exit 2 ;;
  esac
}

# Writes the cell's scenario on stdout.
scenario() { # scenario PROFILE FAULT
  local p=$1 f=$2 lease=""
  [ "$p" = temporal ] && lease="lease_ms = 60000"
  cat <<EOF
name = "$p-$f"
description = "profile × fault table cell, written by scripts/profile-table.sh"
[queue]
profile = "$p"
$lease
[relay]
interval_ms = 1000
[metrics]
depth_sample_ms = 60000
EOF
  case $f in
    zombie)
      # Three jobs, each on a worker of its own with spares for the second holders; half the
      # attempts stall with no heartbeat past the profile's rescue.
      read -r lo hi inference < <(zombie_timing "$p")
      cat <<EOF
[workers]
count = 6
[stages]
inference_ms = { dist = "constant", value = $inference }
[arrivals]
jobs = 3
[faults]
stall = 0.5
stall_ms = { dist = "uniform", min = $lo, max = $hi }
EOF
      ;;
    crash-before-ack)
      # The chapter's opening incident: the worker dies after committing, before acking, and
      # comes back 90 s later.
      cat <<EOF
[workers]
count = 4
restart_ms = 90000
[arrivals]
jobs = 20
interarrival_ms = { dist = "exponential", mean = 1000 }
[faults]
crash = 0.3
crash_points = ["after_commit_before_ack"]
EOF
      ;;
    relay-crash)
      cat <<EOF
[workers]
count = 4
[arrivals]
jobs = 20
interarrival_ms = { dist = "exponential", mean = 1000 }
[faults]
relay_crash = 0.3
EOF
      ;;
    duplicate-submit)
      # A third of the arrivals resubmit a recent document of their tenant (same key, same
      # payload): some while the first job runs, some after it was acked.
      cat <<EOF
[workers]
count = 4
[stages]
inference_ms = { dist = "uniform", min = 500, max = 3000 }
[arrivals]
jobs = 30
interarrival_ms = { dist = "exponential", mean = 500 }
resubmit = 0.3
EOF
      ;;
    dlq-flood)
      # 10,050 documents that fail validation (a permanent error) on every attempt, submitted at
      # once: more than Sidekiq's dead set keeps. An hour later an operator reprocesses the
      # oldest DLQ entry, 100 times a second apart (what a retention by age left of it).
      cat <<EOF
[workers]
count = 30
[arrivals]
jobs = 10050
interarrival_ms = { dist = "constant", value = 0 }
invalid_documents = { every = 1, first = 1 }
[[operator]]
at_ms = 3600000
action = "reprocess_dlq"
target = "oldest_dead_lettered"
operator = "ana"
repeat = 99
every_ms = 1000
EOF
      ;;
    outage)
      # retry-storm-no-jitter.toml's workload under the profile's own retry policy.
      cat <<EOF
[workers]
count = 30
[arrivals]
jobs = 1000
interarrival_ms = { dist = "constant", value = 0 }
[faults]
outage = { from_ms = 1000, to_ms = 9000 }
EOF
      ;;
    *) echo "unknown fault $f" >&2; exit 2 ;;
  esac
}

# One cell: the violated invariants with their failing seeds, or ✓.
cell() { # cell PROFILE FAULT
  local p=$1 f=$2 dir="$tmp/$1-$2" rc=0 out
  scenario "$p" "$f" >"$tmp/$p-$f.toml"
  out=$("$DURASIM" sweep "$tmp/$p-$f.toml" --seeds "$SEEDS" --threads "$THREADS" --no-shrink \
    --quiet --out "$dir") || rc=$?
  case $rc in
    0) echo "✓" ;;
    1)
      local v
      v=$(echo "$out" | awk '/^  VIOLATED / { sub(/:$/, "", $4);
          printf "%s`%s` (%s)", sep, $2, $4; sep = ", " }')
      if [ -z "$v" ] && echo "$out" | grep -q "COVERAGE GATE FAILED"; then
        # Nothing violated; the fault never got as far as a rescue (a queue that never takes a
        # job back), which the sweep's coverage gate reports.
        v="✓, never reached: $(echo "$out" | awk '/property `/ { printf "%s%s", sep, $3; sep = ", " }')"
      fi
      if [ -z "$v" ]; then
        echo "the sweep of $p × $f failed without a violation:" >&2
        echo "$out" >&2
        exit 1
      fi
      echo "$v"
      ;;
    *)
      echo "the sweep of $p × $f exited $rc:" >&2
      echo "$out" >&2
      exit 1
      ;;
  esac
}

# The file's cell for PROFILE × FAULT (its table's rows: | `profile` | cell | ... |).
readme_cell() { # readme_cell FILE PROFILE FAULT
  local col=0 i=2 f
  for f in $ALL_FAULTS; do
    i=$((i + 1))
    [ "$f" = "$3" ] && col=$i
  done
  awk -F ' \\| ' -v row="| \`$2\`" -v col="$col" '
    /<!-- profile-table:begin/ { on = 1 } /<!-- profile-table:end/ { on = 0 }
    on && index($0, row " |") == 1 { c = $(col - 1); sub(/ \|$/, "", c); print c }' "$1"
}

if [ -n "$check" ]; then
  stated=$(grep -o 'seeds [0-9]*\.\.[0-9]* per cell' "$check" | head -1 | awk '{print $2}')
  if [ "$stated" != "$SEEDS" ]; then
    echo "$check's table states seeds ${stated:-(none)}, this check runs $SEEDS" >&2
    exit 1
  fi
  differ=0
  for p in $PROFILES; do
    for f in $FAULTS; do
      got=$(cell "$p" "$f")
      want=$(readme_cell "$check" "$p" "$f")
      if [ "$got" != "$want" ]; then
        echo "$p × $f: the sweep gives \"$got\", $check says \"$want\""
        differ=1
      fi
    done
  done
  [ $differ = 0 ] && echo "the table in $check agrees with the sweeps of: $PROFILES × $FAULTS"
  exit $differ
fi

echo "<!-- profile-table:begin (scripts/profile-table.sh; seeds $SEEDS per cell) -->"
printf "| profile |"
for f in $FAULTS; do printf " %s |" "$f"; done
echo
printf "|---|"
for f in $FAULTS; do printf -- "---|"; done
echo
for p in $PROFILES; do
  printf "| \`%s\` |" "$p"
  for f in $FAULTS; do
    c=$(cell "$p" "$f")
    printf " %s |" "$c"
  done
  echo
done
echo "<!-- profile-table:end -->"
