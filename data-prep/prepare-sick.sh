#!/usr/bin/env bash
# SICK (Marelli et al., 2014; SemEval-2014 Task 1) as Ahmed et al. (2019) and Tai et al. (2015)
# use it: sentence pairs, entailment (SICK-E: 3 classes) and relatedness (SICK-R: a score 1-5).
#
#   bash data-prep/prepare-sick.sh                 -> $DATA/sick/  (DATA=data)
#
# Data: SemEval's sick_train.zip, sick_trial.zip, sick_test_annotated.zip (the URLs of Tai et
# al.'s fetch script), holding SICK_train.txt (4,500 pairs), SICK_trial.txt (500: our valid) and
# SICK_test_annotated.txt (4,927): TSV with the header pair_ID, sentence_A, sentence_B,
# relatedness_score, entailment_judgment.
#   data-bin/sick-e/  input0/ (sentence A), input1/ (B), label/: 0 NEUTRAL, 1 ENTAILMENT,
#                     2 CONTRADICTION
#   data-bin/sick-r/  input0/, input1/, label/{split}.label: the score as Tai et al.'s sparse
#                     distribution over 1..5 (--regression-target --num-classes 5, criterion
#                     score_distribution: KL loss, reported as MSE and Pearson's r)
# Steps: Moses punctuation normalisation and tokenisation (case kept), each sentence parsed
# (default PARSER link-grammar: offline; a sentence it cannot parse becomes a counted flat tree),
# words binarized (no BPE by default), input1/ with input0/'s dictionary.
#
# Environment:
#   SICK_URL   the folder URL of the three archives (default
#              http://alt.qcri.org/semeval2014/task1/data/uploads)
#   SICK_DIR   a folder holding the three archives or the three extracted .txt files: used
#              instead of downloading
#   and DATA, PARSER, PARSER_ARGS (default "--max-null-count 2"), BPE_MERGES, WORKERS (see
#   data-prep/common.sh).
set -euo pipefail
export PARSER=${PARSER:-link-grammar} PARSER_ARGS=${PARSER_ARGS---max-null-count 2}
source "$(dirname "$0")/common.sh"
url=${SICK_URL-http://alt.qcri.org/semeval2014/task1/data/uploads}
prepare_classification --dataset sick --name sick --corpus sick \
  --local-dir "$(absolute "${SICK_DIR:-}")" \
  --archive "sick_train.zip=${url:+$url/sick_train.zip}" \
  --archive "sick_trial.zip=${url:+$url/sick_trial.zip}" \
  --archive "sick_test_annotated.zip=${url:+$url/sick_test_annotated.zip}"
