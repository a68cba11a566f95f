#!/usr/bin/env bash
# Compares durasim with two peer implementations of pipeline-bench v2 (docs/domain.md), which are
# not part of this repository (PEERS_DIR, default ../shared/peers beside the checkout): the
# std-only `rust-floor` event loop (with and without --lease-timers) and the SimPy model.
# Whole-process wall time, CPU time and peak RSS (/usr/bin/time -v) of each, interleaved (every
# implementation once per N, then the next repetition), REPEATS times, seed 42, all at the same
# `nice` level; then a `durasim sweep` thread-scaling line. Prints a markdown report and writes
# it to benches/runs/<UTC date>/compare-peers-<HHMM>.md (the run's start; see REPORT). Commit that
# file as it is written; docs/performance.md quotes the newest figures and links to it.
#
# usage: benches/compare-peers.sh                  (from anywhere; ~10 minutes with 10M jobs)
# environment (all optional):
#   NS="100000 1000000 10000000"   job counts   REPEATS=3        runs per implementation and N
#   ALL_OUTPUTS_MAX_N=1000000   durasim with every output (rows + --trace) only up to this N
#                         (10M jobs write ~14 GB of CSV and trace)
#   NICE=0                nice level of every measured process (the same for all of them)
#   REPORT=FILE           write the report there instead (REPORT= , empty: print it only)
#   SIMPY_MAX_N=100000    SimPy only up to this N (it needs ~30 s and ~0.8 GiB at 1M)
#   SEED=42               PEERS_DIR=<repo>/../shared/peers
#   PEERS_TARGET=$HOME/.cache/durasim-peers   rust-floor's cargo target dir (outside the repo)
#   SIMPY_VENV=$PEERS_TARGET/simpy-venv       created with simpy==4.1.2 if missing
#   SWEEP_SEEDS=0..2000   the sweep's seed range; SWEEP=0 skips the sweep line
#   SKIP_BUILD=1          use the existing target/release/durasim and rust-floor binaries
#   DURASIM=PATH          measure this durasim binary (a copy, so a build meanwhile cannot change
#                         it); DURASIM_REV=TEXT names it in the report (default: the checkout's
#                         commit, and whether src/ has uncommitted changes)
#   BEFORE=PATH           also measure this second durasim binary (`--no-rows`), interleaved with
#                         the others in the same repetitions, as "durasim before"; BEFORE_REV=TEXT
#                         names it (a before/after comparison made side by side in one run)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NS=${NS:-"100000 1000000 10000000"}
ALL_OUTPUTS_MAX_N=${ALL_OUTPUTS_MAX_N:-1000000}
NICE=${NICE:-0}
# Unset: the default dated path, chosen when the run starts (below); set and empty: print only.
REPORT_DEFAULT=${REPORT-__dated__}
REPORT=${REPORT:-}
REPEATS=${REPEATS:-3}
SEED=${SEED:-42}
SIMPY_MAX_N=${SIMPY_MAX_N:-100000}
PEERS_DIR=${PEERS_DIR:-$REPO/../shared/peers}
PEERS_TARGET=${PEERS_TARGET:-$HOME/.cache/durasim-peers}
SIMPY_VENV=${SIMPY_VENV:-$PEERS_TARGET/simpy-venv}
SWEEP=${SWEEP:-1}
SWEEP_SEEDS=${SWEEP_SEEDS:-0..2000}
SKIP_BUILD=${SKIP_BUILD:-0}
TIME=/usr/bin/time

die() { echo "compare-peers: $*" >&2; exit 2; }
note() { echo "compare-peers: $*" >&2; }

# ---- prerequisites ------------------------------------------------------------------------
[[ -x $TIME ]] && $TIME -v true >/dev/null 2>&1 \
  || die "$TIME (GNU time, for -v: peak RSS) is missing; install it: apt-get install -y time"
