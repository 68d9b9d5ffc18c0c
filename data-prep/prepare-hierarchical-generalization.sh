#!/usr/bin/env bash
# McCoy, Frank & Linzen's (TACL 2020) tests of hierarchical generalization, generated here from
# their grammars with gold trees (nothing to download, no parser needed): tense reinflection and
# question formation, 100,000 training and 10,000 valid, test and generalization examples each.
#
#   bash data-prep/prepare-hierarchical-generalization.sh
#     -> $DATA/tense/, $DATA/tense-right-branching/, $DATA/question/, $DATA/question-right-branching/
#        and $DATA/tense-output-trees/ (with the targets' gold trees, for written trees),
#        $DATA/tense-lm/ (tense as one sequence an example, for fairseq's transformer_lm)
#
# (see data-prep/prepare_hierarchical_generalization.py for the layout; the generalization set
# is binarized as test1). SPACY_MODEL=NAME also writes $DATA/tense-spacy/, the same tense
# sentences parsed by that English pipeline (English pipelines are not installed by
# scripts/setup.sh; see data-prep/common.sh). SIZES="--train N --valid N --test N --gen N" and
# SEED change the defaults. About two minutes a task on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
data=${DATA:-data}
[[ $data == /* ]] || data=$repo/$data
trees=(gold right-branching)
# the grammars are the benchmark's (bench/tasks/hierarchical_grammar.py), which scores against them
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
python "$data_prep/prepare_hierarchical_generalization.py" --out "$data" --task question \
  --trees "${trees[@]}" --seed "${SEED:-1}" --workers "${WORKERS:-$(nproc)}" ${SIZES:-}
[[ -z ${SPACY_MODEL:-} ]] || trees+=(spacy)
python "$data_prep/prepare_hierarchical_generalization.py" --out "$data" --task tense \
  --trees "${trees[@]}" --output-trees --language-model ${SPACY_MODEL:+--spacy-model "$SPACY_MODEL"} --seed "${SEED:-1}" \
  --workers "${WORKERS:-$(nproc)}" ${SIZES:-}
