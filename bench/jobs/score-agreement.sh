#!/usr/bin/env bash
# Issue 29's runs of one tree source scored by attractors (bench/agreement.py, the test split):
# every model and seed whose run has finished (its JSON in runs/agr-json/), and roberta, the
# baseline of the paired tests. roberta reads the leaves alone, so its spaCy-folder runs serve
# every source (--data-of: the same examples, checked line by line).
#   bash bench/jobs/score-agreement.sh SOURCE OUT.json        (SOURCE: spacy, lg or flat)
set -eu
source=$1 out=$2
declare -A data=([spacy]=runs/data-agr [lg]=runs/data-agr-lg [flat]=runs/data-agr-flat)
[ -n "${data[$source]:-}" ] || { echo "score-agreement.sh: error: SOURCE is spacy, lg or flat" >&2; exit 2; }
runs=(runs/agr-json/"$source".*.s[0-9].json)
[ "$source" = spacy ] || runs+=(runs/agr-json/spacy.roberta.s[0-9].json)
args=()
for json in "${runs[@]}"; do
  name=$(basename "$json" .json)   # SOURCE.MODEL.sSEED
  from=${name%%.*} rest=${name#*.}
  model=${rest%.s*} seed=${rest##*.s}
  args+=(--checkpoint "$model:$seed=runs/agr/$from.$model/seed-$seed/agreement/$model/checkpoint_best.pt")
done
[ "$source" = spacy ] || args+=(--data-of roberta=runs/data-agr)
exec .venv/bin/python bench/agreement.py --data "${data[$source]}" --split test "${args[@]}" \
  --baseline roberta --json "$out"
