#!/usr/bin/env bash
# The Microsoft Research Paraphrase Corpus (Dolan et al., 2004) as Ahmed et al. (2019) use it:
# sentence pairs, paraphrase or not.
#
#   bash data-prep/prepare-msrp.sh                 -> $DATA/msrp/  (DATA=data)
#
# Data: msr_paraphrase_train.txt (4,076 pairs) and msr_paraphrase_test.txt (1,725), TSV with the
# header Quality, #1 ID, #2 ID, #1 String, #2 String (Quality 1: a paraphrase); default URLs
# SentEval's copies (Microsoft ships them inside an .msi installer).
# Splits: test = the test file; valid = MSRP_VALID_SIZE (400) training pairs drawn with seed
# MSRP_SEED (1); train = the rest (the paper does not say how it validated).
#   data-bin/msrp/  input0/ (sentence 1), input1/ (sentence 2), label/: 0 not a paraphrase,
#                   1 paraphrase
# Steps: Moses punctuation normalisation and tokenisation (case kept), each sentence parsed
# (default PARSER link-grammar: offline; a sentence it cannot parse becomes a counted flat tree),
# words binarized (no BPE by default), input1/ with input0/'s dictionary.
#
# Environment:
#   MSRP_URL   the folder URL of the two files (default
#              https://dl.fbaipublicfiles.com/senteval/senteval_data)
#   MSRP_DIR   a folder holding the two files: used instead of downloading
#   MSRP_VALID_SIZE, MSRP_SEED  see above
#   and DATA, PARSER, PARSER_ARGS (default "--max-null-count 2"), BPE_MERGES, WORKERS (see
#   data-prep/common.sh).
set -euo pipefail
export PARSER=${PARSER:-link-grammar} PARSER_ARGS=${PARSER_ARGS---max-null-count 2}
source "$(dirname "$0")/common.sh"
url=${MSRP_URL-https://dl.fbaipublicfiles.com/senteval/senteval_data}
prepare_classification --dataset msrp --name msrp --corpus msrp \
  --local-dir "$(absolute "${MSRP_DIR:-}")" \
  --archive "msr_paraphrase_train.txt=${url:+$url/msr_paraphrase_train.txt}" \
  --archive "msr_paraphrase_test.txt=${url:+$url/msr_paraphrase_test.txt}" \
  --valid-size "${MSRP_VALID_SIZE:-400}" --seed "${MSRP_SEED:-1}"
