#!/usr/bin/env bash
#SBATCH --job-name=durasim-sweep
#SBATCH --cpus-per-task=1
#SBATCH --time=01:00:00
#
# A durasim sweep on a Slurm cluster: a job array runs one shard per array task, and a job that
# depends on the whole array (afterok) merges the shards and gives the verdict. See docs/sweeps.md.
#
# Submit from a directory every node sees (the shards and the merge run there, and the merge
# re-reads the scenario at the path the shards recorded), with `durasim` on PATH or
# DURASIM=/path/to/durasim in the environment (sbatch passes the environment on):
#
#   deploy/slurm-sweep.sh submit [--wait] SCENARIO SEEDS SHARDS OUT [SWEEP-OPTION...]
#   deploy/slurm-sweep.sh submit scenarios/chaos.toml 0..100000 16 results/chaos
#   deploy/slurm-sweep.sh submit --wait scenarios/chaos.toml 0..2000 4 results/nf --bug no_fencing
#
# `submit` runs sbatch twice on this file:
#   sbatch --array=0-(SHARDS-1) slurm-sweep.sh shard SCENARIO SEEDS OUT [SWEEP-OPTION...]
#       task I runs `durasim sweep SCENARIO --seeds SEEDS --shard I/SHARDS --out OUT/shard-I`
#       ($SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT) on --cpus-per-task threads; a shard that
#       found violations (exit 1) still succeeds, since the merge judges all seeds together;
#   sbatch --dependency=afterok:ARRAY --kill-on-invalid-dep=yes slurm-sweep.sh merge OUT
#       runs `durasim merge OUT/shard-* --out OUT/merged --junit OUT/junit.xml` once every
#       task exited 0; its exit status is the verdict (0 pass, 1 violations or an unmet coverage
#       gate, 2 missing or mismatched shards). If a task fails (exit 2: bad input), Slurm
#       cancels the merge.
# Logs go to OUT/logs/shard-I.out and OUT/logs/merge.out. With --wait, submit waits for the
# merge job, prints its log and exits with its status (3 if it was cancelled or killed).
# Edit the #SBATCH lines above (or set SBATCH_PARTITION, SBATCH_ACCOUNT, SBATCH_TIMELIMIT, ...)
# for your cluster; more --cpus-per-task gives each shard more threads.
set -euo pipefail

durasim=${DURASIM:-durasim}

usage() {
  sed -n '/^# A durasim sweep/,/^set -euo/p' "$0" | sed -n 's/^# \{0,1\}//p' >&2
  exit 2
}

need_durasim() {
  command -v "$durasim" >/dev/null 2>&1 || {
    echo "slurm-sweep.sh: '$durasim' not found on $(hostname): put durasim on PATH or set DURASIM" >&2
    exit 2
  }
}

# The state and exit code of a job as "STATE CODE", from `scontrol show job -o`.
job_state() {
  scontrol show job -o "$1" 2>/dev/null |
    sed -n 's/.* JobState=\([A-Z_]*\) .* ExitCode=\([0-9]*\):.*/\1 \2/p' | head -n 1
}

role=${1:-}
[ $# -gt 0 ] && shift
case $role in
shard)
  [ $# -ge 3 ] || usage
  scenario=$1 seeds=$2 out=$3
  shift 3
  : "${SLURM_ARRAY_TASK_ID:?the shard role runs as a Slurm array task (use submit)}"
  : "${SLURM_ARRAY_TASK_COUNT:?the shard role runs as a Slurm array task (use submit)}"
  need_durasim
  set +e
  "$durasim" sweep "$scenario" --seeds "$seeds" \
    --shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" \
    --threads "${SLURM_CPUS_PER_TASK:-1}" --out "$out/shard-$SLURM_ARRAY_TASK_ID" --quiet "$@"
  code=$?
  set -e
  # Exit 1 (violations in this shard) is a result for the merge to judge: succeed, so that
  # the afterok dependency releases the merge. Exit 2 (bad input) or a crash fails the task.
  [ "$code" -le 1 ] && exit 0
  exit "$code"
  ;;
merge)
  [ $# -eq 1 ] || usage
  out=$1
  need_durasim
  shopt -s nullglob
  shards=("$out"/shard-*)
  [ ${#shards[@]} -gt 0 ] || { echo "slurm-sweep.sh: no $out/shard-* directories" >&2; exit 2; }
  exec "$durasim" merge "${shards[@]}" --out "$out/merged" --junit "$out/junit.xml"
  ;;
submit)
  wait=0
  if [ "${1:-}" = --wait ]; then
    wait=1
    shift
  fi
  [ $# -ge 4 ] || usage
  scenario=$1 seeds=$2 shards=$3 out=$4
  shift 4
  case $shards in '' | *[!0-9]* | 0*) echo "slurm-sweep.sh: SHARDS must be a positive integer, got '$shards'" >&2; exit 2 ;; esac
  [ -f "$scenario" ] || { echo "slurm-sweep.sh: no scenario file '$scenario' (paths are relative to $(pwd))" >&2; exit 2; }
  mkdir -p "$out/logs"
  array=$(sbatch --parsable --array="0-$((shards - 1))" --output="$out/logs/shard-%a.out" \
    "$0" shard "$scenario" "$seeds" "$out" "$@")
  array=${array%%;*}
  merge=$(sbatch --parsable --job-name=durasim-merge --dependency="afterok:$array" \
    --kill-on-invalid-dep=yes --output="$out/logs/merge.out" "$0" merge "$out")
  merge=${merge%%;*}
  echo "shards: job array $array (tasks 0-$((shards - 1))), logs $out/logs/shard-*.out"
  echo "merge:  job $merge (afterok:$array), log $out/logs/merge.out, result $out/merged/sweep.json"
  [ $wait = 1 ] || exit 0
  # Poll the merge job: every 0.25 s for the first 10 s, then every 5 s.
  polls=0
  while :; do
    read -r state code <<<"$(job_state "$merge")" || true
    case ${state:-} in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | BOOT_FAIL | DEADLINE) break ;;
    '') echo "slurm-sweep.sh: slurmctld no longer knows job $merge; see $out/logs/merge.out" >&2; exit 3 ;;
    esac
    polls=$((polls + 1))
    if [ $polls -lt 40 ]; then sleep 0.25; else sleep 5; fi
  done
  [ -f "$out/logs/merge.out" ] && cat "$out/logs/merge.out"
  case $state in
  COMPLETED | FAILED) exit "$code" ;;
  esac
  echo "slurm-sweep.sh: merge job $merge ended $state" >&2
  scontrol show job -o "$array" 2>/dev/null |
    sed -n 's/.* ArrayTaskId=\([0-9]*\) .* JobState=\([A-Z_]*\) .* ExitCode=\([0-9:]*\) .*/  shard \1: \2, exit \3/p' | sort -k2,2n >&2 || true
  exit 3
  ;;
*) usage ;;
esac
