#!/usr/bin/env python3
"""Summarises a swarm sweep of scenarios/dedupe-window-sweep.toml: for each band of the ratio
dedupe_window_ms / relay_restart_ms (both drawn per seed and recorded in seeds.jsonl), how many
seeds kept the effect exactly-once (no no_duplicate_effect violation). Prints a markdown table.

usage: durasim sweep scenarios/dedupe-window-sweep.toml --swarm --seeds 0..1000 --no-shrink --out DIR
       benches/dedupe_window_table.py DIR/seeds.jsonl
"""
import json, sys

BANDS = [(0, 1, "< 1"), (1, 2, "1 to 2"), (2, 3, "2 to 3"), (3, float("inf"), ">= 3")]

def main():
    rows = [json.loads(line) for line in open(sys.argv[1])]
    print("| window / recovery | seeds | exactly-once | `no_duplicate_effect` violated |")
    print("|---|---:|---:|---:|")
    for lo, hi, name in BANDS:
        sel = [r for r in rows
               if lo <= r["swarm"]["dedupeWindowMs"] / r["swarm"]["relayRestartMs"] < hi]
        bad = sum(any(f["invariant"] == "no_duplicate_effect" for f in r["failures"]) for r in sel)
        print(f"| {name} | {len(sel)} | {len(sel) - bad} | {bad} |")

if __name__ == "__main__":
    main()
