#!/usr/bin/env bash
# Regenerates README.md's example outputs (every ``` block that starts with `$ durasim ...`) from
# what the current durasim prints, through the same test that checks them (tests/it/readme.rs).
# Run it after a change that alters an example's output on purpose (a trace hash, a summary
# line), then review `git diff README.md` and commit it with that change.
set -euo pipefail
cd "$(dirname "$0")/.."
DURASIM_UPDATE_README=1 cargo test -p durasim --test it -- readme::readme_examples_are_what_durasim_prints
git --no-pager diff --stat -- README.md