command -v python3 >/dev/null || die "python3 is needed (report tables, SimPy)"
command -v cargo >/dev/null || die "cargo is needed"
[[ -f $PEERS_DIR/rust-floor/Cargo.toml ]] || die "the peer implementations are not at $PEERS_DIR.
  This script compares durasim with two peer implementations of the pipeline-bench v2 workload
  (docs/domain.md, last section) that are NOT part of this repository: a Rust event loop
  ('rust-floor', a Cargo project) and a SimPy model ('simpy_pipeline.py', with its
  requirements.txt). It needs a directory holding rust-floor/Cargo.toml, simpy_pipeline.py and
  requirements.txt; by default ../shared/peers next to this checkout (the developers' workspace
  layout). Point PEERS_DIR at your copy: PEERS_DIR=/path/to/peers bash benches/compare-peers.sh
  Without the peers, durasim's own benchmarks still run: cargo bench --bench whole_run"
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || die "REPEATS must be a positive integer"
[[ $NICE =~ ^[0-9]+$ ]] || die "NICE must be a nice level from 0 to 19"
[[ $ALL_OUTPUTS_MAX_N =~ ^[0-9]+$ ]] || die "ALL_OUTPUTS_MAX_N must be a job count"
for n in $NS; do [[ $n =~ ^[1-9][0-9]*$ ]] || die "NS: $n is not a job count"; done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/compare-peers.XXXXXX")
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

DURASIM=${DURASIM:-$REPO/target/release/durasim}
BEFORE=${BEFORE:-}
FLOOR=$PEERS_TARGET/release/rust-floor
[[ -z $BEFORE || -x $BEFORE ]] || die "BEFORE=$BEFORE is not an executable durasim binary"

# ---- builds -------------------------------------------------------------------------------
if [[ $SKIP_BUILD != 1 ]]; then
  note "building durasim (release)"
  (cd "$REPO" && cargo build --release --quiet --bin durasim) || die "durasim build failed"
  note "building rust-floor into $PEERS_TARGET"
  cargo build --release --quiet --manifest-path "$PEERS_DIR/rust-floor/Cargo.toml" \
    --target-dir "$PEERS_TARGET" || die "rust-floor build failed"
fi
[[ -x $DURASIM ]] || die "no $DURASIM (build it or unset SKIP_BUILD)"
[[ -x $FLOOR ]] || die "no $FLOOR (build it or unset SKIP_BUILD)"

SIMPY=""
if [[ -x $SIMPY_VENV/bin/python ]] && "$SIMPY_VENV/bin/python" -c 'import simpy' 2>/dev/null; then
  SIMPY=$SIMPY_VENV/bin/python
else
  note "setting up SimPy 4.1.2 in $SIMPY_VENV"
  if python3 -m venv "$SIMPY_VENV" >/dev/null 2>&1 \
    && "$SIMPY_VENV/bin/pip" install --quiet simpy==4.1.2 >/dev/null 2>&1 \
    && "$SIMPY_VENV/bin/python" -c 'import simpy' 2>/dev/null; then
    SIMPY=$SIMPY_VENV/bin/python
  else
    note "SimPy unavailable (no venv/pip, or PyPI unreachable): skipping the SimPy rows"
  fi
fi

# ---- one measured process -----------------------------------------------------------------
# measure IMPL N REP -- CMD...: runs CMD under /usr/bin/time -v, appends a row to $WORK/rows.tsv:
# impl, n, rep, process_s (bash's microsecond clock around the process), rss_kib, sim_s, cpu_s
# (user + system CPU seconds: less at the mercy of other work on the machine than wall time).
# The process's own JSON (peers) or summary.json (durasim) gives sim_s, the simulation's time.
ROWS=$WORK/rows.tsv
: >"$ROWS"
measure() {
  local impl=$1 n=$2 rep=$3
  shift 4
  local out=$WORK/stdout timing=$WORK/time.txt t0 t1 rc=0
  t0=$EPOCHREALTIME
  nice -n "$NICE" $TIME -v -o "$timing" "$@" >"$out" 2>"$WORK/stderr" || rc=$?
  t1=$EPOCHREALTIME
  if [[ $rc -ne 0 ]]; then
    echo "compare-peers: $impl N=$n failed (exit $rc): $*" >&2
    tail -5 "$WORK/stderr" >&2
    tail -3 "$out" >&2
    exit 1
  fi
  local rss
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$timing")
  local cpu
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.3f", s}' "$timing")
  local sim=nan
  case $impl in
    durasim*) sim=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wallS"])' \
      "$WORK/out/summary.json") ;;
    *) sim=$(tail -1 "$out" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["wall_s"])') ;;
  esac
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$impl" "$n" "$rep" \
    "$(python3 -c "print(f'{$t1 - $t0:.6f}')")" "$rss" "$sim" "$cpu" >>"$ROWS"
}

