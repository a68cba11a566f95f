#!/usr/bin/env python3
"""Runs durasim's bench-pipeline scenario over several seeds and prints one JSON line per run in
the field names of the pipeline-bench v2 peers (docs/domain.md), so the peers' rate tables can compare it
with the SimPy and rust-floor peers.

usage: benches/peer_rates.py --jobs 10000 --seeds 1-10 [--binary target/release/durasim] > out.jsonl
"""
import argparse, json, os, subprocess, sys, tempfile

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--binary", default="target/release/durasim")
    ap.add_argument("--scenario", default="scenarios/bench-pipeline.toml")
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.seeds.split("-"))
    for seed in range(lo, hi + 1):
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([a.binary, "run", a.scenario, "--jobs", str(a.jobs), "--seed", str(seed),
                            "--no-rows", "--quiet", "--out", os.path.join(out, "r")], check=True,
                           stdout=subprocess.DEVNULL)
            s = json.load(open(os.path.join(out, "r", "summary.json")))
        q = s["metrics"]["queueWaitMs"]
        print(json.dumps({
            "impl": "durasim", "seed": seed, "jobs": a.jobs,
            "acked": s["jobs"]["acked"], "dead_lettered": s["jobs"]["deadLettered"],
            "cancelled": s["jobs"]["cancelled"], "attempts": s["attempts"],
            "extract_calls": s["effects"]["extractCalls"],
            "results_committed": s["effects"]["resultsCommitted"],
            "deduped_commits": s["effects"]["dedupedCommits"],
            "outbox_events": s["effects"]["outboxEvents"], "published": s["effects"]["published"],
            "republished": s["effects"]["republished"],
            "consumer_applied": s["effects"]["consumerApplied"],
            "consumer_duplicates": s["effects"]["consumerDuplicates"],
            "stale_ack_rejections": s["leases"]["ackRejections"],
            "worker_crashes": s["crashes"]["worker"], "lease_expiries": s["leases"]["expired"],
            "heartbeats": s["leases"]["heartbeats"], "relay_crashes": s["crashes"]["relay"],
            "virtual_time_ms": s["virtualTimeMs"], "events": s["events"], "wall_s": s["wallS"],
            "queue_wait_ms_p50": q["p50"], "queue_wait_ms_p95": q["p95"], "queue_wait_ms_p99": q["p99"],
            "max_queue_depth": s["metrics"]["queueDepth"]["max"],
            "invariants_ok": all(i["holds"] for i in s["invariants"]),
        }))
        sys.stdout.flush()

if __name__ == "__main__":
    main()
