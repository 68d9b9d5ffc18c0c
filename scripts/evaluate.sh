#!/usr/bin/env bash
# Evaluate one trained model of the paper's experiments on the test set: average the last
# checkpoints, translate with fairseq-generate, report tokenized BLEU (the paper's metric) and
# sacreBLEU with its signature, and write $CHECKPOINTS/NAME/MODEL/test-results.json. For a
# classification task (sst5, sst2, imdb, sva): fairseq-validate's accuracy on valid and test.
#
# Usage: bash scripts/evaluate.sh NAME MODEL [--average N] [fairseq-generate/-validate args...]
# Environment: DATA, CHECKPOINTS, CONFIG_DIR as for scripts/train.sh. See configs/README.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec "${FAIRSEQ_TREE_VENV:-$root/.venv}/bin/python" "$root/configs/runner" evaluate "$@"