durasim_hash() { # the trace hash and verdict of the last durasim run
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["traceHash"], "holds" if all(i["holds"] for i in s["invariants"]) else "VIOLATED")' \
    "$WORK/out/summary.json"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED_S=$(date -u '+%s')
STARTED=$(date -u -d "@$STARTED_S" '+%Y-%m-%d %H:%M:%S UTC')
if [[ $REPORT_DEFAULT == __dated__ ]]; then
  REPORT=$REPO/benches/runs/$(date -u -d "@$STARTED_S" '+%Y-%m-%d')/compare-peers-$(date -u -d "@$STARTED_S" '+%H%M').md
fi
if [[ -n $REPORT ]]; then
  mkdir -p "$(dirname "$REPORT")"
  note "the report goes to $REPORT"
fi
HASHES=$WORK/hashes.txt
: >"$HASHES"

for rep in $(seq 1 "$REPEATS"); do
  for n in $NS; do
    note "rep $rep/$REPEATS, N=$n"
    rm -rf "$WORK/out"
    measure durasim "$n" "$rep" -- "$DURASIM" run "$REPO/scenarios/bench-pipeline.toml" \
      --jobs "$n" --seed "$SEED" --no-rows --quiet --out "$WORK/out"
    [[ $rep -eq 1 ]] && echo "durasim N=$n seed $SEED: trace $(durasim_hash)" >>"$HASHES"
    rm -rf "$WORK/out"
    if [[ -n $BEFORE ]]; then
      measure "durasim before" "$n" "$rep" -- "$BEFORE" run "$REPO/scenarios/bench-pipeline.toml" \
        --jobs "$n" --seed "$SEED" --no-rows --quiet --out "$WORK/out"
      [[ $rep -eq 1 ]] && echo "durasim before N=$n seed $SEED: trace $(durasim_hash)" >>"$HASHES"
      rm -rf "$WORK/out"
    fi
    if [[ $n -le $ALL_OUTPUTS_MAX_N ]]; then
      measure "durasim (all outputs: rows + --trace)" "$n" "$rep" -- "$DURASIM" run \
        "$REPO/scenarios/bench-pipeline.toml" --jobs "$n" --seed "$SEED" --trace --quiet \
        --out "$WORK/out"
      if [[ $rep -eq 1 ]]; then
        echo "durasim N=$n seed $SEED, all outputs: trace $(durasim_hash); output $(du -sh "$WORK/out" | cut -f1)" >>"$HASHES"
      fi
    fi
    rm -rf "$WORK/out"
    measure "rust-floor --lease-timers" "$n" "$rep" -- "$FLOOR" --jobs "$n" --seed "$SEED" --lease-timers
    measure rust-floor "$n" "$rep" -- "$FLOOR" --jobs "$n" --seed "$SEED"
    if [[ -n $SIMPY && $n -le $SIMPY_MAX_N ]]; then
      measure simpy "$n" "$rep" -- "$SIMPY" "$PEERS_DIR/simpy_pipeline.py" --jobs "$n" --seed "$SEED"
    fi
  done
done

SWEEP_ROWS=$WORK/sweep.tsv
: >"$SWEEP_ROWS"
if [[ $SWEEP == 1 ]]; then
  # Back-to-back pairs (1 thread, then 2), REPEATS times: a lone pair is at the mercy of noise.
  for rep in $(seq 1 "$REPEATS"); do
  for threads in 1 2; do
    note "sweep scenarios/chaos.toml --seeds $SWEEP_SEEDS --threads $threads (rep $rep/$REPEATS)"
    rm -rf "$WORK/sweep"
    t0=$EPOCHREALTIME
    nice -n "$NICE" $TIME -v -o "$WORK/sweep.time" "$DURASIM" sweep "$REPO/scenarios/chaos.toml" \
      --seeds "$SWEEP_SEEDS" --threads "$threads" --quiet --out "$WORK/sweep" >"$WORK/sweep.out" 2>&1 \
      || { cat "$WORK/sweep.out" >&2; die "sweep --threads $threads failed"; }
    t1=$EPOCHREALTIME
    cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.3f", s}' "$WORK/sweep.time")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/sweep.time")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$threads" "$(python3 -c "print(f'{$t1 - $t0:.3f}')")" \
      "$(head -1 "$WORK/sweep.out")" "$cpu" "$rss" >>"$SWEEP_ROWS"
  done
  done
  rm -rf "$WORK/sweep"
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report -------------------------------------------------------------------------------
if [[ -z ${DURASIM_REV:-} ]]; then
  DURASIM_REV=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
  if (cd "$REPO" && ! git diff --quiet HEAD -- src 2>/dev/null); then
    DURASIM_REV="$DURASIM_REV + uncommitted changes in src/"
  fi
