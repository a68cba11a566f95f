#!/usr/bin/env bash
# Runs one command against a throwaway single-node Slurm cluster, then removes the cluster.
#
#   tests/slurm/cluster.sh COMMAND [ARGS...]
#
# munged, slurmctld and slurmd are started as root without systemd, every file they use (config,
# state, spool, logs, pid files, the munge key, socket and seed) under one fresh temporary
# directory, on two free loopback ports (not Slurm's default 6817/6818, which a real cluster or a
# concurrent run may hold). COMMAND runs with SLURM_CONF exported, so sbatch, squeue, scontrol and
# sinfo talk to this cluster. On any exit (COMMAND done, an error, INT/TERM/HUP) the trap cancels
# the cluster's jobs, stops the daemons by their pids (TERM, then KILL after 5 s) and removes the
# directory; the daemons also get TERM if this script is killed outright (setpriv --pdeathsig).
#
# Exit status: COMMAND's; 77 when this cannot run here (not root, or slurm-wlm / munge /
# setpriv missing: `apt-get install slurm-wlm munge`), with the reason on stderr and nothing
# started; 3 when the cluster did not come up (its logs are printed).
# Tested with Debian bookworm's slurm-wlm 22.05 and munge 0.5.15; used by tests/it/deploy.rs.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
if [ "$(id -u)" != 0 ]; then
  echo "cluster.sh: needs root (the throwaway cluster runs slurmctld and slurmd as root)" >&2
  exit 77
fi
missing=()
for c in munged mungekey munge unmunge slurmctld slurmd sbatch squeue scancel scontrol sinfo setpriv; do
  command -v "$c" >/dev/null 2>&1 || missing+=("$c")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "cluster.sh: not installed: ${missing[*]} (apt-get install slurm-wlm munge)" >&2
  exit 77
fi

# munged refuses a socket whose directory or any parent is group/other-writable without the
# sticky bit, or not searchable: mktemp -d makes 0700, so open it to 0755.
dir=$(mktemp -d "${TMPDIR:-/tmp}/durasim-slurm.XXXXXX")
chmod 0755 "$dir"
pids=()

stop() {
  local rc=$?
  trap - EXIT INT TERM HUP
  if [ -n "${cmd:-}" ]; then
    kill -TERM "$cmd" 2>/dev/null || true
  fi
  if [ -n "${ctld:-}" ]; then
    # Jobs still queued or running (COMMAND failed midway): cancel them so that no slurmstepd
    # or job process outlives the cluster.
    local jobs
    jobs=$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -o %A 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      SLURM_CONF="$dir/slurm.conf" timeout 5 scancel $jobs 2>/dev/null || true
      for _ in $(seq 50); do
        [ -z "$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -o %A 2>/dev/null || true)" ] && break
        sleep 0.1
      done
    fi
  fi
  local p alive
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    alive=0
    for p in "${pids[@]}"; do
      if kill -0 "$p" 2>/dev/null; then alive=1; fi
    done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  cd /
  rm -rf "$dir"
  exit "$rc"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Two free ports: random in 20000..59999, not accepting connections on the loopback.
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
}
ctld_port=$(free_port)
slurmd_port=$(free_port)
while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done

mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
chmod 0755 "$dir/munge"
mungekey -c -k "$dir/munge/munge.key" -b 1024
chmod 0600 "$dir/munge/munge.key"
sock="$dir/munge/munge.socket"

cat >"$dir/slurm.conf" <<CONF
ClusterName=durasim-throwaway
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=batch_sched_delay=0
MailProg=/bin/true
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF="$dir/slurm.conf"

setpriv --pdeathsig TERM munged -F --key-file="$dir/munge/munge.key" --socket="$sock" \
  --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
  --log-file="$dir/munged.log" >/dev/null 2>&1 &
pids+=($!)

up() { # up WHAT TRIES COMMAND...: retry COMMAND every 0.1 s while the daemons live
  local what=$1 tries=$2 p
  shift 2
  for _ in $(seq "$tries"); do
    "$@" >/dev/null 2>&1 && return 0
    for p in "${pids[@]}"; do
      kill -0 "$p" 2>/dev/null || { echo "cluster.sh: a daemon exited while waiting for $what" >&2; return 1; }
    done
    sleep 0.1
  done
  echo "cluster.sh: timed out waiting for $what" >&2
  return 1
}
munge_ok() { munge -n -S "$sock" | unmunge -S "$sock"; }
node_idle() { [ "$(sinfo -h -n localhost -o %T)" = idle ]; }

fail_start() {
  for f in munged.log slurmctld.log slurmd.log; do
    [ -f "$dir/$f" ] && { echo "--- $f" >&2; tail -n 30 "$dir/$f" >&2; }
  done
  exit 3
}

up munged 100 munge_ok || fail_start
setpriv --pdeathsig TERM slurmctld -D -i -f "$SLURM_CONF" >/dev/null 2>&1 &
ctld=$!
pids+=("$ctld")
setpriv --pdeathsig TERM slurmd -D -N localhost -f "$SLURM_CONF" >/dev/null 2>&1 &
pids+=($!)
up "the node to be idle" 300 node_idle || fail_start

echo "cluster.sh: single-node Slurm cluster up in $dir (slurmctld port $ctld_port, slurmd port $slurmd_port)" >&2
# COMMAND runs in the background so that a signal reaches the trap at once (bash runs traps
# only between foreground commands); the trap then stops COMMAND too.
"$@" &
cmd=$!
pids=("$cmd" "${pids[@]}")
set +e
wait "$cmd"
rc=$?
set -e
exit "$rc"
