#!/usr/bin/env bash
# Issue 45: the contrastive set scored with every finished run of bench/jobs/contrastive-cpu.tsv (a run
# is finished when bench/lib/seeds.py wrote its JSON in JSON_DIR), against the Transformer on the
# leaves. The report keeps what it scored before from checkpoints of the same bytes, so calling it
# after each seed scores only the new runs (and a run trained on is scored again). A finished run
# whose checkpoint is gone (trained in an earlier session whose runs/ went with its machine) keeps
# the report's results for it (--keep-missing; the report lists it under kept_without_file).
#   bash bench/jobs/score-contrastive.sh [OUT_PREFIX]
# (default bench/results/contrastive/bible-sample-converged, the early-stopped runs; the runs capped
# at 2,400 updates, bench/results/contrastive/bible-sample.*, were scored by this script at commit
# ce8b147 with JSON_DIR=runs/c45/json, from the checkpoints since trained on)
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${DATA:-runs/c45}
out=${1:-bench/results/contrastive/bible-sample-converged}
jsons=${JSON_DIR:-$data/json-converged}
[[ -e $data/contrastive/items.tsv ]] || .venv/bin/python data-prep/contrastive_agreement.py \
  --output "$data/contrastive" --check-vocabulary "$data/bible-en-fr-sample"
args=()
for seed in 1 2 3; do
  for run in "bible-en-fr-contrastive tree2seq tree2seq" "bible-en-fr-contrastive-spacy tree2seq tree2seq-spacy" \
             "bible-en-fr-contrastive transformer transformer" \
             "bible-en-fr-contrastive transformer-linearized transformer-linearized"; do
    set -- $run
    [[ -e $jsons/$1.$2.s$seed.json ]] || continue
    args+=(--checkpoint "$3:$seed=$data/ckpt/seed-$seed/$1/$2/checkpoint_best.pt")
  done
done
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} .venv/bin/python -m bench.contrastive \
  --set "$data/contrastive" --recipe "$data/bible-en-fr-sample" \
  --recipe-for tree2seq-spacy="$data/bible-en-fr-sample-spacy" --baseline transformer \
  --json "$out.json" --keep-missing --scores "${SCORES:-$data/contrastive-scores-converged}" "${args[@]}"
