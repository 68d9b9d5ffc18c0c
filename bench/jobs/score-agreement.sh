#!/usr/bin/env bash
# Issue 29's link-grammar or flat runs scored by attractors (bench/agreement.py, the test split),
# from the report each run made of itself (bench/jobs/issue29-lg-flat.tsv;
# bench/results/agreement-lg-flat-runs/SOURCE.MODEL.sSEED.test.json), and roberta, the baseline of
# the paired tests, from the spaCy report (bench/results/agreement-spacy-test.json): roberta reads
# the leaves alone, the same in every source's folder; the examples are checked to be the same.
#   bash bench/jobs/score-agreement.sh SOURCE OUT.json        (SOURCE: lg or flat)
# Does the tree source matter? One model on every source, its spaCy-tree runs the baseline:
#   bash bench/jobs/score-agreement.sh sources MODEL OUT.json
# (spaCy trees alone: agreement-spacy-test.json, scored from the checkpoints with --data-of.)
set -eu
runs=bench/results/agreement-lg-flat-runs spacy=bench/results/agreement-spacy-test.json
declare -A data=([lg]=runs/data-agr-lg [flat]=runs/data-agr-flat)
die() { echo "score-agreement.sh: error: $*" >&2; exit 2; }
args=()
if [ "${1:-}" = sources ]; then
  [ $# -eq 3 ] || die "usage: score-agreement.sh sources MODEL OUT.json"
  model=$2 out=$3 folder=runs/data-agr
  for seed in 1 2 3; do
    args+=(--results "$model@spacy:$seed=$spacy#$model:$seed")
  done
  for source in lg flat; do
    for report in "$runs/$source.$model".s[0-9].test.json; do
      [ -e "$report" ] || { echo "score-agreement.sh: note: no $source runs of $model scored yet" >&2; continue; }
      seed=$(basename "$report" .test.json); seed=${seed##*.s}
      args+=(--results "$model@$source:$seed=$report#$model:$seed")
    done
  done
  args+=(--baseline "$model@spacy")
else
  source=${1:-} out=${2:-}
  [ -n "${data[$source]:-}" ] && [ -n "$out" ] || die "usage: score-agreement.sh lg|flat OUT.json"
  folder=${data[$source]}
  for report in "$runs/$source".*.s[0-9].test.json; do
    [ -e "$report" ] || die "no $source runs scored yet"
    name=$(basename "$report" .test.json)   # SOURCE.MODEL.sSEED
    rest=${name#*.}
    args+=(--results "${rest%.s*}:${rest##*.s}=$report")
  done
  for seed in 1 2 3; do
    args+=(--results "roberta:$seed=$spacy")
  done
  args+=(--baseline roberta)
fi
exec .venv/bin/python bench/agreement.py --data "$folder" --split test "${args[@]}" --json "$out" \
  --markdown
