#!/usr/bin/env bash
# Seeds fuzz/corpus/scenario/ with the bundled scenarios and fuzz/corpus/history/ with the
# histories (`--trace`) of a few of them and the hand-written external one (the fuzzer mutates
# from there).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p fuzz/corpus/scenario fuzz/corpus/history
cp scenarios/*.toml fuzz/corpus/scenario/
echo "fuzz/corpus/scenario: $(ls fuzz/corpus/scenario | wc -l) files"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in incident-crash-before-ack zombie-worker paused-holder dlq-reprocess payload-conflict \
  deadline-cancel relay-republish failure-1-retry-storm; do
  cargo run --release -q -- run "scenarios/$s.toml" --trace --quiet --no-rows --out "$tmp/$s" >/dev/null || true
  cp "$tmp/$s/trace.jsonl" "fuzz/corpus/history/$s.jsonl"
done
cp tests/data/external-history.jsonl fuzz/corpus/history/
echo "fuzz/corpus/history: $(ls fuzz/corpus/history | wc -l) files"
