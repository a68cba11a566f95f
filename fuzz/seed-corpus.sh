#!/usr/bin/env bash
# Seeds fuzz/corpus/scenario/ with the bundled scenarios (the fuzzer mutates from there).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p fuzz/corpus/scenario
cp scenarios/*.toml fuzz/corpus/scenario/
echo "fuzz/corpus/scenario: $(ls fuzz/corpus/scenario | wc -l) files"