fi
export BEFORE_REV=${BEFORE:+${BEFORE_REV:-$BEFORE}}
export STARTED LOAD_BEFORE LOAD_AFTER REPEATS SEED DURASIM_REV NS SWEEP_SEEDS NICE
export NPROC=$(nproc) RUSTC=$(rustc --version 2>/dev/null || echo unknown)
export SIMPY_VERSION=$([[ -n $SIMPY ]] && "$SIMPY" -c 'import simpy,sys; print(f"SimPy {simpy.__version__}, Python {sys.version.split()[0]}")' || echo "SimPy: not run")
python3 - "$ROWS" "$SWEEP_ROWS" "$HASHES" "$REPORT" <<'PY'
import os, statistics, sys
from collections import defaultdict

rows_path, sweep_path, hashes_path, report_path = sys.argv[1:5]
env = os.environ
if report_path:
    class Tee:
        def __init__(self, *streams):
            self.streams = streams
        def write(self, s):
            for st in self.streams:
                st.write(s)
        def flush(self):
            for st in self.streams:
                st.flush()
    sys.stdout = Tee(sys.stdout, open(report_path, "w"))
runs = defaultdict(dict)  # (impl, n) -> rep -> (process_s, rss_kib, sim_s, cpu_s)
order = []
for line in open(rows_path):
    impl, n, rep, proc_s, rss, sim, cpu = line.rstrip("\n").split("\t")
    key = (impl, int(n))
    if key not in order:
        order.append(key)
    runs[key][int(rep)] = (float(proc_s), int(rss), float(sim), float(cpu))

med = statistics.median
def m(key, i):
    return med(v[i] for v in runs[key].values())

print(f"# durasim vs. the pipeline-bench v2 peers")
print()
print(f"- date: {env['STARTED']}; nproc: {env['NPROC']}; load average (1/5/15 min) before: "
      f"{env['LOAD_BEFORE']}, after: {env['LOAD_AFTER']}")
print(f"- durasim {env['DURASIM_REV']}; {env['RUSTC']}; {env['SIMPY_VERSION']}")
if env.get('BEFORE_REV'):
    print(f"- durasim before: {env['BEFORE_REV']} (`--no-rows`, interleaved with the others)")
print(f"- seed {env['SEED']}, {env['REPEATS']} interleaved repetitions at nice {env['NICE']}, medians. `process s` is "
      f"the whole process (start-up, parsing, output) by the shell's clock; `cpu s` its user + "
      f"system CPU time; `sim s` is the "
      f"simulation's own timer (durasim summary.json `wallS`, peers' `wall_s`); peak RSS from "
      f"`/usr/bin/time -v`.")
print("- commands: `durasim run scenarios/bench-pipeline.toml --jobs N --seed 42 --no-rows --quiet "
      "--out TMP`; all outputs: the same without `--no-rows`, with `--trace`; `rust-floor --jobs N "
      "--seed 42 [--lease-timers]`; `python simpy_pipeline.py --jobs N --seed 42`.")
print()
print("| implementation | N | median process s | jobs/s (process) | median cpu s | median sim s | peak RSS MiB |")
print("|---|---:|---:|---:|---:|---:|---:|")
for key in sorted(order, key=lambda k: (k[1], order.index(k))):
    impl, n = key
    p, rss, sim, cpu = m(key, 0), m(key, 1), m(key, 2), m(key, 3)
    sim_s = "—" if sim != sim else f"{sim:.4g}"
    print(f"| {impl} | {n:,} | {p:.3f} | {n / p:,.0f} | {cpu:.3f} | {sim_s} | {rss / 1024:.1f} |")

def paired(a, b, n, i=0, invert=False):
    """Per-repetition ratios a/b of the given column (0: process s, 1: RSS, 3: cpu s), median
    and range."""
    ka, kb = (a, n), (b, n)
    if ka not in runs or kb not in runs:
        return None
    reps = sorted(set(runs[ka]) & set(runs[kb]))
    rs = [(runs[kb][r][i] / runs[ka][r][i]) if invert else (runs[ka][r][i] / runs[kb][r][i])
          for r in reps]
    return med(rs), min(rs), max(rs)

