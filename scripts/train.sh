#!/usr/bin/env bash
# Train one model of the paper's experiments on all visible GPUs (or the CPU when there is none).
#
# Usage: bash scripts/train.sh NAME MODEL [--dry-run] [fairseq-train args...]
#   NAME:  iwslt14-en-de iwslt14-de-en iwslt13-en-fr iwslt13-fr-en wmt14-en-de (translation),
#          sst5 sst2 imdb sva (classification); any configs/NAME.yaml
#   MODEL: tree2seq transformer (wmt14-en-de also: tree2seq-big transformer-big);
#          tree_classifier roberta tree_classifier-no-hier-embed tree_classifier-no-subtree-mask
# Environment: DATA (default data: the recipes' output), CHECKPOINTS (default checkpoints),
# CONFIG_DIR (default configs), relative to the repository root when unset.
# Prints the effective batch and the exact fairseq-train command, then runs it; run it again
# to resume from checkpoint_last.pt (a run at its --max-update is left as it is). See
# configs/README.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec "${FAIRSEQ_TREE_VENV:-$root/.venv}/bin/python" "$root/configs/runner" train "$@"
