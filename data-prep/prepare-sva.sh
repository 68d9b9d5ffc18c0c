#!/usr/bin/env bash
# Subject-verb agreement (Linzen et al., 2016) as the paper's Table 2 uses it: the words of a
# sentence before its verb, classified as singular (0, VBZ) or plural (1, VBP).
#
#   bash data-prep/prepare-sva.sh                  -> $DATA/sva/  (DATA=data)
#
# Data: agr_50_mostcommon_10K.tsv.gz of Linzen et al. (github.com/TalLinzen/rnn_agreement), one
# dependency of a Wikipedia sentence per row: `sentence` (tokens; words outside the 10k most
# common replaced by their POS tag, what Linzen et al.'s models read), `orig_sentence`,
# `verb_index`, `verb_pos`. As their code (PredictVerbNumber), sentences of more than 50 tokens
# are left out, the input is the tokens before the verb and the label its POS.
# Splits: the paper gives 142,000 / ~15,700 / ~1,000,000. Linzen et al. trained on 10% of the
# dependencies (Keras holding 10% of that out for validation) and tested on the other 90%, with a
# Python 2 shuffle that Python 3 cannot repeat; here the usable dependencies are shuffled once
# (seed SVA_SEED, 1) and the first 142,000 are train, the next 15,700 valid, the next 1,000,000
# test (SVA_SIZES); the rest is not used (recipe.json counts everything).
# Steps: the prefix of `orig_sentence` is parsed (a parser reads real words better than POS
# tags), then its leaves are replaced by the same positions of `sentence` (so the model's
# vocabulary is Linzen et al.'s); no BPE; binarize.
#
# Environment:
#   SVA_URL    the file's URL (default: the Dropbox link of TalLinzen/rnn_agreement's README)
#   SVA_DIR    a folder holding agr_50_mostcommon_10K.tsv.gz (or unzipped, .tsv): used instead of
#              downloading
#   SVA_SIZES  TRAIN:VALID:TEST (default 142000:15700:1000000); SVA_SEED (default 1)
#   and DATA, PARSER (stanza), PARSER_ARGS, WORKERS (see data-prep/common.sh).
set -euo pipefail
source "$(dirname "$0")/common.sh"
prepare_classification --dataset sva --name sva --corpus sva \
  --local-dir "$(absolute "${SVA_DIR:-}")" \
  --archive "agr_50_mostcommon_10K.tsv.gz=${SVA_URL-https://www.dropbox.com/s/5axdu3q9jkxzjy8/agr_50_mostcommon_10K.tsv.gz?dl=1}" \
  --sizes "${SVA_SIZES:-142000:15700:1000000}" --seed "${SVA_SEED:-1}"
