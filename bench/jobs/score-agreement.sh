#!/usr/bin/env bash
# Issue 29's link-grammar or flat runs scored by attractors (bench/agreement.py, the test split),
# from the report each run made of itself (bench/jobs/issue29-lg-flat.tsv;
# bench/results/agreement-lg-flat-runs/SOURCE.MODEL.sSEED.test.json), and roberta, the baseline of
# the paired tests, from the spaCy report (bench/results/agreement-spacy-test.json): roberta reads
# the leaves alone, the same in every source's folder; the examples are checked to be the same.
#   bash bench/jobs/score-agreement.sh SOURCE OUT.json        (SOURCE: lg or flat)
# (spaCy trees: agreement-spacy-test.json, scored from the checkpoints with --data-of.)
set -eu
source=$1 out=$2
declare -A data=([lg]=runs/data-agr-lg [flat]=runs/data-agr-flat)
[ -n "${data[$source]:-}" ] || { echo "score-agreement.sh: error: SOURCE is lg or flat" >&2; exit 2; }
args=()
for report in bench/results/agreement-lg-flat-runs/"$source".*.s[0-9].test.json; do
  [ -e "$report" ] || { echo "score-agreement.sh: error: no $source runs scored yet" >&2; exit 1; }
  name=$(basename "$report" .test.json)   # SOURCE.MODEL.sSEED
  rest=${name#*.}
  args+=(--results "${rest%.s*}:${rest##*.s}=$report")
done
for seed in 1 2 3; do
  args+=(--results "roberta:$seed=bench/results/agreement-spacy-test.json")
done
exec .venv/bin/python bench/agreement.py --data "${data[$source]}" --split test "${args[@]}" \
  --baseline roberta --json "$out"
