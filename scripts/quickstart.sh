#!/usr/bin/env bash
# The quickstart, on the CPU: tree2seq and fairseq's Transformer (same size, same budget) trained
# on the real parsed Bible sample shipped in data-prep/bible-sample (English trees -> French),
# each translating the 500 test verses (Acts) with beam search, and both sacreBLEU scores printed.
# About ten minutes per model on 2 CPU cores.
#
# Usage: bash scripts/quickstart.sh [WORKDIR] [bench/lib/compare.py options] [-- fairseq-train args]
#   WORKDIR  default runs/quickstart: data/ (BPE, data-bin), checkpoints/, results.json.
# Running it again continues where it stopped (finished steps are skipped).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${FAIRSEQ_TREE_VENV:-$root/.venv}
work=$root/runs/quickstart
if [[ $# -gt 0 && $1 != -- ]]; then work=$1; shift; fi
mkdir -p "$work"
work=$(cd "$work" && pwd)

echo "== data: the shipped sample -> joint BPE -> fairseq-tree-preprocess ($work/data)"
DATA=$work/data FAIRSEQ_TREE_VENV=$venv WORKERS=${WORKERS:-2} \
  bash "$root/data-prep/prepare-bible-sample.sh"

echo "== train and evaluate tree2seq, then the Transformer (configs/bible-en-fr-sample.yaml)"
PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$venv/bin/python" -m bench.lib.compare bible-en-fr-sample tree2seq transformer \
  --data "$work/data" --checkpoints "$work/checkpoints" --json "$work/results.json" "$@"
echo "translations: $work/checkpoints/bible-en-fr-sample/{tree2seq,transformer}/translations.fr"