def fmt(x, digits=3):
    if x is None:
        return "—"
    mid, lo, hi = x
    return f"**{mid:.{digits}g}×** ({lo:.{digits}g}–{hi:.{digits}g})"

ns = sorted({n for _, n in order})
print()
print("Ratios, per back-to-back repetition (median, min–max). Throughput ratios are jobs/s "
      "ratios (whole process), i.e. inverse process-time ratios: below 1× durasim is slower.")
print()
print("| N | durasim ÷ rust-floor --lease-timers (jobs/s) | the same by CPU time "
      "| durasim ÷ rust-floor (jobs/s) "
      "| durasim ÷ simpy (jobs/s) | durasim RSS ÷ rust-floor --lease-timers RSS | all outputs ÷ --no-rows (time) "
      "| durasim ÷ before (CPU time) | durasim RSS ÷ before RSS |")
print("|---:|---|---|---|---|---|---|---|---|")
for n in ns:
    print(f"| {n:,} | {fmt(paired('durasim', 'rust-floor --lease-timers', n, invert=True))} "
          f"| {fmt(paired('durasim', 'rust-floor --lease-timers', n, i=3, invert=True))} "
          f"| {fmt(paired('durasim', 'rust-floor', n, invert=True))} "
          f"| {fmt(paired('durasim', 'simpy', n, invert=True))} "
          f"| {fmt(paired('durasim', 'rust-floor --lease-timers', n, i=1))} "
          f"| {fmt(paired('durasim (all outputs: rows + --trace)', 'durasim', n))} "
          f"| {fmt(paired('durasim', 'durasim before', n, i=3))} "
          f"| {fmt(paired('durasim', 'durasim before', n, i=1))} |")

if len(ns) >= 2:
    print()
    print("Scaling (median process time at the larger N ÷ at the smaller; linear = the N ratio):")
    print()
    for a, b in zip(ns, ns[1:]):
        parts = []
        for impl in ("durasim", "durasim before", "rust-floor --lease-timers", "rust-floor"):
            if (impl, a) in runs and (impl, b) in runs:
                parts.append(f"{impl} {m((impl, b), 0) / m((impl, a), 0):.2f} "
                             f"(CPU time {m((impl, b), 3) / m((impl, a), 3):.2f})")
        print(f"- time({b:,}) / time({a:,}) (N × {b / a:g}): " + "; ".join(parts))

print()
print("Trace hashes (first repetition):")
print()
for line in open(hashes_path):
    print(f"- {line.strip()}")

sweep = [l.rstrip("\n").split("\t") for l in open(sweep_path)]
if sweep:
    import statistics
    runs, cpus, rsss = {}, {}, {}
    for rep, th, secs, _, cpu, rss in sweep:
        runs.setdefault(int(rep), {})[int(th)] = float(secs)
        cpus.setdefault(int(th), []).append(float(cpu))
        rsss.setdefault(int(th), []).append(int(rss))
    print()
    print(f"Sweep: `durasim sweep scenarios/chaos.toml --seeds {env['SWEEP_SEEDS']} --threads T "
          f"--quiet --out TMP` (wall s, {len(runs)} back-to-back pairs, medians):")
    print()
    one = statistics.median(r[1] for r in runs.values())
    two = statistics.median(r[2] for r in runs.values())
    speedups = sorted(r[1] / r[2] for r in runs.values())
    print(f"- --threads 1: {one:.3f} s, --threads 2: {two:.3f} s; speedup "
          f"**{statistics.median(speedups):.2f}×** ({speedups[0]:.2f}–{speedups[-1]:.2f}) on {env['NPROC']} cores")
    c1, c2 = statistics.median(cpus[1]), statistics.median(cpus[2])
    print(f"- CPU time (user + system, medians): --threads 1: {c1:.3f} s, --threads 2: {c2:.3f} s "
          f"(2 threads ÷ 1: {c2 / c1:.2f}; near 1 means the work splits without overhead, so the "
          f"wall-clock speedup is bounded by the cores the machine gives); peak RSS "
          f"{statistics.median(rsss[1]) / 1024:.1f} / {statistics.median(rsss[2]) / 1024:.1f} MiB")
    seen = set()
    for _, th, _, verdict, _, _ in sweep:
        if th not in seen:
            seen.add(th)
            print(f"- --threads {th} verdict: {verdict}")
PY
